import type { FastifyInstance } from 'fastify';
import { requireSession } from '../../auth/session.js';
import { emptyBody, errorResponses, idParams } from '../../schemas/common.js';
import { InvitationSchema, noQuery, OrgSchema } from '../../schemas/management.js';
import { listOf } from '../../schemas/examples.js';

const params = idParams('invitationId');

/**
 * The signed-in user's invitations to organizations (docs/management.md, "Members"): those
 * addressed to their email, which they accept (joining the organization) or decline. An
 * invitation addressed to another email is 404.
 */
export async function invitationRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/invitations',
    {
      schema: {
        operationId: 'listMyInvitations',
        summary: 'Your pending invitations to organizations (those addressed to your email), newest first',
        tags: ['dashboard'],
        querystring: noQuery,
        response: { 200: listOf(InvitationSchema), ...errorResponses(401, 422) },
      },
    },
    async (request) => {
      const { userId, email } = await requireSession(request);
      return app.ctx.invitations.listMine({ userId, email });
    },
  );

  app.post<{ Params: { invitationId: string } }>(
    '/invitations/:invitationId/accept',
    {
      schema: {
        operationId: 'acceptInvitation',
        summary: 'Accept an invitation addressed to you: you are a member of its organization from now on',
        description:
          'Answers the organization with your role in it. An invitation accepted already is 409; one revoked or ' +
          'declined is 410 `invitation_revoked`; one past its expiry is 410 `invitation_expired`.',
        tags: ['dashboard'],
        params,
        querystring: noQuery,
        body: emptyBody,
        response: { 200: OrgSchema, ...errorResponses(401, 404, 409, 410, 422) },
      },
    },
    async (request) => {
      const { userId, email } = await requireSession(request);
      return app.ctx.invitations.accept({ userId, email }, request.params.invitationId);
    },
  );

  app.post<{ Params: { invitationId: string } }>(
    '/invitations/:invitationId/decline',
    {
      schema: {
        operationId: 'declineInvitation',
        summary: 'Decline an invitation addressed to you; answers it declined',
        tags: ['dashboard'],
        params,
        querystring: noQuery,
        body: emptyBody,
        response: { 200: InvitationSchema, ...errorResponses(401, 404, 409, 410, 422) },
      },
    },
    async (request) => {
      const { userId, email } = await requireSession(request);
      return app.ctx.invitations.decline({ userId, email }, request.params.invitationId);
    },
  );
}
