import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTOR_TYPES, type ActorType } from '../../../domain/model/audit.js';
import { createdRange, createdRangeQueryProperties } from '../../created-range.js';
import { cursorQueryProperty, pageResponse, parseCursor, sendPage } from '../../pagination.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, orgParams } from '../../schemas/common.js';
import { AuditEntrySchema } from '../../schemas/management.js';

export const AUDIT_DEFAULT_LIMIT = 50;
export const AUDIT_MAX_LIMIT = 200;

interface AuditQuerystring {
  action?: string;
  actorType?: ActorType;
  actorId?: string;
  targetType?: string;
  targetId?: string;
  createdAfter?: string;
  createdBefore?: string;
  limit: number;
  cursor?: string;
}

const name = (what: string) => ({ type: 'string', minLength: 1, maxLength: 100, description: what }) as const;

/**
 * The audit log of an organization (owner), newest first. When more entries follow a page, the
 * answer carries the header `x-next-cursor`; pass its value as `cursor` to get the next page.
 */
export async function auditRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: AuditQuerystring }>(
    '/orgs/:orgId/audit',
    {
      config: { action: 'audit.read' },
      schema: {
        operationId: 'listAuditEntries',
        summary: 'Audit entries of an organization (owner), newest first; next page cursor in the x-next-cursor header',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            action: name('only entries with this action'),
            actorType: { type: 'string', enum: AUDIT_ACTOR_TYPES, description: 'only entries by this kind of actor' },
            actorId: name('only entries by this actor (a user, API token or agent id)'),
            targetType: name('only entries about this kind of target (user, agent, trigger, api_token, ...)'),
            targetId: name('only entries about this target'),
            ...createdRangeQueryProperties('entries'),
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
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const { limit, cursor, createdAfter, createdBefore, ...filters } = request.query;
      const before = parseCursor(cursor);
      const range = createdRange(createdAfter, createdBefore);
      const entries = await app.ctx.repos.audit.list(orgId, { ...filters, ...range, limit: limit + 1, before });
      return sendPage(reply, entries, limit, (entry) => entry.id);
    },
  );
}
