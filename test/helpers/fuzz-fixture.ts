import { generateEd25519KeyPair, type WorkflowDefinition } from '@drover/shared';
import { enrollTestAgent, workflow, type TestAgent } from './agent.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from './coordinator.js';
import { startOidcProvider, type TestOidcProvider } from './oidc-provider.js';
import type { FieldHints } from './fuzz-json.js';
import type { ApiClient } from './http.js';
import { addUser, MEMBER_PASSWORD } from './members.js';
import { bindDevices, createApp, createRelease, getBinding, release } from './ota.js';
import { defaultBindingId, sha256, uploadFile } from './storage.js';
import { issueApiToken } from './tokens.js';

/**
 * A coordinator with real state for a route fuzz test: two enrolled agents with workflows,
 * triggers, API tokens, storage bindings and files (active, pending, a job's input and output),
 * an OTA app with releases and device bindings, jobs in several states, members and a second
 * organization. The fuzzer draws path ids and body fields from it, so that requests reach the
 * handlers instead of stopping at a 404.
 */

/**
 * The kinds of ids the fixture holds; a path parameter `<kind>Id` takes one of its kind (and
 * `userCode` the code of a command line's sign-in through the browser).
 */
export const ID_KINDS = [
  'org',
  'user',
  'agent',
  'workflow',
  'trigger',
  'token',
  'enrollmentToken',
  'binding',
  'app',
  'release',
  'device',
  'job',
  'file',
  'userCode',
] as const;
export type IdKind = (typeof ID_KINDS)[number];

export interface FuzzCredentials {
  /** Owner session JWT. */
  session: string;
  /** Member session JWT. */
  memberSession: string;
  /** An API token with agent, trigger and storage grants (no rate limits). */
  apiToken: string;
  agent: TestAgent;
}

export interface FuzzFixture {
  t: TestCoordinator;
  /** The OpenID provider of the coordinator's single sign-on, so that its routes are fuzzed past "not set up". */
  provider: TestOidcProvider;
  credentials: FuzzCredentials;
  ids: Record<IdKind, string[]>;
  /** What the fuzzer's own credentials rest on: never the target of a DELETE. */
  protectedIds: ReadonlySet<string>;
  /** Valid values of body fields, by field name. */
  hints: FieldHints;
  /** Valid query strings (without `?`) of some routes, by Fastify path: presigned blob URLs. */
  queries: Record<string, string[]>;
}

const DEPLOY: WorkflowDefinition = workflow('deploy', {
  paramsSchema: [
    { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
    { name: 'replicas', type: 'number', min: 1, max: 10, default: 2 },
    { name: 'tag', type: 'string', pattern: '^v\\d+$' },
    { name: 'artifact', type: 'file' },
  ],
  timeout: 60_000,
});
const WORKFLOWS = [DEPLOY, workflow('build'), workflow('apply-update')];

function expect2xx<T>(res: { status: number; text: string; body: T }, what: string): T {
  if (res.status < 200 || res.status > 299) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res.body;
}

async function createTrigger(owner: ApiClient, orgId: string, body: Record<string, unknown>): Promise<string> {
  const created = await owner.post(`/orgs/${orgId}/triggers`, { body: { responseMode: 'async', ...body } });
  return expect2xx(created, 'create trigger').id as string;
}

async function signedJson(agent: TestAgent, method: string, path: string, body?: unknown): Promise<any> {
  return expect2xx(await agent.request(method, path, body), `${method} ${path}`);
}

const queryOf = (url: string) => new URL(url).search.slice(1);

export async function startFuzzFixture(): Promise<FuzzFixture> {
  // A read limit the fuzzer reaches only rarely: discovery is fuzzed, not its limiter.
  const provider = await startOidcProvider({ fuzz: { email: 'fuzz@example.test' } });
  let t: TestCoordinator | undefined;
  try {
    t = await startTestCoordinator({ env: { API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '1000', ...provider.env } });
    provider.attach(`${t.url}/v1/auth/oidc/callback`);
    return { ...(await populate(t)), provider };
  } catch (error) {
    await t?.close();
    await provider.close();
    throw error;
  }
}

async function populate(t: TestCoordinator): Promise<Omit<FuzzFixture, 'provider'>> {
  const { owner, orgId } = t;
  const agent = await enrollTestAgent(owner, orgId, { hostname: 'fuzz-edge-1' });
  const agent2 = await enrollTestAgent(owner, orgId, { hostname: 'fuzz-edge-2' });
  expect2xx(await agent.putWorkflows(WORKFLOWS), 'workflows');
  expect2xx(await agent2.putWorkflows([workflow('apply-update')]), 'workflows 2');
  const workflows = expect2xx(await owner.get<{ id: string }[]>(`/orgs/${orgId}/workflows`), 'workflows');

  const triggers = [
    await createTrigger(owner, orgId, {
      name: 'deploy',
      agentId: agent.agentId,
      scopeType: 'workflow',
      workflowName: 'deploy',
      allowDebug: true,
    }),
    await createTrigger(owner, orgId, { name: 'any', agentId: agent.agentId, scopeType: 'agent' }),
    // Sync runs wait for their result at most this long (documented), well within the fuzzer's bound.
    await createTrigger(owner, orgId, {
      name: 'build sync',
      agentId: agent.agentId,
      scopeType: 'workflow',
      workflowName: 'build',
      responseMode: 'sync',
      responseTimeoutMs: 1000,
    }),
    await createTrigger(owner, orgId, {
      name: 'edge 2',
      agentId: agent2.agentId,
      scopeType: 'workflow',
      workflowName: 'apply-update',
    }),
  ];

  const defaultBinding = await defaultBindingId(t);
  const spareBinding = expect2xx(
    await owner.post(`/orgs/${orgId}/storage-bindings`, { body: { name: 'spare', backend: 'local' } }),
    'binding',
  ).id as string;
  const issued = await issueApiToken(owner, orgId, [
    { type: 'agent', agentIds: [agent.agentId, agent2.agentId] },
    { type: 'trigger', triggerIds: triggers },
    { type: 'storage', bindingIds: null, permissions: ['read', 'write', 'delete'] },
  ]);
  const spareToken = await issueApiToken(owner, orgId, [
    { type: 'storage', bindingIds: [spareBinding], permissions: ['read'] },
  ]);
  const files = t.api.withToken(issued.token);
  const inDefault = { bindingId: defaultBinding };

  const artifact = (
    await uploadFile(files, 'artifact v1', { ...inDefault, cleanupRule: 'persistent', filename: 'app.tar.gz' })
  ).fileId;
  const artifact2 = (await uploadFile(files, 'artifact v2', { ...inDefault, cleanupRule: 'persistent' })).fileId;
  const ttlFile = (
    await uploadFile(files, 'scratch', { bindingId: spareBinding, cleanupRule: 'ttl', ttlSeconds: 3600 })
  ).fileId;
  const pending = expect2xx(
    await files.post('/storage/files/presign-upload', {
      body: { cleanupRule: 'persistent', bindingId: defaultBinding },
    }),
    'presign',
  ) as { fileId: string; uploadUrl: string };
  const download = expect2xx(await files.get(`/storage/files/${artifact}/download-url`), 'download url') as {
    downloadUrl: string;
  };

  const app = await createApp(owner, orgId, { slug: 'fuzz-app', updateWorkflowName: 'apply-update' });
  const published = await release(owner, orgId, app.id, { version: '1.0.0', artifactFileId: artifact });
  const draft = await createRelease(owner, orgId, app.id, { version: '2.0.0', artifactFileId: artifact2 });
  const devices = await bindDevices(owner, orgId, app.id, [agent.agentId, agent2.agentId]);
  const updateJobs = (await Promise.all(devices.map((d) => getBinding(owner, orgId, app.id, d.id))))
    .map((b) => b.activeJobId)
    .filter((id): id is string => id !== null);
  // A release in a staged rollout (its wave 1 soaks for an hour): the rollout routes have one to read and move.
  const staged = await createRelease(owner, orgId, app.id, { version: '3.0.0', artifactFileId: artifact });
  expect2xx(
    await owner.post(`/orgs/${orgId}/apps/${app.id}/releases/${staged.id}/publish`, {
      body: { rollout: { waves: [50, 100], soakSeconds: 3600, maxFailureRate: 1 } },
    }),
    'publish with a rollout',
  );

  const run = async (trigger: string, body: unknown) =>
    expect2xx(await t.api.post(`/triggers/${trigger}/run`, { token: issued.token, body }), 'run').jobId as string;
  // Several jobs in each state: the fuzzer's own moves (accept, finish, ...) use them up.
  const jobs = { pending: [] as string[], running: [] as string[], inputs: [] as string[] };
  for (let i = 0; i < 3; i++) {
    jobs.inputs.push(
      await run(triggers[0]!, { params: { env: 'staging', artifact: { __type: 'FileRef', id: artifact } } }),
    );
    jobs.pending.push(await run(triggers[1]!, { workflowName: 'build' }));
    const running = await run(triggers[0]!, { params: { env: 'prod' }, ref: 'main' });
    await signedJson(agent, 'POST', `/v1/agent/jobs/${running}/accept`);
    await signedJson(agent, 'POST', `/v1/agent/jobs/${running}/start`);
    jobs.running.push(running);
  }
  const output = await signedJson(agent, 'POST', `/v1/agent/jobs/${jobs.running[0]}/files`, {
    filename: 'out.txt',
    size: 6,
    sha256: sha256('output'),
  });

  const member = await addUser(owner, orgId, 'member@fuzz.test');
  const spareMember = await addUser(owner, orgId, 'spare@fuzz.test');
  const members = expect2xx(await owner.get<{ userId: string }[]>(`/orgs/${orgId}/members`), 'members');
  const ownerId = members.find((m) => m.userId !== member.userId && m.userId !== spareMember.userId)!.userId;
  const otherOrg = expect2xx(await owner.post('/orgs', { body: { name: 'other' } }), 'org').id as string;
  const enrollmentTokens = await Promise.all(
    [1, 2, 3].map(
      async () => expect2xx(await owner.post(`/orgs/${orgId}/enrollment-tokens`, { body: {} }), 'enroll').token,
    ),
  );

  // Ids for the calls that take one (a revocation): tokens apart from those enrollments spend.
  const revocableTokens = await Promise.all(
    [1, 2].map(
      async () => expect2xx(await owner.post(`/orgs/${orgId}/enrollment-tokens`, { body: {} }), 'enroll').id as string,
    ),
  );

  const deviceSignIns = await Promise.all(
    [1, 2, 3].map(
      async () =>
        expect2xx(await t.api.post('/auth/device', { body: {} }), 'device sign-in') as {
          deviceCode: string;
          userCode: string;
        },
    ),
  );

  const ids: Record<IdKind, string[]> = {
    org: [orgId, otherOrg],
    user: [ownerId, member.userId, spareMember.userId],
    agent: [agent.agentId, agent2.agentId],
    workflow: workflows.map((w) => w.id),
    trigger: triggers,
    token: [issued.id, spareToken.id],
    enrollmentToken: revocableTokens,
    binding: [defaultBinding, spareBinding],
    app: [app.id],
    release: [published.id, draft.id, staged.id],
    device: devices.map((d) => d.id),
    job: [...jobs.inputs, ...jobs.running, ...jobs.pending, ...updateJobs],
    file: [artifact, artifact2, ttlFile, pending.fileId, output.fileId],
    userCode: deviceSignIns.map((d) => d.userCode),
  };
  for (const [kind, list] of Object.entries(ids)) {
    if (!list.every((id) => typeof id === 'string')) throw new Error(`fixture ids of ${kind}: ${JSON.stringify(list)}`);
  }
  const grants = [
    { type: 'agent', agentIds: ids.agent },
    { type: 'trigger', triggerIds: triggers },
    { type: 'storage', bindingIds: null, permissions: ['read', 'write', 'delete'] },
  ];
  const hints: FieldHints = {
    agentId: ids.agent,
    agentIds: ids.agent,
    triggerIds: triggers,
    bindingId: ids.binding,
    bindingIds: ids.binding,
    artifactFileId: ids.file,
    applicationId: [app.id],
    currentReleaseId: ids.release,
    workflowName: ['deploy', 'build', 'apply-update', 'missing'],
    updateWorkflowName: ['apply-update', 'deploy'],
    workflows: WORKFLOWS,
    params: [
      { env: 'staging' },
      { env: 'prod', replicas: 3, tag: 'v2' },
      { env: 'staging', artifact: { __type: 'FileRef', id: artifact } },
    ],
    ref: ['main', 'v1'],
    channel: ['stable', 'beta'],
    defaultChannel: ['stable', 'beta'],
    slug: ['fuzz-app', 'fuzz-app-2'],
    version: ['1.0.0', '2.0.0', '3.0.0'],
    email: [OWNER_EMAIL, 'member@fuzz.test', 'new@fuzz.test'],
    password: [OWNER_PASSWORD, MEMBER_PASSWORD, 'wrong password'],
    // Only one owner, so the owner's session keeps its role: demoting the last owner is refused.
    role: ['member'],
    // Sync waits are bounded by the trigger's timeout; keep new ones short.
    responseMode: ['async'],
    responseTimeoutMs: [1000],
    scopes: grants,
    enrollmentToken: enrollmentTokens,
    publicKey: [1, 2, 3].map(() => generateEd25519KeyPair().publicKey),
    sha256: [sha256('output')],
    size: [6],
    deviceCode: deviceSignIns.map((d) => d.deviceCode),
  };

  return {
    t,
    credentials: {
      session: owner.token!,
      memberSession: member.client.token!,
      apiToken: issued.token,
      agent,
    },
    ids,
    protectedIds: new Set([issued.id, ownerId, agent.agentId]),
    hints,
    queries: {
      '/v1/storage/blobs/:fileId': [
        queryOf(pending.uploadUrl),
        queryOf(download.downloadUrl),
        queryOf(output.uploadUrl),
      ],
    },
  };
}
