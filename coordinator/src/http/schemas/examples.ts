/**
 * Examples of the API's bodies for the OpenAPI document (and so the reference at /docs): one
 * organization's objects, with ids that agree across operations. A schema carries its example as
 * JSON Schema `examples`, which the document shows as the body's example; the OpenAPI test checks
 * that every operation has them and that each example is valid against its schema.
 */

/** The schema with its example. */
export function withExample<S extends object>(schema: S, example: unknown): S & { examples: unknown[] } {
  return { ...schema, examples: [example] };
}

/** An array of `items` (a schema with an example), its example a list of that one item. */
export function listOf<S extends { examples: readonly unknown[] }>(items: S) {
  return { type: 'array', items, examples: [[items.examples[0]]] } as const;
}

export const EXAMPLE_IDS = {
  org: '6f1c2a9e-3b4d-4e8f-9a01-2b3c4d5e6f70',
  user: '8f6ab349-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
  agent: '3d2b1f0e-9c8d-4b7a-8e6f-5a4b3c2d1e0f',
  workflow: 'b7e6d5c4-a3b2-4c1d-9e0f-1a2b3c4d5e6f',
  trigger: 'c0ffee00-1234-4abc-8def-0123456789ab',
  job: '01a21224-06c1-4b6e-9f3a-7d8e9f0a1b2c',
  token: 'e3c4994e-5f6a-4b7c-8d9e-0f1a2b3c4d5e',
  enrollmentToken: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
  binding: '990897ae-1b2c-4d3e-8f4a-5b6c7d8e9f0a',
  file: '5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d1c',
  app: 'd4c3b2a1-0f9e-4d8c-8b7a-6f5e4d3c2b1a',
  release: 'f0e1d2c3-b4a5-4968-8778-695a4b3c2d1e',
  device: '7a6b5c4d-3e2f-4a1b-8c0d-9e8f7a6b5c4d',
  chatIntegration: '2b3c4d5e-6f70-4a81-9b2c-3d4e5f6a7b8c',
  invitation: '4c5d6e7f-8091-4a2b-9c3d-4e5f60718293',
} as const;

const ID = EXAMPLE_IDS;
const AT = '2026-11-25T09:58:05.856Z';
const LATER = '2026-11-25T10:02:41.120Z';
const SHA256 = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
const BASE = 'https://drover.example.com';

export const orgExample = { id: ID.org, name: 'acme', role: 'owner', createdAt: AT };
export const userExample = { id: ID.user, email: 'alice@example.com', createdAt: AT };
export const memberExample = {
  userId: ID.user,
  email: 'alice@example.com',
  role: 'owner',
  joinedAt: AT,
  ssoGroup: null,
};
export const invitationExample = {
  id: ID.invitation,
  orgId: ID.org,
  orgName: 'acme',
  email: 'bob@example.com',
  role: 'member',
  status: 'pending',
  invitedBy: { userId: ID.user, email: 'alice@example.com' },
  createdAt: AT,
  expiresAt: '2026-12-02T09:58:05.856Z',
  endedAt: null,
};

export const agentExample = {
  id: ID.agent,
  name: 'edge-lab-01',
  hostname: 'edge-lab-01',
  os: 'linux x64',
  agentVersion: '0.1.0',
  status: 'connected',
  lastSeenAt: LATER,
  enrolledAt: AT,
  labels: { arch: 'x64', os: 'linux', role: 'gateway', site: 'munich' },
  reportedLabels: { arch: 'x64', os: 'linux', role: 'gateway', site: 'berlin' },
  operatorLabels: { site: 'munich' },
  revision: 2,
};

/** The agent as discovery shows it: the specification's fields. */
export const publicAgentExample = {
  id: ID.agent,
  name: 'edge-lab-01',
  hostname: 'edge-lab-01',
  os: 'linux x64',
  agentVersion: '0.1.0',
  status: 'connected',
  lastSeenAt: LATER,
  enrolledAt: AT,
};

export const paramsSchemaExample = [
  { name: 'who', type: 'string', required: true, description: 'whom to greet', pattern: '^[A-Za-z ]+$' },
  { name: 'times', type: 'number', default: 1, min: 1, max: 10 },
];

export const workflowExample = {
  id: ID.workflow,
  agentId: ID.agent,
  name: 'hello',
  description: 'Greets someone',
  version: '1.2.0',
  paramsSchema: paramsSchemaExample,
};

export const managedWorkflowExample = {
  ...workflowExample,
  rateLimitPerMinute: 10,
  rateLimitPerHour: null,
  rateLimitPerDay: 1000,
  createdAt: AT,
  updatedAt: LATER,
};

export const rateLimitExample = { perMinute: 60, perHour: null, perDay: 5000 };

export const apiTokenExample = {
  id: ID.token,
  name: 'ci',
  userId: ID.user,
  hint: 'drv_…9f2c',
  scopes: [
    { type: 'trigger', triggerIds: [ID.trigger] },
    { type: 'storage', bindingIds: [ID.binding], permissions: ['read', 'write'] },
  ],
  rateLimit: rateLimitExample,
  expiresAt: '2027-06-30T00:00:00.000Z',
  revokedAt: null,
  createdAt: AT,
};

export const issueApiTokenBodyExample = {
  name: 'ci',
  scopes: [
    { type: 'trigger', triggerIds: [ID.trigger] },
    { type: 'storage', bindingIds: [ID.binding], permissions: ['read', 'write'] },
  ],
  rateLimitPerMinute: 60,
  rateLimitPerDay: 5000,
  expiresAt: '2027-06-30T00:00:00Z',
};

export const publicTokenExample = {
  name: apiTokenExample.name,
  scopes: apiTokenExample.scopes,
  rateLimit: rateLimitExample,
  expiresAt: apiTokenExample.expiresAt,
};

export const storageBindingExample = {
  id: ID.binding,
  name: 'artifacts',
  backend: 's3',
  isDefault: false,
  createdAt: AT,
};

export const fileExample = {
  id: ID.file,
  bindingId: ID.binding,
  filename: 'build.tar.gz',
  contentType: 'application/gzip',
  size: 1048576,
  status: 'active',
  cleanupRule: 'persistent',
  expiresAt: null,
  deletedAt: null,
  createdAt: AT,
};

export const presignUploadExample = {
  fileId: ID.file,
  uploadUrl: `${BASE}/v1/storage/blobs/${ID.file}?expires=1795600000&signature=3q2-7w`,
  method: 'PUT',
  headers: { 'content-type': 'application/gzip' },
  expiresInSeconds: 900,
};

export const downloadUrlExample = {
  downloadUrl: `${BASE}/v1/storage/blobs/${ID.file}?expires=1795600000&signature=Zm9v`,
  expiresInSeconds: 900,
};

export const auditEntryExample = {
  id: 29,
  action: 'api_token.revoke',
  actorType: 'user',
  actorId: ID.user,
  targetType: 'api_token',
  targetId: ID.token,
  metadata: { name: 'ci' },
  createdAt: AT,
};

export const jobExample = {
  id: ID.job,
  number: 1842,
  orgId: ID.org,
  kind: 'trigger',
  source: 'webhook',
  status: 'success',
  triggerId: ID.trigger,
  agentId: ID.agent,
  batchId: null,
  workflowId: ID.workflow,
  workflowName: 'hello',
  ref: 'main',
  debug: false,
  params: { who: 'Drover' },
  output: { greeting: 'Hello, Drover!' },
  exitCode: 0,
  errorMessage: null,
  forced: false,
  forceReason: null,
  userId: ID.user,
  createdAt: AT,
  queuedAt: '2026-11-25T09:58:05.901Z',
  startedAt: '2026-11-25T09:58:06.012Z',
  finishedAt: '2026-11-25T09:58:06.530Z',
  cancelRequestedAt: null,
  chatOrigin: null,
};

export const runningJobExample = {
  ...jobExample,
  status: 'running',
  output: null,
  exitCode: null,
  finishedAt: null,
  cancelRequestedAt: LATER,
};

export const jobDetailExample = {
  ...jobExample,
  applicationId: null,
  logs: [
    { seq: 1, at: '2026-11-25T09:58:06.020Z', stream: 'system', step: null, text: 'step 1 (greet) started' },
    { seq: 2, at: '2026-11-25T09:58:06.480Z', stream: 'stdout', step: 1, text: 'Hello, Drover!' },
  ],
  logsMore: false,
  logsTotal: 2,
  logsDropped: 0,
  notifications: [
    {
      kind: 'notification',
      provider: 'slack',
      teamId: 'T0123ABCD',
      channelId: 'C0456EFGH',
      status: 'sent',
      attempts: 1,
      lastError: null,
      createdAt: '2026-11-25T09:58:06.600Z',
      nextAttemptAt: null,
      sentAt: '2026-11-25T09:58:07.105Z',
      failedAt: null,
    },
  ],
};

export const occurrenceExample = {
  scheduledAt: '2026-11-25T10:00:00.000Z',
  outcome: 'job_created',
  jobId: ID.job,
  batchId: null,
  jobStatus: 'success',
  reason: null,
  firstScheduledAt: null,
  recordedAt: '2026-11-25T10:00:00.012Z',
};

export const createTriggerBodyExample = {
  name: 'nightly build',
  type: 'cron',
  agentId: ID.agent,
  agentSelector: null,
  fanout: null,
  maxParallel: null,
  scopeType: 'workflow',
  workflowName: 'hello',
  responseMode: 'async',
  cronExpression: '0 2 * * *',
  cronTimezone: 'Europe/Paris',
  params: { who: 'night shift' },
  ref: 'main',
};

export const triggerExample = {
  id: ID.trigger,
  name: 'nightly build',
  type: 'cron',
  agentId: ID.agent,
  agentSelector: null,
  fanout: null,
  maxParallel: null,
  scopeType: 'workflow',
  workflowName: 'hello',
  responseMode: 'async',
  responseTimeoutMs: 30000,
  allowedRefs: null,
  allowDebug: false,
  notifyProvider: null,
  notifyTeamId: null,
  notifyChannelId: null,
  notifyOn: 'none',
  cronExpression: '0 2 * * *',
  cronTimezone: 'Europe/Paris',
  cronEnabled: true,
  cronMissedPolicy: 'skip',
  cronOverlapPolicy: 'skip',
  params: { who: 'night shift' },
  ref: 'main',
  chatTeamId: null,
  chatChannelId: null,
  chatKeyword: null,
  chatAllowedUserIds: null,
  createdAt: AT,
  updatedAt: AT,
  nextRunAt: '2026-11-26T01:00:00.000Z',
  nextRuns: [{ at: '2026-11-26T01:00:00.000Z', localTime: '2026-11-26 02:00 (+01:00)' }],
  lastOccurrences: [occurrenceExample],
};

export const runBodyExample = { ref: 'main', params: { who: 'Drover' } };
export const asyncRunExample = { jobId: ID.job, status: 'pending', statusUrl: `/api/jobs/${ID.job}` };
export const syncRunExample = {
  jobId: ID.job,
  status: 'success',
  exitCode: 0,
  errorMessage: null,
  output: { greeting: 'Hello, Drover!' },
  statusUrl: `/api/jobs/${ID.job}`,
};

export const appExample = {
  id: ID.app,
  slug: 'kiosk',
  updateWorkflowName: 'install-kiosk',
  defaultChannel: 'stable',
  notify: null,
  deviceSelector: 'role=kiosk',
  maintenanceWindow: { cron: '0 2 * * *', timezone: 'Europe/Berlin', durationMinutes: 120 },
  nextWindows: [
    {
      opensAt: '2026-11-26T01:00:00.000Z',
      closesAt: '2026-11-26T03:00:00.000Z',
      localOpensAt: '2026-11-26T02:00:00+01:00',
    },
    {
      opensAt: '2026-11-27T01:00:00.000Z',
      closesAt: '2026-11-27T03:00:00.000Z',
      localOpensAt: '2026-11-27T02:00:00+01:00',
    },
    {
      opensAt: '2026-11-28T01:00:00.000Z',
      closesAt: '2026-11-28T03:00:00.000Z',
      localOpensAt: '2026-11-28T02:00:00+01:00',
    },
  ],
  releaseKeys: ['u8ZB4n3G0b9oH1pQ2rS3tU4vW5xY6zA7bC8dE9fG0hI='],
  releaseKeyGeneration: 0,
  createdAt: AT,
};

export const appUpdateExample = { ...appExample, deviceGroup: { matching: 12, bound: 3, unbound: 1 } };

export const releaseExample = {
  id: ID.release,
  applicationId: ID.app,
  version: '2.4.0',
  sequence: 7,
  channel: 'stable',
  updatePolicy: 'optional',
  status: 'published',
  artifactFileId: ID.file,
  checksumSha256: SHA256,
  size: 1048576,
  notes: 'Faster start-up',
  signature: 'kq2m…base64…Ag==',
  createdAt: AT,
  publishedAt: LATER,
  yankedAt: null,
};

const currentRef = { releaseId: 'aa11bb22-cc33-4d44-8e55-ff6677889900', version: '2.3.1', sequence: 6 };
const desiredRef = { releaseId: ID.release, version: '2.4.0', sequence: 7 };

export const deviceExample = {
  id: ID.device,
  applicationId: ID.app,
  agentId: ID.agent,
  channel: 'stable',
  origin: 'selector',
  current: currentRef,
  desired: desiredRef,
  forced: false,
  state: 'downloading',
  error: null,
  activeJobId: ID.job,
  cancelledJobId: null,
  lastReportAt: LATER,
  waitingForWindow: false,
  nextWindowAt: null,
};

export const deviceCountExample = {
  channel: 'stable',
  origin: 'selector',
  current: currentRef,
  desiredReleaseId: desiredRef.releaseId,
  updating: true,
  state: 'downloading',
  devices: 120,
};

export const deviceGroupPreviewExample = {
  matching: 2,
  names: ['kiosk-berlin-01', 'kiosk-berlin-02'],
  toBind: 1,
  toRemove: 0,
};

export const deployReportExample = {
  applicationId: ID.app,
  current: currentRef,
  desired: desiredRef,
  forced: false,
  state: 'downloading',
  activeJobId: ID.job,
};

export const desiredManifestExample = {
  apps: [
    {
      payload: {
        agent_id: ID.agent,
        application_id: ID.app,
        slug: 'kiosk',
        channel: 'stable',
        update_workflow: 'install-kiosk',
        current: { release_id: currentRef.releaseId, version: '2.3.1', sequence: 6 },
        desired: {
          release_id: ID.release,
          version: '2.4.0',
          sequence: 7,
          channel: 'stable',
          workflow_name: 'install-kiosk',
          checksum_sha256: SHA256,
          size: 1048576,
          download_url: downloadUrlExample.downloadUrl,
          download_expires_in: 900,
        },
        min_version: '2.0.0',
        min_sequence: 3,
        forced: false,
        issued_at: 1795600000,
        expires_at: 1795603600,
        nonce: 'q7Yb2c9L0kX1',
        request_nonce: 'c2VudC1ieS10aGUtYWdlbnQ',
      },
      signature: 'MEUCIQD3kz…base64…Qw==',
    },
  ],
};

export const enrollBodyExample = {
  enrollmentToken: 'drve_4kq9x2m7p1w8z3v6b5n0c',
  publicKey: 'u8ZB4n3G0b9oH1pQ2rS3tU4vW5xY6zA7bC8dE9fG0hI=',
  hostname: 'edge-lab-01',
  os: 'linux x64',
  agentVersion: '0.1.0',
  name: 'edge-lab-01',
};

export const enrollAnswerExample = {
  agentId: ID.agent,
  orgId: ID.org,
  serverPublicKey: 'Zm9vYmFyYmF6cXV4MDEyMzQ1Njc4OWFiY2RlZmdoaWo=',
};

export const workflowDefinitionExample = {
  name: 'hello',
  description: 'Greets someone',
  version: '1.2.0',
  paramsSchema: paramsSchemaExample,
  secretsKeys: ['GREETING_API_KEY'],
  timeout: 60000,
  steps: [{ name: 'greet', run: 'echo "Hello, $DROVER_PARAM_WHO!"', shell: true }],
};

export const agentSelfExample = { agentId: ID.agent, orgId: ID.org, name: 'edge-lab-01', status: 'connected' };

export const jobStatusExample = { jobId: ID.job, status: 'queued' };

export const logLinesBodyExample = {
  lines: [
    { seq: 1, at: '2026-11-25T09:58:06.020Z', stream: 'system', step: null, text: 'step 1 (greet) started' },
    { seq: 2, at: '2026-11-25T09:58:06.480Z', stream: 'stdout', step: 0, text: 'Hello, Drover!' },
  ],
};

export const finishBodyExample = {
  status: 'success',
  exitCode: 0,
  errorMessage: null,
  output: { greeting: 'Hello, Drover!' },
  finishedAt: '2026-11-25T09:58:06.530Z',
};

export const outputFileBodyExample = {
  filename: 'report.pdf',
  contentType: 'application/pdf',
  size: 52311,
  sha256: SHA256,
};

export const inputFileExample = {
  ...downloadUrlExample,
  size: 1048576,
  sha256: SHA256,
  filename: 'build.tar.gz',
  contentType: 'application/gzip',
};

export const storedBlobExample = { fileId: ID.file, size: 1048576, sha256: SHA256 };

export const enrollmentTokenExample = {
  id: ID.enrollmentToken,
  name: 'lab machines',
  token: 'drve_4kq9x2m7p1w8z3v6b5n0c',
  expiresAt: '2026-11-25T10:58:05.856Z',
};

export const signInAnswerExample = {
  token: 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiI4ZjZhYjM0OSJ9.c2lnbmF0dXJl',
  expiresAt: '2026-11-25T21:58:05.856Z',
  user: userExample,
};

export const sessionExample = { user: userExample, expiresAt: '2026-11-25T21:58:05.856Z' };
