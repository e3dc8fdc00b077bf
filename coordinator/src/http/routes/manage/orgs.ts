import type { FastifyInstance } from 'fastify';
import { requireSession } from '../../auth/session.js';
import { errorResponses, timestamp, uuid } from '../../schemas/common.js';

// Interim: only GET /orgs, so that sign-in can be tested; the rest of the file is issue 2 work in progress.
export async function orgRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/orgs',
    {
      schema: {
        tags: ['dashboard'],
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'name', 'role'],
              properties: { id: uuid, name: { type: 'string' }, role: { type: 'string' }, createdAt: timestamp },
            },
          },
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const { userId } = await requireSession(request);
      return app.ctx.repos.orgs.listForUser(userId);
    },
  );
}
