import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthenticatingApiToken } from '../../../domain/model/api-tokens.js';
import { checkTriggerGranted, requireTriggerGrant, type TriggerRunBody } from '../../../domain/trigger-run/request.js';
import { apiTokenActor } from '../../../domain/trigger-run/run-trigger.js';
import type { RunTarget } from '../../../domain/trigger-run/run-targets.js';
import { notFound } from '../../../errors.js';
import { apiCallerOf } from '../../auth/api-token.js';
import { batchAnswers, defaultRunBody, RunBodySchema, runAnswerer, runResponses } from '../../run-answer.js';
import { errorResponses, idParams } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';

/**
 * `POST /v1/triggers/:id/run` (rules and status codes in docs/trigger-runs.md). The caller, the
 * trigger and the grant are settled before the body is validated (401, 403 and 404 come before
 * 422); the run itself is the domain's (domain/trigger-run/run-trigger.ts), as for every other
 * source of runs.
 */

interface Caller {
  token: AuthenticatingApiToken;
  target: RunTarget;
}

export async function triggerRunRoutes(app: FastifyInstance): Promise<void> {
  const { runs } = app.ctx;
  const callers = new WeakMap<FastifyRequest, Caller>();
  const answer = runAnswerer(app, runs, app.ctx.batches);

  /**
   * 401, 403 (no trigger grant), 404 (unknown trigger), 403 (trigger outside the grant): in
   * `onRequest`, before the body is read, so these come first whatever the body is.
   */
  async function identifyCaller(request: FastifyRequest): Promise<void> {
    const { id } = request.params as { id: string };
    const { token, generation } = apiCallerOf(request);
    const granted = requireTriggerGrant(token);
    const target = await runs.target(token.orgId, id, generation);
    if (!target) throw notFound('Trigger');
    checkTriggerGranted(granted, target.trigger.id);
    callers.set(request, { token, target });
  }

  app.post<{ Params: { id: string }; Body: TriggerRunBody | undefined }>(
    '/triggers/:id/run',
    {
      onRequest: identifyCaller,
      preValidation: defaultRunBody,
      config: batchAnswers,
      schema: {
        operationId: 'runTrigger',
        summary: 'Run a trigger: a job on its agent; async answers at once, sync waits for the result',
        tags: ['public'],
        params: idParams('id'),
        querystring: noQuery,
        body: RunBodySchema,
        response: { ...runResponses, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { token, target } = callers.get(request)!;
      return answer(request, reply, { target, actor: apiTokenActor(token) });
    },
  );
}
