import type { FastifyInstance } from 'fastify';
import type { Role } from '../../../domain/model/orgs.js';
import { ROLES } from '../../../domain/model/orgs.js';
import { MAX_EMAIL_LENGTH } from '../../../domain/members.js';
import { MAX_PASSWORD_LENGTH } from '../../../domain/passwords.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams } from '../../schemas/common.js';
import { MemberSchema, noQuery } from '../../schemas/management.js';
import { listOf } from '../../schemas/examples.js';

const memberParams = idParams('orgId', 'userId');
const role = { type: 'string', enum: ROLES } as const;

/** Members of an organization: any member lists them; owners add, change and remove them. */
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
      schema: {
        operationId: 'addMember',
        summary:
          'Add a member (owner): creates the user when the email is new (password required), else adds the existing user (no password)',
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
        response: { 201: MemberSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId, 'owner');
      return reply.code(201).send(await app.ctx.members.add(actor, request.body));
    },
  );

  app.patch<{ Params: { orgId: string; userId: string }; Body: { role: Role } }>(
    '/orgs/:orgId/members/:userId',
    {
      schema: {
        operationId: 'changeMemberRole',
        summary: "Change a member's role (owner); the last owner cannot be demoted",
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
      const actor = await requireOrgRole(request, request.params.orgId, 'owner');
      return app.ctx.members.changeRole(actor, request.params.userId, request.body.role);
    },
  );

  app.delete<{ Params: { orgId: string; userId: string } }>(
    '/orgs/:orgId/members/:userId',
    {
      schema: {
        operationId: 'removeMember',
        summary: 'Remove a member (owner); answers the member as it was; the last owner cannot be removed',
        tags: ['dashboard'],
        params: memberParams,
        querystring: noQuery,
        response: { 200: MemberSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const actor = await requireOrgRole(request, request.params.orgId, 'owner');
      return app.ctx.members.remove(actor, request.params.userId);
    },
  );
}
