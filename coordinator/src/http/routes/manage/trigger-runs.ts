import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TriggerRunBody } from '../../../domain/trigger-run/request.js';
import { userActor, type RunActor } from '../../../domain/trigger-run/run-trigger.js';
import type { RunTarget } from '../../../domain/trigger-run/run-targets.js';
import { notFound } from '../../../errors.js';
import { requireOrgRole } from '../../auth/session.js';
import { batchAnswers, defaultRunBody, RunBodySchema, runAnswerer, runResponses } from '../../run-answer.js';
import { errorResponses, idParams } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';

/**
 * A run by hand, `POST /v1/orgs/:orgId/triggers/:triggerId/run` (docs/trigger-runs.md, "Runs by
 * hand"): a member of the organization runs any of its triggers with the public run's body and
 * answers. The membership and the trigger are settled before the body is read (401 and 404 come
 * before 422); the run is the domain's, as for every source of runs.
 */
export async function triggerRunByHandRoutes(app: FastifyInstance): Promise<void> {
  const { runs } = app.ctx;
  const callers = new WeakMap<FastifyRequest, { target: RunTarget; actor: RunActor }>();
  const answer = runAnswerer(app, runs, app.ctx.batches);

  async function identifyCaller(request: FastifyRequest): Promise<void> {
    const { orgId, triggerId } = request.params as { orgId: string; triggerId: string };
    const access = await requireOrgRole(request, orgId);
    const target = await runs.target(orgId, triggerId);
    if (!target) throw notFound('Trigger');
    callers.set(request, { target, actor: userActor(access) });
  }

  app.post<{ Params: { orgId: string; triggerId: string }; Body: TriggerRunBody | undefined }>(
    '/orgs/:orgId/triggers/:triggerId/run',
    {
      onRequest: identifyCaller,
      preValidation: defaultRunBody,
      config: { ...batchAnswers, action: 'triggers.run' },
      schema: {
        operationId: 'runTriggerByHand',
        summary: 'Run a trigger by hand: the public run, as a member (an owner may force); the workflow limits apply',
        tags: ['dashboard'],
        params: idParams('orgId', 'triggerId'),
        querystring: noQuery,
        body: RunBodySchema,
        response: { ...runResponses, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => answer(request, reply, callers.get(request)!),
  );
}
