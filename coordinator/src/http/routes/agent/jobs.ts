import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  AppendJobLogsRequest,
  FinishJobRequest,
  JOB_STATUSES,
  RejectJobRequest,
  type JobStatusResponse,
} from '@drover/shared';
import type { TransitionResult } from '../../../domain/model/jobs.js';
import { checkOutputFileRefs } from '../../../domain/jobs/job-output-files.js';
import { rejectMessage } from '../../../domain/jobs/job-state.js';
import { plainJsonProblems } from '../../../domain/plain-json.js';
import { storableText } from '../../../domain/jobs/storable-text.js';
import { AppError, notFound, validationFailed } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { requireAgent } from '../../auth/agent-signature.js';
import { emptyBody, errorResponses, idParams } from '../../schemas/common.js';
import { noQuery } from './schemas.js';
import {
  EXAMPLE_IDS,
  finishBodyExample,
  jobStatusExample,
  logLinesBodyExample,
  withExample,
} from '../../schemas/examples.js';

interface JobParams {
  jobId: string;
}

const jobParams = idParams('jobId');

/** accept and start take no body: nothing, or `{}`. */

const JobStatusResponseSchema = {
  type: 'object',
  required: ['jobId', 'status'],
  properties: { jobId: { type: 'string' }, status: { type: 'string', enum: JOB_STATUSES } },
  examples: [jobStatusExample],
} as const;

const AppendLogsResponseSchema = {
  type: 'object',
  required: ['jobId', 'status', 'accepted'],
  properties: { ...JobStatusResponseSchema.properties, accepted: { type: 'integer' } },
  examples: [{ jobId: EXAMPLE_IDS.job, status: 'running', accepted: 2 }],
} as const;

const WHAT: Record<'accept' | 'reject' | 'start' | 'finish', string> = {
  accept: 'accepted',
  reject: 'rejected',
  start: 'started',
  finish: 'finished with this result',
};

/**
 * 200 for a move made now or made before (a harmless repeat), 409 for an impossible one, 404 for
 * a job that is not the signing agent's. `onApplied` runs after the commit of a move made now.
 */
function answer(
  result: TransitionResult,
  move: keyof typeof WHAT,
  jobId: string,
  onApplied?: () => void,
): JobStatusResponse {
  if (result.outcome === 'not_found') throw notFound('Job');
  if (result.outcome === 'conflict') {
    throw new AppError('conflict', `The job is ${result.job.status}; it cannot be ${WHAT[move]}`, {
      details: { jobId, status: result.job.status },
    });
  }
  if (result.outcome === 'applied') onApplied?.();
  return { jobId, status: result.job.status };
}

const routeSchema = (
  operationId: string,
  summary: string,
  extra: Record<string, unknown> = {},
  okSchema: object = JobStatusResponseSchema,
) => ({
  operationId,
  summary,
  tags: ['agent'],
  params: jobParams,
  querystring: noQuery,
  response: { 200: okSchema, ...errorResponses(401, 404, 409, 422) },
  ...extra,
});

/**
 * The agent's reports on its jobs (signed; docs/agent-protocol.md §6 and docs/jobs.md):
 * accept, reject, start, logs and finish under `/v1/agent/jobs/:jobId/`.
 */
export async function agentJobRoutes(app: FastifyInstance): Promise<void> {
  const { repos, clock, jobEvents, config } = app.ctx;
  const time = () => ({ at: isoNow(clock), deadlineGraceMs: config.jobDeadlineGraceMs });
  const logMove = (request: FastifyRequest, jobId: string, move: string, r: TransitionResult) => {
    if (r.outcome !== 'not_found')
      request.log.info({ jobId, move, outcome: r.outcome, status: r.job.status }, 'job report');
  };

  app.post<{ Params: JobParams }>(
    '/agent/jobs/:jobId/accept',
    {
      schema: routeSchema('acceptJob', 'The agent took the job into its queue: pending → queued', { body: emptyBody }),
    },
    async (request) => {
      const agent = await requireAgent(request);
      const { jobId } = request.params;
      const result = await repos.jobs.accept(agent.id, jobId, time());
      logMove(request, jobId, 'accept', result);
      return answer(result, 'accept', jobId);
    },
  );

  app.post<{ Params: JobParams; Body: RejectJobRequest }>(
    '/agent/jobs/:jobId/reject',
    {
      schema: routeSchema('rejectJob', 'The agent refused the job (queue full, unknown workflow): pending → rejected', {
        body: withExample(RejectJobRequest, { reason: 'queue_full', message: 'the queue holds 4 jobs already' }),
      }),
    },
    async (request) => {
      const agent = await requireAgent(request);
      const { jobId } = request.params;
      const message = rejectMessage(request.body.reason, request.body.message);
      const result = await repos.jobs.reject(agent.id, jobId, message, isoNow(clock));
      logMove(request, jobId, 'reject', result);
      return answer(result, 'reject', jobId, () => jobEvents.jobFinished(jobId));
    },
  );

  app.post<{ Params: JobParams }>(
    '/agent/jobs/:jobId/start',
    {
      schema: routeSchema('startJob', 'The job started running: pending or queued → running', { body: emptyBody }),
    },
    async (request) => {
      const agent = await requireAgent(request);
      const { jobId } = request.params;
      const result = await repos.jobs.start(agent.id, jobId, time());
      logMove(request, jobId, 'start', result);
      return answer(result, 'start', jobId, () => jobEvents.jobStarted(result.job!));
    },
  );

  app.post<{ Params: JobParams; Body: AppendJobLogsRequest }>(
    '/agent/jobs/:jobId/logs',
    {
      schema: routeSchema(
        'appendJobLogs',
        'Log lines of an open job; a line whose seq is already stored is ignored; 409 once the job has ended',
        { body: withExample(AppendJobLogsRequest, logLinesBodyExample) },
        AppendLogsResponseSchema,
      ),
    },
    async (request) => {
      const agent = await requireAgent(request);
      const { jobId } = request.params;
      const stored = await app.ctx.jobLogs.append(agent.id, jobId, request.body.lines);
      return { jobId, status: stored.job.status, accepted: stored.accepted };
    },
  );

  app.post<{ Params: JobParams; Body: FinishJobRequest }>(
    '/agent/jobs/:jobId/finish',
    {
      schema: routeSchema(
        'finishJob',
        'The job ended: its one terminal result (a resend of the same result is harmless)',
        {
          body: withExample(FinishJobRequest, finishBodyExample),
        },
      ),
    },
    async (request) => {
      const agent = await requireAgent(request);
      const { jobId } = request.params;
      // Output is stored, compared with a resent result and served: plain JSON only.
      const problems = plainJsonProblems(request.body.output, 'body.output');
      if (problems.length > 0) throw validationFailed(problems);
      // Output FileRefs must name active output files of this job; others are left out (logged).
      const { output, dropped } = await checkOutputFileRefs(app.ctx.files, agent.orgId, jobId, request.body.output);
      for (const d of dropped)
        request.log.warn({ jobId, key: d.key, fileId: d.fileId }, `output FileRef dropped: ${d.reason}`);
      const { errorMessage } = request.body;
      const report = {
        ...request.body,
        errorMessage: errorMessage === null ? null : storableText(errorMessage),
        output,
      };
      const result = await repos.jobs.finish(agent.id, jobId, report, isoNow(clock));
      logMove(request, jobId, 'finish', result);
      return answer(result, 'finish', jobId, () => jobEvents.jobFinished(jobId));
    },
  );
}
