import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { changeInTurns, inTurns } from '../session/in-turns.js';
import { agentId, findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';
import { bindingsTable, channelName } from './app-devices-command.js';

type Binding = Schema<'DeviceBinding'>;

/** The most agents one bind names (the coordinator's bound of `agentIds`). */
const MAX_BIND = 1000;
/** The most agents one unbind, channel change or reconcile names: a page of `drover app devices`. */
const MAX_EACH = 500;

/**
 * `drover app bind|unbind|channel|reconcile <app> ...`: an application's devices by hand
 * (docs/ota.md, "Device bindings"), beside its device group: bind agents on a channel, move them
 * to another, remove them, or retry an update that failed or was cancelled. Agents are named by
 * name or id; every name is looked up, and every device found, before anything is changed.
 */
export function configureAppBindCommands(app: Command, rt: Runtime): void {
  app
    .command('bind')
    .description(
      "bind agents to an application by hand, on its default channel or --channel: each is given that channel's release",
    )
    .argument('<app>', 'the application, by slug or id')
    .argument('<agents...>', `the agents, by name or id (up to ${MAX_BIND})`)
    .option('--channel <channel>', "the channel they follow (default: the application's default channel)")
    .option('--json', "print the API's answer (the new devices) as JSON")
    .action(async (value: string, names: string[], flags: { channel?: string; json?: boolean }, command: Command) => {
      const channel = flags.channel === undefined ? undefined : channelName('--channel', flags.channel);
      checkAgentArguments(names, MAX_BIND);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const found = await findApp(caller, value);
      const agentIds = await agentIdsOf(caller, names);
      const body: RequestBody<'bindDevice'> = { agentIds, ...(channel === undefined ? {} : { channel }) };
      const bound = await caller.api.post<Binding[]>(`/orgs/${await caller.orgId()}/apps/${found.id}/devices`, body);
      if (flags.json) return printJson(rt, bound);
      rt.out(await bindingsTable(caller, bound));
      rt.err(`Bound ${count(bound.length)} to ${found.slug} on ${bound[0]!.channel}\n`);
    });

  app
    .command('unbind')
    .description(
      'remove agents from an application: a pending update job of theirs is cancelled (one its device group holds stays)',
    )
    .argument('<app>', 'the application, by slug or id')
    .argument('<agents...>', `the agents, by name or id (up to ${MAX_EACH})`)
    .action(async (value: string, names: string[], _flags: object, command: Command) => {
      checkAgentArguments(names, MAX_EACH);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const { slug, path, devices } = await devicesOf(caller, value, names);
      await changeInTurns(rt, devices, named, `removed from ${slug}`, (d) => caller.api.delete(`${path}/${d.id}`));
      rt.err(`Removed ${count(devices.length)} from ${slug}\n`);
    });

  app
    .command('channel')
    .description("move devices of an application to another channel: each is given that channel's release")
    .argument('<app>', 'the application, by slug or id')
    .argument('<channel>', 'the channel they follow from now on')
    .argument('<agents...>', `the agents, by name or id (up to ${MAX_EACH})`)
    .option('--json', "print the API's answers (the devices) as JSON")
    .action(async (value: string, to: string, names: string[], flags: { json?: boolean }, command: Command) => {
      const channel = channelName('<channel>', to);
      checkAgentArguments(names, MAX_EACH);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const { slug, path, devices } = await devicesOf(caller, value, names);
      const body: RequestBody<'updateDevice'> = { channel };
      const moved = await changeInTurns(rt, devices, named, `moved to ${channel} on ${slug}`, (d) =>
        caller.api.patch<Binding>(`${path}/${d.id}`, body),
      );
      if (flags.json) return printJson(rt, moved);
      rt.out(await bindingsTable(caller, moved));
      rt.err(`Moved ${count(moved.length)} of ${slug} to ${channel}\n`);
    });

  app
    .command('reconcile')
    .description(
      "retry devices' updates: forget their failures, a postponement and a cancelled job, and evaluate them again",
    )
    .argument('<app>', 'the application, by slug or id')
    .argument('<agents...>', `the agents, by name or id (up to ${MAX_EACH})`)
    .option('--json', "print the API's answers (the devices) as JSON")
    .action(async (value: string, names: string[], flags: { json?: boolean }, command: Command) => {
      checkAgentArguments(names, MAX_EACH);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const { slug, path, devices } = await devicesOf(caller, value, names);
      const reconciled = await changeInTurns(rt, devices, named, `reconciled on ${slug}`, (d) =>
        caller.api.post<Binding>(`${path}/${d.id}/reconcile`, {}),
      );
      if (flags.json) return printJson(rt, reconciled);
      rt.out(await bindingsTable(caller, reconciled));
      rt.err(`Reconciled ${count(reconciled.length)} of ${slug}\n`);
    });
}

const count = (n: number) => `${n} ${n === 1 ? 'device' : 'devices'}`;

/** The agents named: none empty, at most `max` (before any call). */
function checkAgentArguments(names: readonly string[], max: number): void {
  if (names.length > max) throw new CliError(`at most ${max} agents at once, got ${names.length}`);
  if (names.some((name) => name.trim() === '')) throw new CliError('expected an agent name or id, got nothing');
}

/** The ids of the agents named, in their order; an agent named twice (by name and by id, say) is an error. */
async function agentIdsOf(caller: SessionCaller, names: readonly string[]): Promise<string[]> {
  const ids = (await inTurns(names, (name) => agentId(caller, name))).map((id) => id.toLowerCase());
  const first = new Map<string, string>();
  ids.forEach((id, i) => {
    const earlier = first.get(id);
    if (earlier !== undefined) {
      throw new CliError(
        earlier === names[i] ? `the agent ${earlier} is given twice` : `${earlier} and ${names[i]} are the same agent`,
      );
    }
    first.set(id, names[i]!);
  });
  return ids;
}

/** A device named by its agent, with the name it was given by. */
type NamedDevice = Binding & { named: string };
const named = (device: NamedDevice) => device.named;

/** The application's devices of the agents named, each found before anything changes; an agent not bound is an error. */
async function devicesOf(
  caller: SessionCaller,
  value: string,
  names: readonly string[],
): Promise<{ slug: string; path: string; devices: NamedDevice[] }> {
  const found = await findApp(caller, value);
  const agentIds = await agentIdsOf(caller, names);
  const path = `/orgs/${await caller.orgId()}/apps/${found.id}/devices`;
  const byAgent = new Map<string, Binding>();
  // Up to 200 agents a read: the coordinator's bound of `agentId`.
  for (let i = 0; i < agentIds.length; i += 200) {
    const page = await caller.api.get<Binding[]>(path, { agentId: agentIds.slice(i, i + 200), limit: 500 });
    for (const device of page) byAgent.set(device.agentId.toLowerCase(), device);
  }
  const unbound = names.filter((_, i) => !byAgent.has(agentIds[i]!));
  if (unbound.length > 0) {
    throw new CliError(
      `${unbound.length === 1 ? `${unbound[0]} is` : `${unbound.join(', ')} are`} not bound to ${found.slug} ` +
        `(\`drover app devices ${found.slug}\` lists its devices); nothing was changed`,
    );
  }
  return { slug: found.slug, path, devices: agentIds.map((id, i) => ({ ...byAgent.get(id)!, named: names[i]! })) };
}
