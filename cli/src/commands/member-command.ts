import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { promptSecret } from '../session/prompt.js';
import { loadSettings } from '../settings.js';

interface Member {
  userId: string;
  email: string;
  role: string;
  joinedAt: string;
}

interface AddFlags {
  email: string;
  role: string;
  newAccount?: boolean;
  json?: boolean;
}

/** `drover member add|remove`: who belongs to the organization (owners only). */
export function configureMemberCommand(program: Command, rt: Runtime): void {
  const group = program.command('member').description("the organization's members (owners only; a session)");

  group
    .command('add')
    .description('add someone who has an account, or create one with --new-account')
    .requiredOption('--email <email>', 'their email')
    .option('--role <role>', 'owner or member', 'member')
    .option('--new-account', 'create the account: its first password is asked (or read from DROVER_MEMBER_PASSWORD)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: AddFlags, command: Command) => {
      if (flags.role !== 'owner' && flags.role !== 'member') {
        throw new CliError(`--role: expected owner or member, got \`${flags.role}\``);
      }
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const password = flags.newAccount
        ? (rt.env.DROVER_MEMBER_PASSWORD ??
          (await promptSecret(rt, `Password for ${flags.email}: `, 'set DROVER_MEMBER_PASSWORD')))
        : undefined;
      const member = await caller.api.post<Member>(`/orgs/${await caller.orgId()}/members`, {
        email: flags.email,
        role: flags.role,
        ...(password === undefined ? {} : { password }),
      });
      if (flags.json) return printJson(rt, member);
      rt.out(`Added ${member.email} as ${member.role} (${member.userId})\n`);
    });

  group
    .command('remove')
    .description('remove a member; their API tokens stop working')
    .argument('<member>', 'their email or user id')
    .option('--json', "print the API's answer as JSON")
    .action(async (value: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = `/orgs/${await caller.orgId()}/members`;
      const wanted = value.trim().toLowerCase();
      const members = await caller.api.get<Member[]>(base);
      const member = members.find((m) => m.userId === wanted || m.email.toLowerCase() === wanted);
      if (!member) throw new CliError(`no member \`${value}\` in the organization`);
      const removed = await caller.api.delete<Member>(`${base}/${member.userId}`);
      if (flags.json) return printJson(rt, removed);
      rt.out(`Removed ${removed.email} from the organization\n`);
    });
}
