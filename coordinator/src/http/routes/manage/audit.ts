import type { FastifyInstance } from 'fastify';
import { cursorQueryProperty, pageResponse, parseCursor, sendPage } from '../../pagination.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, orgParams } from '../../schemas/common.js';
import { AuditEntrySchema } from '../../schemas/management.js';

export const AUDIT_DEFAULT_LIMIT = 50;
export const AUDIT_MAX_LIMIT = 200;

interface AuditQuerystring {
  action?: string;
  limit: number;
  cursor?: string;
}

/**
 * The audit log of an organization (owner), newest first. When more entries follow a page, the
 * answer carries the header `x-next-cursor`; pass its value as `cursor` to get the next page.
 */
export async function auditRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: AuditQuerystring }>(
    '/orgs/:orgId/audit',
    {
      schema: {
        summary: 'Audit entries of an organization (owner), newest first; next page cursor in the x-next-cursor header',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            action: { type: 'string', minLength: 1, maxLength: 100, description: 'only entries with this action' },
            limit: { type: 'integer', minimum: 1, maximum: AUDIT_MAX_LIMIT, default: AUDIT_DEFAULT_LIMIT },
            cursor: cursorQueryProperty,
          },
        },
        response: {
          200: pageResponse(AuditEntrySchema, 'entries'),
          ...errorResponses(401, 403, 404, 422),
        },
      },
    },
    async (request, reply) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId, 'owner');
      const { action, limit, cursor } = request.query;
      const before = parseCursor(cursor);
      const entries = await app.ctx.repos.audit.list(orgId, { action, limit: limit + 1, before });
      return sendPage(reply, entries, limit, (entry) => entry.id);
    },
  );
}
