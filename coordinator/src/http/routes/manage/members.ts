import type { FastifyInstance } from 'fastify';
import type { Role } from '../../../domain/model/orgs.js';
import { ROLES } from '../../../domain/model/orgs.js';
import { MAX_EMAIL_LENGTH } from '../../../domain/emails.js';
import { MAX_PASSWORD_LENGTH } from '../../../domain/auth/passwords.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams } from '../../schemas/common.js';
import { InvitationSchema, MemberSchema, noQuery } from '../../schemas/management.js';
import { listOf } from '../../schemas/examples.js';

const memberParams = idParams('orgId', 'userId');
const invitationParams = idParams('orgId', 'invitationId');
const role = { type: 'string', enum: ROLES } as const;

/**
 * Members of an organization: any member lists them; owners invite people (who join when they
 * accept: routes/manage/invitations.ts), list and revoke the pending invitations, change roles
 * and remove members.
 */
export async function memberRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/members',
    {
      schema: {
        operationId: 'listMembers',
        summary: 'List the members of an organization',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(MemberSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => app.ctx.members.list(await requireOrgRole(request, request.params.orgId)),
  );

  app.post<{ Params: { orgId: string }; Body: { email: string; password?: string; role: Role } }>(
    '/orgs/:orgId/members',
    {
      config: { action: 'members.manage' },
      schema: {
        operationId: 'inviteMember',
        summary: 'Invite someone to the organization (owner): they become a member when they accept',
        description:
          'Answers the pending invitation, the same whether the email has an account or not. `password` is the first ' +
          'password of the account when the email has none yet (the invitee signs in with it to accept); when it has ' +
          'one, it is not used. The invitation expires after 7 days.',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['email', 'role'],
          examples: [{ email: 'bob@example.com', password: 'a first password', role: 'member' }],
          properties: {
            email: { type: 'string', minLength: 3, maxLength: MAX_EMAIL_LENGTH },
            password: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH },
            role,
          },
        },
        response: { 201: InvitationSchema, ...errorResponses(401, 403, 404, 409, 422, 429) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      return reply.code(201).send(await app.ctx.invitations.invite(actor, request.body));
    },
  );

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/invitations',
    {
      config: { action: 'members.manage' },
      schema: {
        operationId: 'listInvitations',
        summary: "The organization's pending invitations (owner), newest first; those past their expiry as `expired`",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(InvitationSchema), ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => app.ctx.invitations.listForOrg(await requireOrgRole(request, request.params.orgId)),
  );

  app.delete<{ Params: { orgId: string; invitationId: string } }>(
    '/orgs/:orgId/invitations/:invitationId',
    {
      config: { action: 'members.manage' },
      schema: {
        operationId: 'revokeInvitation',
        summary: 'Revoke a pending invitation (owner), expired or not; answers it revoked',
        tags: ['dashboard'],
        params: invitationParams,
        querystring: noQuery,
        response: { 200: InvitationSchema, ...errorResponses(401, 403, 404, 409, 410, 422) },
      },
    },
    async (request) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      return app.ctx.invitations.revoke(actor, request.params.invitationId);
    },
  );

  app.patch<{ Params: { orgId: string; userId: string }; Body: { role: Role } }>(
    '/orgs/:orgId/members/:userId',
    {
      config: { action: 'members.manage' },
      schema: {
        operationId: 'changeMemberRole',
        summary: "Change a member's role (owner); the last owner cannot be demoted",
        description:
          'An owner given another role loses the pending invitations they sent: each is revoked with the change ' +
          '(audited `invitation.revoke` with `reason: inviter_not_owner`).',
        tags: ['dashboard'],
        params: memberParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['role'],
          properties: { role },
          examples: [{ role: 'owner' }],
        },
        response: { 200: MemberSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      return app.ctx.members.changeRole(actor, request.params.userId, request.body.role);
    },
  );

  app.delete<{ Params: { orgId: string; userId: string } }>(
    '/orgs/:orgId/members/:userId',
    {
      config: { action: 'members.manage' },
      schema: {
        operationId: 'removeMember',
        summary: 'Remove a member (owner); answers the member as it was; the last owner cannot be removed',
        description:
          'The pending invitations the member sent are revoked with the removal (audited `invitation.revoke` with ' +
          '`reason: inviter_not_owner`); their API tokens and unspent enrollment tokens stop working.',
        tags: ['dashboard'],
        params: memberParams,
        querystring: noQuery,
        response: { 200: MemberSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      return app.ctx.members.remove(actor, request.params.userId);
    },
  );
}
