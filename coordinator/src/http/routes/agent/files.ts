import type { FastifyInstance } from 'fastify';
import type { Agent } from '../../../domain/model/agents.js';
import { isOpenJobStatus, type Job } from '../../../domain/model/jobs.js';
import { MAX_CONTENT_TYPE_LENGTH, MAX_FILENAME_LENGTH } from '../../../domain/files/file-input.js';
import { inputFileIds } from '../../../domain/jobs/job-input-files.js';
import { AppError, notFound } from '../../../errors.js';
import { requireAgent } from '../../auth/agent-signature.js';
import { SHA256_HEX_PATTERN } from '@drover/shared';
import { emptyBody, errorResponses, idParams } from '../../schemas/common.js';
import { DownloadUrlResponseSchema, FileViewSchema, PresignUploadResponseSchema } from '../public/storage-schemas.js';
import { noQuery } from './schemas.js';
import { inputFileExample, outputFileBodyExample } from '../../schemas/examples.js';

/**
 * The agent's file endpoints (signed; docs/agent-protocol.md §6.6): a job's output files are
 * created (a presigned upload URL comes back), PUT to that URL (the URL is the credential: no
 * signature), then completed; a job's input file gets a fresh download URL when the one its job
 * event carried has expired.
 */

interface NewOutputFileBody {
  filename: string;
  contentType?: string;
  size: number;
  sha256: string;
}

const NewOutputFileBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['filename', 'size', 'sha256'],
  properties: {
    filename: { type: 'string', minLength: 1, maxLength: MAX_FILENAME_LENGTH, description: 'a basename' },
    contentType: { type: 'string', minLength: 1, maxLength: MAX_CONTENT_TYPE_LENGTH },
    size: { type: 'integer', minimum: 0, description: 'bytes; at most DROVER_MAX_FILE_BYTES' },
    sha256: { type: 'string', pattern: SHA256_HEX_PATTERN, description: 'lowercase hex SHA-256 of the content' },
  },
  examples: [outputFileBodyExample],
} as const;

/** A download URL (as `GET /storage/files/:id/download-url` answers it) with what the agent verifies. */
const InputFileResponseSchema = {
  type: 'object',
  required: [...DownloadUrlResponseSchema.required, 'size', 'sha256', 'filename', 'contentType'],
  properties: {
    ...DownloadUrlResponseSchema.properties,
    size: { type: 'integer' },
    sha256: { type: 'string' },
    filename: { type: 'string' },
    contentType: { type: 'string' },
  },
  examples: [inputFileExample],
} as const;

const agentRoute = (operationId: string, summary: string) => ({
  tags: ['agent'],
  operationId,
  summary,
  querystring: noQuery,
});

export async function agentFileRoutes(app: FastifyInstance): Promise<void> {
  const { repos, files } = app.ctx;

  /** The signing agent's job (404 otherwise, like an unknown one); with `open`, 409 once it has ended. */
  async function agentJob(agent: Agent, jobId: string, open: boolean): Promise<Job> {
    const job = await repos.jobs.findById(jobId);
    if (!job || job.agentId !== agent.id) throw notFound('Job');
    if (open && !isOpenJobStatus(job.status)) {
      throw new AppError('conflict', `The job is ${job.status}; its files can no longer be changed or fetched`, {
        details: { jobId, status: job.status },
      });
    }
    return job;
  }

  app.post<{ Params: { jobId: string }; Body: NewOutputFileBody }>(
    '/agent/jobs/:jobId/files',
    {
      schema: {
        ...agentRoute(
          'createJobOutputFile',
          'An output file of the job: a pending file in the default binding and its upload URL',
        ),
        params: idParams('jobId'),
        body: NewOutputFileBodySchema,
        response: { 201: PresignUploadResponseSchema, ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const agent = await requireAgent(request);
      const job = await agentJob(agent, request.params.jobId, true);
      const upload = await files.createJobOutputFile({ orgId: job.orgId, jobId: job.id, ...request.body });
      request.log.info({ jobId: job.id, fileId: upload.fileId, size: request.body.size }, 'job output file created');
      return reply.code(201).send(upload);
    },
  );

  app.post<{ Params: { jobId: string; fileId: string } }>(
    '/agent/jobs/:jobId/files/:fileId/complete',
    {
      schema: {
        ...agentRoute(
          'completeJobOutputFile',
          'The output file was PUT: checked against its announced size and SHA-256, it becomes active',
        ),
        params: idParams('jobId', 'fileId'),
        body: emptyBody,
        response: { 200: FileViewSchema, ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request) => {
      const agent = await requireAgent(request);
      const job = await agentJob(agent, request.params.jobId, false);
      return files.completeJobOutputFile(job.orgId, job.id, request.params.fileId.toLowerCase());
    },
  );

  app.get<{ Params: { jobId: string; fileId: string } }>(
    '/agent/jobs/:jobId/inputs/:fileId',
    {
      exposeHeadRoute: false,
      schema: {
        ...agentRoute(
          'downloadJobInputFile',
          'A fresh download URL of one of the job’s input files, with its size, SHA-256 and name',
        ),
        params: idParams('jobId', 'fileId'),
        response: { 200: InputFileResponseSchema, ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request) => {
      const agent = await requireAgent(request);
      const job = await agentJob(agent, request.params.jobId, true);
      const fileId = request.params.fileId.toLowerCase();
      if (!inputFileIds(job.params).includes(fileId)) throw notFound('Input file of this job');
      const download = (await files.agentDownloads(job.orgId, [fileId])).get(fileId);
      if (!download) {
        throw new AppError('not_found', `Input file ${fileId} is no longer available (it was deleted or expired)`);
      }
      return download;
    },
  );
}
