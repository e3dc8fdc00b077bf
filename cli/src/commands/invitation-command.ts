import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import type { Org } from '../session/org.js';
import { loadSettings } from '../settings.js';
import type { Invitation } from './member-command.js';

/** `drover invitation list|accept|decline`: your invitations to organizations (a session). */
export function configureInvitationCommand(program: Command, rt: Runtime): void {
  const group = program
    .command('invitation')
    .description('your invitations to organizations: accept one to become a member (a session)');

  group
    .command('list')
    .description('your pending invitations, newest first')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const invitations = await caller.api.get<Invitation[]>('/invitations');
      if (flags.json) return printJson(rt, invitations);
      if (invitations.length === 0) return rt.out('No pending invitations.\n');
      const rows = invitations.map((i) => [i.id, i.orgName, i.role, i.invitedBy?.email, shortTime(i.expiresAt)]);
      rt.out(formatTable(['ID', 'ORGANIZATION', 'ROLE', 'INVITED BY', 'EXPIRES'], rows));
    });

  for (const [action, description] of [
    ['accept', 'accept an invitation: you are a member of its organization from now on'],
    ['decline', 'decline an invitation: it can no longer be accepted'],
  ] as const) {
    group
      .command(action)
      .description(description)
      .argument('<invitation>', "its id, or its organization's name")
      .option('--json', "print the API's answer as JSON")
      .action(async (value: string, flags: { json?: boolean }, command: Command) => {
        const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
        const invitations = await caller.api.get<Invitation[]>('/invitations');
        const matches = invitations.filter((i) => i.id === value.trim().toLowerCase() || i.orgName === value.trim());
        if (matches.length === 0) throw new CliError(`no pending invitation \`${value}\` of yours`);
        if (matches.length > 1) {
          throw new CliError(
            `${matches.length} invitations are to an organization named \`${value}\`; name one by its id`,
          );
        }
        const path = `/invitations/${matches[0]!.id}/${action}`;
        if (action === 'accept') {
          const org = await caller.api.post<Org>(path);
          if (flags.json) return printJson(rt, org);
          return rt.out(`Joined ${org.name} as ${org.role} (${org.id})\n`);
        }
        const declined = await caller.api.post<Invitation>(path);
        if (flags.json) return printJson(rt, declined);
        rt.out(`Declined the invitation to ${declined.orgName}\n`);
      });
  }
}
