import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { changeLabels } from '../labels/change-labels.js';
import { changesAnything, parseLabelChanges } from '../labels/changes.js';
import { formatAgentLabels } from '../labels/show-labels.js';
import { printJson } from '../output/json.js';
import { formatFields } from '../output/table.js';
import { ago } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { findAgent } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type Agent = Schema<'Agent'>;

/** `drover agent show|label|rename|revoke`: one agent of the organization (a session). */
export function configureAgentCommand(program: Command, rt: Runtime): void {
  const group = program.command('agent').description('one agent of the organization (a session)');

  group
    .command('label')
    .description(
      "show an agent's labels, or change the operators' labels of it: key=value sets one, key- removes one " +
        '(docs/fleets.md)',
    )
    .argument('<agent>', 'the agent, by id or name')
    .argument('[changes...]', 'key=value to set a label, key- to remove one')
    .option('--clear', "remove every operator label first (the agent's own stay)")
    .option('--json', "print the API's answer (the agent) as JSON")
    .action(async (value: string, items: string[], flags: { clear?: boolean; json?: boolean }, command: Command) => {
      const changes = parseLabelChanges(items, flags.clear === true);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      let agent = await findAgent(caller, value);
      if (changesAnything(changes)) {
        for (const key of changes.remove) {
          if (Object.hasOwn(agent.operatorLabels, key)) continue;
          const reported = Object.hasOwn(agent.reportedLabels, key);
          rt.err(
            reported
              ? `drover: the agent reports ${key} itself: an operator's label can override it, not remove it\n`
              : `drover: the agent has no label ${key} to remove\n`,
          );
        }
        agent = await changeLabels(caller, agent, changes);
      }
      if (flags.json) return printJson(rt, agent);
      rt.out(formatAgentLabels(agent));
    });

  group
    .command('show')
    .description('one agent: its status, machine, version, labels and the workflows it reported')
    .argument('<agent>', 'the agent, by id or name')
    .option('--json', "print the API's answer (the agent) as JSON")
    .action(async (value: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const agent = await findAgent(caller, value);
      if (flags.json) return printJson(rt, agent);
      const workflows = await caller.api.get<Schema<'Workflow'>[]>(`/orgs/${await caller.orgId()}/workflows`, {
        agentId: agent.id,
      });
      rt.out(
        formatFields([
          ['ID', agent.id],
          ['Name', agent.name],
          ['Status', agent.status],
          ['Last seen', agent.lastSeenAt ? `${agent.lastSeenAt} (${ago(agent.lastSeenAt)})` : 'never'],
          ['Enrolled', agent.enrolledAt],
          ['Hostname', agent.hostname],
          ['OS', agent.os],
          ['Version', agent.agentVersion],
          ['Workflows', workflows.map((w) => `${w.name} (v${w.version})`).join(', ') || 'none reported'],
        ]),
      );
      rt.out(`\n${formatAgentLabels(agent)}`);
    });

  group
    .command('rename')
    .description('give an agent another name (its hostname stays what the machine reports)')
    .argument('<agent>', 'the agent, by id or name')
    .argument('<new-name>', 'its new name')
    .option('--json', "print the API's answer (the agent) as JSON")
    .action(async (value: string, name: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const agent = await findAgent(caller, value);
      const renamed = await caller.api.patch<Agent>(`/orgs/${await caller.orgId()}/agents/${agent.id}`, {
        name,
      } satisfies RequestBody<'updateAgent'>);
      if (flags.json) return printJson(rt, renamed);
      rt.out(`Renamed the agent ${agent.name} to ${renamed.name} (${renamed.id})\n`);
    });

  group
    .command('revoke')
    .description(
      'revoke an agent for good: its signatures are refused, its stream closed, and its jobs not ended fail (owners, operators)',
    )
    .argument('<agent>', 'the agent, by id or name')
    .option('--json', "print the API's answer (the revoked agent) as JSON")
    .action(async (value: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const agent = await findAgent(caller, value);
      const revoked = await caller.api.delete<Agent>(`/orgs/${await caller.orgId()}/agents/${agent.id}`);
      if (flags.json) return printJson(rt, revoked);
      rt.out(
        `Revoked the agent ${revoked.name} (${revoked.id}): the machine must enroll again, with a new enrollment token, to run jobs\n`,
      );
    });
}
