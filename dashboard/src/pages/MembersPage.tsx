import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { api, apiPath } from '../api/client';
import { invitationsQuery, membersQuery, type Invitation, type Member } from '../api/access';
import { orgsQuery, sessionQuery } from '../api/queries';
import { ROLES, roleWithArticle } from '@drover/shared/roles';
import type { Role } from '../api/types';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';
import { dateTime } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';

/** The organization's members and their roles; owners invite, change and remove them. */
export function MembersPage() {
  const { orgId, org, loaded } = useOrg();
  const members = useQuery(membersQuery(orgId));
  const session = useQuery(sessionQuery);
  if (loaded && !org) return <NotFoundPage />;
  const mayManage = allows(org, 'members.manage');
  const me = session.data?.user.id;
  return (
    <section aria-labelledby="members-heading">
      <h1 id="members-heading">Members</h1>
      <p>
        An owner does {ROLE_WORDS.owner}; an operator {ROLE_WORDS.operator}; a member {ROLE_WORDS.member}; a viewer{' '}
        {ROLE_WORDS.viewer}. {!mayManage && 'Only an owner invites, changes or removes members.'}
      </p>
      <ErrorMessage error={members.error} />
      {members.data && (
        <div className="table-scroll">
          <table className="members">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Joined</th>
                {mayManage && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {members.data.map((m) => (
                <tr key={m.userId} aria-label={m.email}>
                  <th scope="row">
                    {m.email}
                    {m.userId === me && <span className="hint"> (you)</span>}
                  </th>
                  <td>
                    {m.role}
                    {m.ssoGroup !== null && (
                      <span className="hint" title="Set by the single sign-on role map">
                        {' '}
                        by single sign-on: {m.ssoGroup}
                      </span>
                    )}
                  </td>
                  <td>{dateTime(m.joinedAt)}</td>
                  {mayManage && (
                    <td>
                      <MemberActions orgId={orgId} member={m} isMe={m.userId === me} />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!members.data && !members.error && <p className="loading">Loading…</p>}
      {mayManage && <PendingInvitations orgId={orgId} />}
      {mayManage && <InviteMember orgId={orgId} />}
    </section>
  );
}

/** What each role may do, in a sentence (the coordinator's table, docs/management.md "Roles"). */
export const ROLE_WORDS: Record<Role, string> = {
  owner: 'everything: members, chat integrations, forced runs, deleting apps, retention, the audit log',
  operator: 'what a member does, and revokes agents and deletes triggers',
  member: 'runs and cancels jobs, manages agents, triggers, files, apps and releases, issues API tokens',
  viewer: 'reads everything but the audit log, and changes nothing',
};

function MemberActions({ orgId, member, isMe }: { orgId: string; member: Member; isMe: boolean }) {
  const [mode, setMode] = useState<'idle' | 'role' | 'remove'>('idle');
  const [role, setRole] = useState<Role>(ROLES.find((r) => r !== member.role)!);
  const roleButton = useReturnFocus(mode === 'role');
  const removeButton = useReturnFocus(mode === 'remove');
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const done = () => {
    setMode('idle');
    void queryClient.invalidateQueries({ queryKey: membersQuery(orgId).queryKey });
    // The signed-in user's own role or membership changed: the frame and the pages follow.
    if (isMe) void queryClient.invalidateQueries({ queryKey: orgsQuery.queryKey });
  };
  const changeRole = useMutation({
    mutationFn: () => api<Member>('PATCH', apiPath`/orgs/${orgId}/members/${member.userId}`, { body: { role } }),
    onSuccess: done,
  });
  const remove = useMutation({
    mutationFn: () => api<Member>('DELETE', apiPath`/orgs/${orgId}/members/${member.userId}`),
    onSuccess: () => {
      done();
      if (isMe) void navigate('/', { replace: true });
    },
  });
  const cancel = () => {
    setMode('idle');
    changeRole.reset();
    remove.reset();
  };
  const who = isMe ? 'yourself' : member.email;
  if (mode === 'role') {
    const submit = (event: FormEvent) => {
      event.preventDefault();
      changeRole.mutate();
    };
    return (
      <Confirm onSubmit={submit} onCancel={cancel} label={`Change the role of ${member.email}`}>
        <label>
          New role for {who}
          <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {ROLES.filter((r) => r !== member.role).map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <p className="hint">
          {roleWithArticle(role).replace(/^./, (c) => c.toUpperCase())}: {ROLE_WORDS[role]}.
        </p>
        {member.ssoGroup !== null && (
          <p className="hint">
            Single sign-on's role map set this role for the group {member.ssoGroup}: it sets it again at their next
            sign-in while that group names this organization.
          </p>
        )}
        <button type="submit" className="danger" disabled={changeRole.isPending}>
          Change role
        </button>
        <button type="button" onClick={cancel}>
          Keep the role
        </button>
        <ErrorMessage error={changeRole.error} />
      </Confirm>
    );
  }
  if (mode === 'remove') {
    return (
      <Confirm label={`Remove ${member.email}`} onCancel={cancel}>
        <p>
          Remove {who} from the organization? {isMe ? 'You' : 'They'} can no longer sign in to it, and the API tokens{' '}
          {isMe ? 'you' : 'they'} issued stop working until {isMe ? 'you are' : 'they are'} a member again.
        </p>
        <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
          Remove member
        </button>
        <button type="button" onClick={cancel}>
          Keep {isMe ? 'me' : 'them'}
        </button>
        <ErrorMessage error={remove.error} />
      </Confirm>
    );
  }
  return (
    <div className="actions">
      <button
        type="button"
        ref={roleButton}
        onClick={() => setMode('role')}
        aria-label={`Change role: ${member.email}`}
      >
        Change role
      </button>
      <button type="button" ref={removeButton} onClick={() => setMode('remove')} aria-label={`Remove ${member.email}`}>
        Remove
      </button>
    </div>
  );
}

const INVITE_FIELDS = ['email', 'password', 'role'] as const;

/**
 * Invites someone: they join when they accept. The answer is the same whether the email has an
 * account or not, so the page cannot say which; a first password serves only an email without one.
 */
function InviteMember({ orgId }: { orgId: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('member');
  const queryClient = useQueryClient();
  const add = useMutation({
    mutationFn: () =>
      api<Invitation>('POST', apiPath`/orgs/${orgId}/members`, {
        body: { email: email.trim(), role, ...(password !== '' ? { password } : {}) },
      }),
    onSuccess: () => {
      setEmail('');
      setPassword('');
      setRole('member');
      void queryClient.invalidateQueries({ queryKey: invitationsQuery(orgId).queryKey });
    },
  });
  const errors = fieldErrors(add.error, INVITE_FIELDS, 'body', 'member');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate();
  };
  return (
    <section aria-labelledby="invite-member-heading" className="panel">
      <h2 id="invite-member-heading">Invite a member</h2>
      <p className="hint">
        They become a member when they accept the invitation, signed in (on their account page, or with{' '}
        <code>drover invitation accept</code>); it waits 7 days. Someone without an account yet signs in with the first
        password you choose here (8 characters or more): give it to them. Someone who has an account signs in with
        theirs, and this one is not used.
      </p>
      <form onSubmit={submit} noValidate>
        <FormError error={add.error} errors={errors} />
        {add.isSuccess && add.data && (
          <p role="status" className="hint">
            Invited {add.data.email} as {add.data.role}, until {dateTime(add.data.expiresAt)}: they join when they
            accept.
          </p>
        )}
        <div className="form-grid">
          <div className="field">
            <label htmlFor="member-email">Email</label>
            <input
              {...errors.props('email')}
              type="email"
              autoComplete="off"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
            <FieldError errors={errors} field="email" idPrefix="member" />
          </div>
          <div className="field">
            <label htmlFor="member-password">First password</label>
            <input
              {...errors.props('password')}
              type="password"
              autoComplete="new-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
            <span className="hint">for someone without an account; optional</span>
            <FieldError errors={errors} field="password" idPrefix="member" />
          </div>
          <div className="field">
            <label htmlFor="member-role">Role</label>
            <select {...errors.props('role')} value={role} onChange={(e) => setRole(e.target.value as Role)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
            <FieldError errors={errors} field="role" idPrefix="member" />
          </div>
        </div>
        <div className="form-actions">
          <button type="submit" disabled={add.isPending}>
            Invite
          </button>
        </div>
      </form>
    </section>
  );
}

/** The organization's pending invitations (owners), each revocable. */
function PendingInvitations({ orgId }: { orgId: string }) {
  const invitations = useQuery(invitationsQuery(orgId));
  if (invitations.error) return <ErrorMessage error={invitations.error} />;
  if (!invitations.data || invitations.data.length === 0) return null;
  return (
    <section aria-labelledby="pending-invitations-heading">
      <h2 id="pending-invitations-heading">Pending invitations</h2>
      <div className="table-scroll">
        <table className="members">
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Invited by</th>
              <th scope="col">Expires</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {invitations.data.map((i) => (
              <tr key={i.id} aria-label={`Invitation of ${i.email}`}>
                <th scope="row">{i.email}</th>
                <td>{i.role}</td>
                <td>{i.invitedBy?.email ?? 'a former member'}</td>
                <td>{i.status === 'expired' ? `expired ${dateTime(i.expiresAt)}` : dateTime(i.expiresAt)}</td>
                <td>
                  <RevokeInvitation orgId={orgId} invitation={i} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function RevokeInvitation({ orgId, invitation }: { orgId: string; invitation: Invitation }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => api<Invitation>('DELETE', apiPath`/orgs/${orgId}/invitations/${invitation.id}`),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: invitationsQuery(orgId).queryKey }),
  });
  return (
    <div className="actions">
      <button
        type="button"
        onClick={() => revoke.mutate()}
        disabled={revoke.isPending}
        aria-label={`Revoke the invitation of ${invitation.email}`}
      >
        Revoke
      </button>
      <ErrorMessage error={revoke.error} />
    </div>
  );
}
