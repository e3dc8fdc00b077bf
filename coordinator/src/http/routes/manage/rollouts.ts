import type { FastifyInstance } from 'fastify';
import type { OperatorMove } from '../../../domain/ota/rollouts.js';
import { errorResponses } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { requireAppAccess } from './ota-access.js';
import { releaseParams, type ReleaseParams } from './ota-schemas.js';
import { RolloutMoveBodySchema, RolloutSchema, type RolloutMoveBody } from './rollout-schemas.js';

const MOVES: Record<OperatorMove, string> = {
  pause: 'Pause a running rollout: no new wave starts (409 unless running)',
  resume:
    "Resume a paused rollout; one paused by the failure threshold accepts its wave's failures (409 unless paused)",
  advance: 'Start the next wave now, or complete the rollout after its last wave (409 unless running or paused)',
  abort:
    'Abort a rollout: devices not yet given the release keep the previous one, and so do devices bound later (409 unless running or paused)',
};

/** The staged rollout of a release (docs/ota.md, "Staged rollouts"): read it, and move it by hand. */
export async function rolloutRoutes(app: FastifyInstance): Promise<void> {
  const { ctx } = app;

  app.get<{ Params: ReleaseParams }>(
    '/orgs/:orgId/apps/:appId/releases/:releaseId/rollout',
    {
      schema: {
        operationId: 'getRollout',
        summary: "Read a release's staged rollout: its state, each wave's counts, its history",
        tags: ['dashboard'],
        params: releaseParams,
        querystring: noQuery,
        response: { 200: RolloutSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { application } = await requireAppAccess(request);
      return ctx.rollouts.view(application, request.params.releaseId);
    },
  );

  for (const move of Object.keys(MOVES) as OperatorMove[]) {
    app.post<{ Params: ReleaseParams; Body: RolloutMoveBody | null }>(
      `/orgs/:orgId/apps/:appId/releases/:releaseId/rollout/${move}`,
      {
        config: { action: 'releases.publish' },
        schema: {
          operationId: `${move}Rollout`,
          summary: MOVES[move],
          tags: ['dashboard'],
          params: releaseParams,
          querystring: noQuery,
          body: RolloutMoveBodySchema,
          response: { 200: RolloutSchema, ...errorResponses(401, 403, 404, 409, 422) },
        },
      },
      async (request) => {
        const { application, ...caller } = await requireAppAccess(request);
        await ctx.rollouts.operate(application, request.params.releaseId, move, caller, {
          wave: request.body?.wave,
        });
        return ctx.rollouts.view(application, request.params.releaseId);
      },
    );
  }
}
