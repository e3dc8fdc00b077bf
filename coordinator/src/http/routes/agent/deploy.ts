import type { FastifyInstance } from 'fastify';
import { AgentHeader, DEVICE_STATES, DeployReportRequest } from '@drover/shared';
import { desiredManifest, recordReport } from '../../../domain/ota/agent-deploy.js';
import { requireAgent } from '../../auth/agent-signature.js';
import { errorResponses } from '../../schemas/common.js';
import { ReleaseRefSchema } from '../manage/ota-schemas.js';
import { noQuery } from './schemas.js';
import { EXAMPLE_IDS, deployReportExample, desiredManifestExample, withExample } from '../../schemas/examples.js';

/**
 * The agent's OTA endpoints (signed; docs/ota.md;
 * docs/ota.md): the signed desired manifest and the installation report.
 */

const string = { type: 'string' } as const;
const integer = { type: 'integer' } as const;

/** Every payload field is listed: an unlisted one would be dropped and break the signature. */
const ManifestPayloadSchema = {
  type: 'object',
  required: [
    'agent_id',
    'application_id',
    'slug',
    'channel',
    'update_workflow',
    'current',
    'desired',
    'min_version',
    'min_sequence',
    'forced',
    'issued_at',
    'expires_at',
    'nonce',
  ],
  properties: {
    agent_id: { type: 'string', description: 'the agent this entry was issued to' },
    application_id: string,
    slug: string,
    channel: string,
    update_workflow: string,
    current: {
      type: ['object', 'null'],
      required: ['release_id', 'version', 'sequence'],
      properties: { release_id: { type: ['string', 'null'] }, version: string, sequence: integer },
    },
    desired: {
      type: ['object', 'null'],
      required: [
        'release_id',
        'version',
        'sequence',
        'channel',
        'workflow_name',
        'checksum_sha256',
        'size',
        'download_url',
        'download_expires_in',
      ],
      properties: {
        release_id: string,
        version: string,
        sequence: integer,
        channel: string,
        workflow_name: string,
        checksum_sha256: string,
        size: integer,
        download_url: string,
        download_expires_in: integer,
        signature: {
          type: ['string', 'null'],
          description: "only when the application has release keys: the release's signature by one of them",
        },
      },
    },
    min_version: string,
    min_sequence: integer,
    forced: { type: 'boolean' },
    issued_at: { type: 'integer', description: 'Unix seconds' },
    expires_at: { type: 'integer', description: 'Unix seconds: refused from then on (DROVER_MANIFEST_TTL_SECONDS)' },
    nonce: string,
    request_nonce: {
      type: 'string',
      description:
        'the X-Nonce of the signed request this entry answers: an agent that sent it knows the entry was issued for it now',
    },
    release_keys: {
      type: 'array',
      items: string,
      description: 'only when the application has release keys: the set one of which signs every release',
    },
    release_key_generation: integer,
    release_key_rotations: {
      type: 'array',
      description: 'the rotations of the release keys, oldest first (docs/ota.md, "Release keys")',
      items: {
        type: 'object',
        required: ['app', 'generation', 'keys', 'signedBy', 'signature'],
        properties: {
          app: string,
          generation: integer,
          keys: { type: 'array', items: string },
          signedBy: string,
          signature: string,
        },
      },
    },
  },
} as const;

const DesiredManifestSchema = {
  type: 'object',
  examples: [desiredManifestExample],
  required: ['apps'],
  properties: {
    apps: {
      type: 'array',
      items: {
        type: 'object',
        required: ['payload', 'signature'],
        properties: {
          payload: ManifestPayloadSchema,
          signature: { type: 'string', description: 'standard base64 Ed25519 over the RFC 8785 payload' },
        },
      },
    },
  },
} as const;

const ReportResponseSchema = {
  type: 'object',
  examples: [deployReportExample],
  required: ['applicationId', 'current', 'desired', 'forced', 'state', 'activeJobId'],
  properties: {
    applicationId: string,
    current: ReleaseRefSchema,
    desired: ReleaseRefSchema,
    forced: { type: 'boolean' },
    state: { type: ['string', 'null'], enum: [...DEVICE_STATES, null] },
    activeJobId: { type: ['string', 'null'] },
  },
} as const;

export async function agentDeployRoutes(app: FastifyInstance): Promise<void> {
  const { ctx } = app;

  app.get(
    '/agent/deploy/desired',
    {
      schema: {
        operationId: 'getDesiredDeployments',
        summary: 'One signed manifest entry per application bound to the agent (pull fallback and self-check)',
        tags: ['agent'],
        querystring: noQuery,
        response: { 200: DesiredManifestSchema, ...errorResponses(401, 422) },
      },
    },
    async (request) => {
      const agent = await requireAgent(request);
      // Checked by requireAgent: the nonce of this signed request, which the entries carry back.
      return desiredManifest(ctx, agent, String(request.headers[AgentHeader.nonce]));
    },
  );

  app.post<{ Body: DeployReportRequest }>(
    '/agent/deploy/report',
    {
      schema: {
        operationId: 'reportDeployment',
        summary: 'The installation the agent observes; the binding is re-evaluated at once',
        tags: ['agent'],
        querystring: noQuery,
        body: withExample(DeployReportRequest, {
          applicationId: EXAMPLE_IDS.app,
          currentVersion: '2.3.1',
          currentReleaseId: 'aa11bb22-cc33-4d44-8e55-ff6677889900',
          currentSequence: 6,
          state: 'downloading',
          error: null,
        }),
        response: { 200: ReportResponseSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const agent = await requireAgent(request);
      return recordReport(ctx, agent, request.body);
    },
  );
}
