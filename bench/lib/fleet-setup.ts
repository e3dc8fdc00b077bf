import type http from 'node:http';
import type { Labels, WorkflowDefinition } from '@drover/shared';
import { memoryMb } from './child-coordinator.js';
import { jsonCall, mapLimit, request, SimAgent, type HttpAnswer } from './fleet-sim.js';
import { startBenchPostgres, type BenchPostgres } from './postgres.js';

/**
 * The setup the fleet benchmarks share (bench/fleet.ts, bench/fleet-batch.ts, bench/fleet-pool.ts),
 * all through the public APIs as an operator and agents would: the coordinator's environment and
 * database, the owner's session, the simulated agents enrolled (bench/lib/fleet-sim.ts) and their
 * streams opened, the trigger the calls go to and its API token, and the calls themselves.
 */

/** A call's body for the `deploy` workflow (bench/lib/seed.ts): its one required parameter. */
export const DEPLOY_CALL_BODY = JSON.stringify({ params: { env: 'staging' } });

/**
 * The coordinator's environment for a simulated fleet and, with `postgres`, its PostgreSQL server
 * (bench/lib/postgres.ts; with `statements`, pg_stat_statements loaded and created) and a database
 * of its own on it.
 */
export async function fleetEnvironment(
  options: { postgres?: boolean; statements?: boolean } = {},
): Promise<{ env: Record<string, string>; pg: BenchPostgres | undefined }> {
  // Every simulated agent connects from 127.0.0.1: no per-address connection limit here.
  const env: Record<string, string> = { DROVER_MAX_CONNECTIONS_PER_CLIENT: '0' };
  if (!options.postgres) return { env, pg: undefined };
  const pg = await startBenchPostgres({ statements: options.statements ?? false });
  if (options.statements) await pg.sql('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  env.DROVER_DATABASE_URL = await pg.createDatabase();
  return { env, pg };
}

/** A call of the organization's management API (`/v1/orgs/<id><path>`): GET without a body, POST with one. */
export type Manage = (path: string, body?: unknown, expected?: number) => Promise<any>;

/** The management API of organization `orgId` of the coordinator at `origin`, with a member's session. */
export function managementApi(origin: string, session: string, orgId: string, agent: http.Agent): Manage {
  return (path, body, expected = 200) =>
    jsonCall(`${origin}/v1/orgs/${orgId}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      token: session,
      body,
      expected,
      agent,
    });
}

/**
 * Signs `owner` in (`POST /v1/auth/login`); their organization is `orgId`, or else the first they
 * belong to (`GET /v1/orgs`).
 */
export async function signIn(
  origin: string,
  owner: { email: string; password: string },
  agent: http.Agent,
  orgId?: string,
): Promise<{ session: string; orgId: string; manage: Manage }> {
  const session = (await jsonCall(`${origin}/v1/auth/login`, { method: 'POST', body: owner })).token as string;
  const org = orgId ?? ((await jsonCall(`${origin}/v1/orgs`, { token: session }))[0].id as string);
  return { session, orgId: org, manage: managementApi(origin, session, org, agent) };
}

/**
 * Enrolls `count` simulated agents, `concurrency` at a time, each with an enrollment token of its
 * own; with `report`, each then reports its workflows and its labels (`labels(index)`).
 */
export function enrollFleet(options: {
  origin: string;
  manage: Manage;
  count: number;
  concurrency: number;
  report?: { workflows: readonly WorkflowDefinition[]; labels: (index: number) => Labels; agent: http.Agent };
}): Promise<SimAgent[]> {
  const { origin, manage, report } = options;
  return mapLimit(
    Array.from({ length: options.count }, (_, i) => i),
    options.concurrency,
    async (i) => {
      const { token } = await manage('/enrollment-tokens', {}, 201);
      const agent = await SimAgent.enroll(origin, token as string, i);
      if (report) {
        await agent.reportWorkflows(origin, report.workflows, report.agent);
        await agent.reportLabels(origin, report.labels(i), report.agent);
      }
      return agent;
    },
  );
}

const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));

/**
 * Opens every agent's stream, 200 at a time, and reads the coordinator's (process `pid`) VmRSS in
 * MiB before (after a second of rest) and after (3 s after the last stream opened); `connectS`:
 * how long the streams took to open, in seconds.
 */
export async function connectFleet(
  agents: readonly SimAgent[],
  origin: string,
  pid: number,
): Promise<{ rssBefore: number; rssConnected: number; connectS: number }> {
  await sleep(1000);
  const rssBefore = memoryMb(pid);
  const started = performance.now();
  await mapLimit(agents, 200, (a) => a.connect(origin));
  const connectS = (performance.now() - started) / 1000;
  await sleep(3000);
  return { rssBefore, rssConnected: memoryMb(pid), connectS };
}

/**
 * A webhook trigger named `name` on the agents of `agentSelector` (`fanout`: every one, or one of
 * the pool) that runs the `workflowName` workflow asynchronously, and an API token of the same
 * name that may call it, without limits.
 */
export async function triggerWithToken(
  manage: Manage,
  options: { name: string; agentSelector: string; fanout: 'all' | 'one'; workflowName: string },
): Promise<{ triggerId: string; token: string }> {
  const { name, agentSelector, fanout, workflowName } = options;
  const trigger = await manage(
    '/triggers',
    { name, agentSelector, fanout, scopeType: 'workflow', workflowName, responseMode: 'async' },
    201,
  );
  const { token } = await manage(
    '/api-tokens',
    {
      name,
      scopes: [{ type: 'trigger', triggerIds: [trigger.id] }],
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    },
    201,
  );
  return { triggerId: trigger.id as string, token: token as string };
}

/** One call of a trigger (`POST <route>`, `/v1/triggers/<id>/run`) with its API token; it must answer 202. */
export async function callTrigger(route: string, token: string, body: string, agent: http.Agent): Promise<HttpAnswer> {
  const answer = await request(route, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body, agent });
  if (answer.status !== 202) throw new Error(`run: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
  return answer;
}

/**
 * Uploads `content` through the storage API (`base`: `<origin>/v1`) with a storage token, as a
 * persistent file (a release's artifact); returns the file's id.
 */
export async function uploadArtifact(base: string, token: string, content: string): Promise<string> {
  const presign = await jsonCall(`${base}/storage/files/presign-upload`, {
    method: 'POST',
    token,
    body: { cleanupRule: 'persistent', filename: 'fleet.tar.gz' },
    expected: 201,
  });
  const put = await request(presign.uploadUrl as string, { method: 'PUT', headers: presign.headers, body: content });
  if (put.status !== 200) throw new Error(`PUT: ${put.status} ${put.text}`);
  await jsonCall(`${base}/storage/files/${presign.fileId}/complete`, { method: 'POST', token });
  return presign.fileId as string;
}

/** The update workflow the OTA benchmarks' applications name (the simulated agents run it). */
export const UPDATE_WORKFLOW: WorkflowDefinition = {
  name: 'apply-update',
  description: 'installs a release',
  version: '1.0.0',
  paramsSchema: [],
  secretsKeys: [],
  timeout: 600_000,
  steps: [{ run: './install.sh' }],
};

/** An API token allowed to read and write every storage binding (to upload releases' artifacts). */
export async function storageToken(manage: Manage, name: string): Promise<string> {
  const issued = await manage(
    '/api-tokens',
    {
      name,
      scopes: [{ type: 'storage', bindingIds: null, permissions: ['read', 'write'] }],
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    },
    201,
  );
  return issued.token as string;
}

/**
 * An application updating with UPDATE_WORKFLOW, with these agents bound (channel `stable`, 1,000
 * per call); `agentOf` gives each binding's agent.
 */
export async function appWithDevices(
  manage: Manage,
  slug: string,
  agentIds: readonly string[],
): Promise<{ id: string; agentOf: Map<string, string> }> {
  const app = await manage('/apps', { slug, updateWorkflowName: UPDATE_WORKFLOW.name }, 201);
  const agentOf = new Map<string, string>();
  for (let i = 0; i < agentIds.length; i += 1000) {
    const bound = (await manage(`/apps/${app.id}/devices`, { agentIds: agentIds.slice(i, i + 1000) }, 201)) as {
      id: string;
      agentId: string;
    }[];
    for (const b of bound) agentOf.set(b.id, b.agentId);
  }
  return { id: app.id as string, agentOf };
}
