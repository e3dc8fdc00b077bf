import type { Schema } from '@drover/shared/api';
import { isRole, ROLES, roleWithArticle } from '@drover/shared/roles';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { promptSecret } from '../session/prompt.js';
import { loadSettings } from '../settings.js';

type Member = Schema<'Member'>;

/** An invitation to an organization, as the API answers it. */
export type Invitation = Schema<'Invitation'>;

interface AddFlags {
  email: string;
  role: string;
  newAccount?: boolean;
  json?: boolean;
}

function checkRole(what: string, value: string): void {
  if (!isRole(value)) throw new CliError(`${what}: expected one of ${ROLES.join(', ')}, got \`${value}\``);
}

/** `drover member list|add|invitations|revoke-invitation|role|remove`: who belongs to the organization (owners only). */
export function configureMemberCommand(program: Command, rt: Runtime): void {
  const group = program.command('member').description("the organization's members (owners only; a session)");

  group
    .command('add')
    .description('invite someone: they become a member when they accept (drover invitation accept, or the dashboard)')
    .requiredOption('--email <email>', 'their email')
    .option('--role <role>', ROLES.join(', '), 'member')
    .option(
      '--new-account',
      'give a first password, for an email without an account yet (asked, or read from DROVER_MEMBER_PASSWORD); ' +
        'unused when the email has one',
    )
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: AddFlags, command: Command) => {
      checkRole('--role', flags.role);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const password = flags.newAccount
        ? (rt.env.DROVER_MEMBER_PASSWORD ??
          (await promptSecret(rt, `First password for ${flags.email}: `, 'set DROVER_MEMBER_PASSWORD')))
        : undefined;
      const invitation = await caller.api.post<Invitation>(`/orgs/${await caller.orgId()}/members`, {
        email: flags.email,
        role: flags.role,
        ...(password === undefined ? {} : { password }),
      });
      if (flags.json) return printJson(rt, invitation);
      rt.out(
        `Invited ${invitation.email} as ${invitation.role} until ${invitation.expiresAt} (invitation ${invitation.id}); ` +
          'they join when they accept it\n',
      );
    });

  group
    .command('list')
    .description(
      "the organization's members by when they joined, with their roles and the single sign-on group that set one",
    )
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const members = await caller.api.get<Member[]>(`/orgs/${await caller.orgId()}/members`);
      if (flags.json) return printJson(rt, members);
      const rows = members.map((m) => [m.email, m.role, shortTime(m.joinedAt), m.ssoGroup ?? undefined, m.userId]);
      rt.out(formatTable(['EMAIL', 'ROLE', 'JOINED', 'SSO GROUP', 'USER ID'], rows));
    });

  group
    .command('invitations')
    .description("the organization's pending invitations, newest first")
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const invitations = await caller.api.get<Invitation[]>(`/orgs/${await caller.orgId()}/invitations`);
      if (flags.json) return printJson(rt, invitations);
      if (invitations.length === 0) return rt.out('No pending invitations.\n');
      const rows = invitations.map((i) => [
        i.id,
        i.email,
        i.role,
        i.status,
        shortTime(i.expiresAt),
        i.invitedBy?.email,
      ]);
      rt.out(formatTable(['ID', 'EMAIL', 'ROLE', 'STATUS', 'EXPIRES', 'INVITED BY'], rows));
    });

  group
    .command('revoke-invitation')
    .description('revoke a pending invitation: it can no longer be accepted')
    .argument('<invitation>', 'its id, or the email it was sent to')
    .option('--json', "print the API's answer as JSON")
    .action(async (value: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = `/orgs/${await caller.orgId()}/invitations`;
      const wanted = value.trim().toLowerCase();
      const invitations = await caller.api.get<Invitation[]>(base);
      const invitation = invitations.find((i) => i.id === wanted || i.email.toLowerCase() === wanted);
      if (!invitation) throw new CliError(`no pending invitation \`${value}\` in the organization`);
      const revoked = await caller.api.delete<Invitation>(`${base}/${invitation.id}`);
      if (flags.json) return printJson(rt, revoked);
      rt.out(`Revoked the invitation of ${revoked.email}\n`);
    });

  group
    .command('role')
    .description(`change a member's role (${ROLES.join(', ')}); the last owner cannot be demoted`)
    .argument('<member>', 'their email or user id')
    .argument('<role>', ROLES.join(', '))
    .option('--json', "print the API's answer as JSON")
    .action(async (value: string, role: string, flags: { json?: boolean }, command: Command) => {
      checkRole('<role>', role);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = `/orgs/${await caller.orgId()}/members`;
      const member = await findMember(caller.api, base, value);
      const changed = await caller.api.patch<Member>(`${base}/${member.userId}`, { role });
      if (flags.json) return printJson(rt, changed);
      rt.out(`${changed.email} is ${roleWithArticle(changed.role)} of the organization\n`);
    });

  group
    .command('remove')
    .description('remove a member; their API tokens stop working')
    .argument('<member>', 'their email or user id')
    .option('--json', "print the API's answer as JSON")
    .action(async (value: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = `/orgs/${await caller.orgId()}/members`;
      const member = await findMember(caller.api, base, value);
      const removed = await caller.api.delete<Member>(`${base}/${member.userId}`);
      if (flags.json) return printJson(rt, removed);
      rt.out(`Removed ${removed.email} from the organization\n`);
    });
}

async function findMember(api: { get<T>(path: string): Promise<T> }, base: string, value: string): Promise<Member> {
  const wanted = value.trim().toLowerCase();
  const members = await api.get<Member[]>(base);
  const member = members.find((m) => m.userId === wanted || m.email.toLowerCase() === wanted);
  if (!member) throw new CliError(`no member \`${value}\` in the organization`);
  return member;
}
