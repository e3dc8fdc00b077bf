import type { FastifyInstance } from 'fastify';
import { createOrganization } from '../../../domain/orgs/bootstrap.js';
import { cleanName, MAX_NAME_LENGTH } from '../../../domain/names.js';
import { isoNow } from '../../../util/clock.js';
import { requireOrgRole, requireSession } from '../../auth/session.js';
import { errorResponses, orgParams } from '../../schemas/common.js';
import { noQuery, OrgSchema } from '../../schemas/management.js';
import { memberRoutes } from './members.js';
import { listOf } from '../../schemas/examples.js';
import { OrgPatchBodySchema, OrgViewSchema, RetentionViewSchema, type OrgPatchBody } from './retention-schemas.js';

/** Organizations of the signed-in user (docs/management.md); members are in members.ts. */
export async function orgRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/orgs',
    {
      schema: {
        operationId: 'listOrgs',
        summary: "List the caller's organizations with the caller's role in each",
        tags: ['dashboard'],
        querystring: noQuery,
        response: { 200: listOf(OrgSchema), ...errorResponses(401, 422) },
      },
    },
    async (request) => {
      const { userId } = await requireSession(request);
      return app.ctx.repos.orgs.listForUser(userId);
    },
  );

  app.post<{ Body: { name: string } }>(
    '/orgs',
    {
      schema: {
        operationId: 'createOrg',
        summary: 'Create an organization; the caller becomes its owner',
        tags: ['dashboard'],
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH } },
          examples: [{ name: 'acme' }],
        },
        response: { 201: OrgSchema, ...errorResponses(401, 422) },
      },
    },
    async (request, reply) => {
      const { userId } = await requireSession(request);
      const name = cleanName('body.name', request.body.name);
      const createdAt = isoNow(app.ctx.clock);
      const orgId = await createOrganization(app.ctx.repos, name, userId, createdAt);
      await app.ctx.audit.record({
        orgId,
        actorType: 'user',
        actorId: userId,
        action: 'org.create',
        targetType: 'org',
        targetId: orgId,
        metadata: { name },
      });
      return reply.code(201).send({ id: orgId, name, role: 'owner', createdAt });
    },
  );

  /** The org view: the organization, the caller's role and the retention that applies. */
  const orgView = async (orgId: string, role: string) => {
    const org = await app.ctx.repos.orgs.findById(orgId);
    if (!org) throw new Error('membership of a missing organization'); // foreign keys forbid it
    return { ...org, role, retention: await app.ctx.retention.effective(orgId) };
  };

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId',
    {
      schema: {
        operationId: 'getOrg',
        summary: "An organization with the caller's role in it and the retention that applies to it",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: OrgViewSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, role } = await requireOrgRole(request, request.params.orgId);
      return orgView(orgId, role);
    },
  );

  app.patch<{ Params: { orgId: string }; Body: OrgPatchBody }>(
    '/orgs/:orgId',
    {
      config: { action: 'org.retention' },
      schema: {
        operationId: 'updateOrg',
        summary: "Change the organization's retention (owner)",
        description:
          "The fields of `retention` given replace the organization's values; null returns one to the " +
          "coordinator's setting. A lowered value applies to existing data at the next retention sweep.",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: OrgPatchBodySchema,
        response: { 200: OrgViewSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, role, userId } = await requireOrgRole(request, request.params.orgId);
      await app.ctx.retention.update(orgId, userId, request.body.retention);
      return orgView(orgId, role);
    },
  );

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/retention',
    {
      schema: {
        operationId: 'getRetention',
        summary: "The organization's retention, the coordinator's settings and the database's size",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: RetentionViewSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return app.ctx.retention.view(orgId);
    },
  );

  await app.register(memberRoutes);
}
