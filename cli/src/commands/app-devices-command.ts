import { DEVICE_STATES, nearestName } from '@drover/shared';
import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { agentNamerFor } from '../agent-names.js';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { jsonLine, printJson } from '../output/json.js';
import { sayNextPage, shellWord } from '../output/next-page.js';
import { countLine, readEveryPage, totalOf } from '../output/pages.js';
import { formatTable } from '../output/table.js';
import { ago, shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { agentId, findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type Binding = Schema<'DeviceBinding'>;
type ReleaseRef = NonNullable<Binding['current']>;

/** The states a device reports (docs/ota.md, "Device `state` values"), and `none`: no report yet. */
const STATES = [...DEVICE_STATES, 'none'] as const;
type StateFilter = (typeof STATES)[number];

/** The coordinator's page of devices: this command's default, and its most. */
const PAGE = { default: 100, max: 500 };
/** The most agents one read narrows the list to (`agentId`, the coordinator's bound). */
const MAX_AGENTS = 200;
/** A channel's name, as the coordinator takes it (docs/ota.md, "Channels"). */
const CHANNEL = /^[a-z0-9][a-z0-9._-]{0,62}$/;
/** The longest text `--name` may hold (the coordinator's bound of `q`). */
const MAX_NAME = 255;

interface DevicesFlags {
  channel?: string;
  state?: string;
  name?: string;
  agent: string[];
  limit: string;
  cursor?: string;
  all?: boolean;
  json?: boolean;
}

/**
 * `drover app devices <app>`: the devices bound to an application, each with the release it runs
 * and the one it should run, the state it reported and its update job: after a rollout pauses,
 * which devices failed and why (`--state failed`). A page at a time (`GET .../devices?limit=`),
 * narrowed by the coordinator, with how many match; `--all` reads every page, as `drover audit`
 * does: with `--json`, one device a line as the pages come.
 */
export function configureAppDevicesCommand(app: Command, rt: Runtime): void {
  app
    .command('devices')
    .description(
      'the devices bound to an application: the release each runs and should run, its state, update job and error',
    )
    .argument('<app>', "the application's slug or id")
    .option('--channel <channel>', 'only the devices on this channel')
    .option('--state <state>', `only the devices in this state: ${STATES.join(', ')} (none: no report yet)`)
    .option('--name <text>', "only the devices whose agent's name or hostname holds this text, in any case")
    .option(
      '--agent <agent>',
      `only the devices of this agent, by name or id (repeatable, up to ${MAX_AGENTS})`,
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--limit <n>', `how many a page (1 to ${PAGE.max})`, String(PAGE.default))
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--all', 'every page, not just the first (with --json: one device a line)')
    .option('--json', "print the API's answer (the bindings) as JSON (with --all: one device a line)")
    .action(async (name: string, flags: DevicesFlags, command: Command) => {
      const limit = integerFlag('--limit', flags.limit, 1, PAGE.max);
      const state = flags.state === undefined ? undefined : stateFilter(flags.state);
      const channel = flags.channel === undefined ? undefined : channelName('--channel', flags.channel);
      const text = flags.name === undefined ? undefined : nameFilter(flags.name);
      if (flags.cursor === '') throw new CliError('--cursor: expected the cursor a previous page printed, got nothing');
      if (flags.agent.length > MAX_AGENTS) {
        throw new CliError(`--agent: at most ${MAX_AGENTS} agents at once, got ${flags.agent.length}`);
      }
      for (const agent of flags.agent) {
        if (agent.trim() === '') throw new CliError('--agent: expected an agent name or id, got nothing');
      }
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const found = await findApp(caller, name);
      const agentIds =
        flags.agent.length === 0
          ? undefined
          : [...new Set(await Promise.all(flags.agent.map((agent) => agentId(caller, agent))))];
      const path = `/orgs/${await caller.orgId()}/apps/${found.id}/devices`;
      const query = { channel, state, q: text, agentId: agentIds, limit };
      const page = (cursor: string | undefined) =>
        caller.api.call<Binding[]>('GET', path, { query: { ...query, cursor } });
      const narrowedBy = { channel, name: text, agent: agentIds };
      const narrowing = { state, others: Object.values(narrowedBy).some((value) => value !== undefined) };

      if (!flags.all) {
        const answer = await page(flags.cursor);
        const total = totalOf(answer.headers, answer.body.length);
        if (flags.json) printJson(rt, answer.body);
        else rt.out(await devicesTable(caller, found.slug, answer.body, total, narrowing));
        if (total > 0) rt.err(`${countLine(answer.body.length, total, 'device', 'devices')}\n`);
        sayNextPage(rt, answer.headers, 'devices', `drover app devices ${shellWord(name)}`, {
          channel,
          state,
          name: text,
          agent: flags.agent,
          limit: limit === PAGE.default ? undefined : limit,
        });
        return;
      }
      const all: Binding[] = [];
      let total = 0;
      await readEveryPage(page, flags.cursor, (devices, headers) => {
        total = totalOf(headers, total);
        if (flags.json) for (const device of devices) rt.out(jsonLine(device));
        else all.push(...devices);
      });
      if (flags.json) return;
      rt.out(await devicesTable(caller, found.slug, all, total, narrowing));
      if (all.length > 0) rt.err(`${countLine(all.length, all.length, 'device', 'devices')}\n`);
    });
}

function stateFilter(value: string): StateFilter {
  if ((STATES as readonly string[]).includes(value)) return value as StateFilter;
  const near = nearestName(value, STATES);
  throw new CliError(
    `--state: expected one of ${STATES.join(', ')}, got \`${value}\`${near ? ` (did you mean ${near}?)` : ''}`,
  );
}

/** A channel's name from the command line (`what`: the flag or argument), checked as the coordinator checks it. */
export function channelName(what: string, value: string): string {
  if (CHANNEL.test(value)) return value;
  throw new CliError(
    `${what}: expected a channel name (1 to 63 lowercase letters, digits, ., _ and -, such as stable), got \`${value}\``,
  );
}

function nameFilter(value: string): string {
  if (value === '') throw new CliError('--name: expected the text to look for, got nothing');
  if (value.length > MAX_NAME) throw new CliError(`--name: at most ${MAX_NAME} characters, got ${value.length}`);
  return value;
}

/** What narrows the list: `--state`, and whether any other filter does. */
interface Narrowing {
  state: StateFilter | undefined;
  others: boolean;
}

/** The devices as a table; when there are none, why: the application has none, or none matches. */
async function devicesTable(
  caller: SessionCaller,
  slug: string,
  devices: Binding[],
  total: number,
  narrowing: Narrowing,
): Promise<string> {
  if (devices.length === 0) {
    if (total > 0) return `No more devices of ${slug} after that cursor.\n`;
    if (narrowing.others) return `No device of ${slug} matches.\n`;
    if (narrowing.state !== undefined) return `No device of ${slug} is in the state ${narrowing.state}.\n`;
    return (
      `${slug} has no devices: bind agents with \`drover app bind ${slug} <agent>...\`, or by their labels with ` +
      `\`drover app device-group ${slug} --selector <selector>\`, or on its page in the dashboard\n`
    );
  }
  return bindingsTable(caller, devices);
}

/** Devices (at least one) as a table: each one's agent, channel, releases, state, update job and error. */
export async function bindingsTable(caller: SessionCaller, devices: readonly Binding[]): Promise<string> {
  const agentName = await agentNamerFor(
    caller,
    devices.map((b) => b.agentId),
  );
  const rows = devices.map((b) => [
    agentName(b.agentId),
    b.channel,
    b.origin,
    release(b.current, 'unknown'),
    `${release(b.desired, 'none published')}${b.desired !== null && b.forced ? ', forced' : ''}`,
    b.state ?? 'no report yet',
    b.lastReportAt === null ? 'never' : ago(b.lastReportAt),
    updateJob(b),
    b.error,
  ]);
  return formatTable(
    ['AGENT', 'CHANNEL', 'ORIGIN', 'INSTALLED', 'DESIRED', 'STATE', 'REPORTED', 'UPDATE JOB', 'ERROR'],
    rows,
  );
}

/** `1.4.0 (#7)`; `none` when there is no release to name. */
function release(ref: ReleaseRef | null, none: string): string {
  return ref === null ? none : `${ref.version || '(no version)'} (#${ref.sequence})`;
}

/** The binding's update job: running, cancelled (held until a retry), or waiting for the maintenance window. */
function updateJob(b: Binding): string | null {
  if (b.activeJobId !== null) return `${b.activeJobId} in progress`;
  if (b.cancelledJobId !== null) return `${b.cancelledJobId} cancelled (held until a retry)`;
  if (b.waitingForWindow)
    return `waits for the window${b.nextWindowAt === null ? '' : ` (${shortTime(b.nextWindowAt)})`}`;
  return null;
}
