import type { Role } from '@drover/shared';
import type { ApiClient } from './http.js';

export const MEMBER_PASSWORD = 'member password 1';

/**
 * Adds a new user to the organization as `owner` (a session client of one of its owners) the way
 * people join: invited with a first password, signed in with it, the invitation accepted. Returns
 * their id and a client signed in as them.
 */
export async function addUser(
  owner: ApiClient,
  orgId: string,
  email: string,
  role: Role = 'member',
): Promise<{ userId: string; client: ApiClient }> {
  const invited = await owner.post<{ id: string }>(`/orgs/${orgId}/members`, {
    body: { email, password: MEMBER_PASSWORD, role },
  });
  if (invited.status !== 201) throw new Error(`invite member: ${invited.status} ${invited.text}`);
  const client = await owner.withToken(null).login(email, MEMBER_PASSWORD);
  await acceptInvitation(client, invited.body.id);
  const session = await client.get<{ user: { id: string } }>('/auth/session');
  return { userId: session.body.user.id, client };
}

/** Accepts an invitation as the signed-in `invitee`. */
export async function acceptInvitation(invitee: ApiClient, invitationId: string): Promise<void> {
  const accepted = await invitee.post(`/invitations/${invitationId}/accept`);
  if (accepted.status !== 200) throw new Error(`accept invitation: ${accepted.status} ${accepted.text}`);
}

/**
 * A user who belongs to no organization of `orgId`'s owner but owns a second organization of
 * their own (made with POST /orgs), for cross-organization isolation tests.
 */
export async function outsider(
  owner: ApiClient,
  orgId: string,
  email: string,
): Promise<{ userId: string; client: ApiClient; orgId: string }> {
  const { userId, client } = await addUser(owner, orgId, email);
  const removed = await owner.delete(`/orgs/${orgId}/members/${userId}`);
  if (removed.status !== 200) throw new Error(`remove member: ${removed.status} ${removed.text}`);
  const org = await client.post<{ id: string }>('/orgs', { body: { name: `${email} org` } });
  if (org.status !== 201) throw new Error(`create org: ${org.status} ${org.text}`);
  return { userId, client, orgId: org.body.id };
}

/** A fake clock for `startTestCoordinator({clock})`, starting now and moved by hand. */
export function fakeClock(start = Date.now()): { now(): number; advance(ms: number): void } {
  let current = start;
  return {
    now: () => current,
    advance(ms: number) {
      current += ms;
    },
  };
}
