import type { WorkflowDefinition } from '@drover/shared';
import { enrollTestAgent, workflow, type TestAgent } from './agent.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from './coordinator.js';
import type { ApiClient, ApiResponse } from './http.js';
import { fakeClock } from './members.js';
import { issueApiToken, type TokenLimits } from './tokens.js';

/**
 * A coordinator with a fake clock (10:00:01 UTC of today: every window starts fresh, and a test
 * that does not move the clock never straddles two windows), an enrolled agent with workflows,
 * and shortcuts for triggers, tokens, calls and job results, for trigger-run tests.
 */

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export type FakeClock = ReturnType<typeof fakeClock>;

/** A job as the dashboard API answers it (`GET /v1/jobs/:id`, the job list). */
export interface JobBody {
  id: string;
  kind: 'trigger' | 'update';
  source: string;
  status: string;
  triggerId: string | null;
  agentId: string;
  workflowId: string | null;
  workflowName: string;
  ref: string | null;
  debug: boolean;
  params: Record<string, unknown>;
  output: Record<string, unknown> | null;
  exitCode: number | null;
  errorMessage: string | null;
  forced: boolean;
  forceReason: string | null;
  userId: string | null;
  createdAt: string;
  queuedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface RunFixture {
  t: TestCoordinator;
  clock: FakeClock;
  agent: TestAgent;
  /** An owner session valid at the fake clock's time. */
  owner(): Promise<ApiClient>;
  /** Reports the agent's workflow set, signed at the fake clock's time. */
  putWorkflows(agent: TestAgent, defs: WorkflowDefinition[]): Promise<void>;
  /** Creates a trigger through the management API (webhook, async, workflow-scoped by default). */
  createTrigger(extra?: Record<string, unknown>, agent?: TestAgent): Promise<{ id: string } & Record<string, any>>;
  /** Issues an API token granting these triggers; returns the plaintext. */
  token(triggerIds: string[], limits?: TokenLimits, issuer?: ApiClient): Promise<string>;
  /** `POST /v1/triggers/:id/run`. */
  run(token: string | null, triggerId: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  /** The job through the API (`GET /v1/jobs/:id`). */
  job(jobId: string): Promise<JobBody>;
  /** The trigger's jobs through the API (every page of the job list), oldest first. */
  jobsOf(triggerId: string): Promise<JobBody[]>;
  /** Ends a job of the fixture's agent as the agent would (signed start, then finish). */
  finish(
    jobId: string,
    result: {
      status: 'success' | 'failed' | 'timed_out' | 'cancelled';
      exitCode: number | null;
      errorMessage?: string | null;
      output?: object;
    },
  ): Promise<void>;
  /** The fixture's agent refuses a pending job (queue full). */
  reject(jobId: string, message: string): Promise<void>;
  /** Resolves with the id of the next job created for the agent. */
  nextJob(agentId?: string): Promise<string>;
  /** The id of the agent's workflow `name`, from the workflow list. */
  workflowId(name: string, agentId?: string): Promise<string>;
  setWorkflowLimits(workflowId: string, limits: Record<string, number | null>): Promise<void>;
  close(): Promise<void>;
}

/**
 * A webhook trigger, created by the owner, on the agent's workflow `workflowName` (async unless
 * `extra` says otherwise), and an API token that may run it.
 */
export async function runnableTrigger(
  t: TestCoordinator,
  agentId: string,
  workflowName: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
    body: {
      name: `${workflowName} trigger`,
      agentId,
      scopeType: 'workflow',
      workflowName,
      responseMode: 'async',
      ...extra,
    },
  });
  if (res.status !== 201) throw new Error(`create trigger: ${res.status} ${res.text}`);
  const { token } = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [res.body.id] }]);
  return { id: res.body.id as string, token };
}

/** Today at 10:00:01 UTC. */
export function windowAlignedStart(): number {
  const now = Date.now();
  return now - (now % DAY) + 10 * HOUR + 1000;
}

export const WORKFLOWS: WorkflowDefinition[] = [
  workflow('deploy', {
    paramsSchema: [
      { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
      { name: 'replicas', type: 'number', min: 1, max: 10, default: 2 },
      { name: 'tag', type: 'string', pattern: '^v\\d+$' },
      { name: 'dryRun', type: 'boolean' },
    ],
    timeout: 60_000,
  }),
  workflow('build'),
  workflow('lint'),
];

export async function startRunFixture(
  defs: WorkflowDefinition[] = WORKFLOWS,
  /** Extra coordinator settings (chat providers' settings). */
  env: Record<string, string> = {},
): Promise<RunFixture> {
  const clock = fakeClock(windowAlignedStart());
  const t = await startTestCoordinator({ clock, env });
  try {
    const { ctx } = t.coordinator;
    const agent = await enrollTestAgent(t.owner, t.orgId);
    let session = { client: t.owner, at: clock.now() };
    const fixture: RunFixture = {
      t,
      clock,
      agent,
      async owner() {
        // Sessions last 12 hours of the (fake) clock; sign in again once this one is old.
        if (clock.now() - session.at > 6 * HOUR || clock.now() < session.at) {
          session = { client: await t.api.login(OWNER_EMAIL, OWNER_PASSWORD), at: clock.now() };
        }
        return session.client;
      },
      async putWorkflows(a, workflows) {
        const res = await a.request('PUT', '/v1/agent/workflows', { workflows }, { now: clock.now() });
        if (res.status !== 200) throw new Error(`put workflows: ${res.status} ${res.text}`);
      },
      async createTrigger(extra = {}, a = agent) {
        const owner = await fixture.owner();
        const body = {
          name: 'run test',
          agentId: a.agentId,
          scopeType: 'workflow',
          workflowName: 'build',
          responseMode: 'async',
          ...extra,
        };
        const res = await owner.post(`/orgs/${t.orgId}/triggers`, { body });
        if (res.status !== 201) throw new Error(`create trigger: ${res.status} ${res.text}`);
        return res.body;
      },
      async token(triggerIds, limits = {}, issuer) {
        const client = issuer ?? (await fixture.owner());
        return (await issueApiToken(client, t.orgId, [{ type: 'trigger', triggerIds }], limits)).token;
      },
      run(token, triggerId, body, headers) {
        return t.api.post(`/triggers/${triggerId}/run`, {
          token,
          ...(body === undefined ? {} : { body }),
          ...(headers ? { headers } : {}),
        });
      },
      async job(jobId) {
        const res = await (await fixture.owner()).get<JobBody & { logs: unknown[] }>(`/jobs/${jobId}`);
        if (res.status !== 200) throw new Error(`job ${jobId}: ${res.status} ${res.text}`);
        const { logs: _, ...job } = res.body;
        return job;
      },
      async jobsOf(triggerId) {
        const owner = await fixture.owner();
        const jobs: JobBody[] = [];
        let cursor: string | null = null;
        do {
          const query = new URLSearchParams({ triggerId, limit: '200' });
          if (cursor !== null) query.set('cursor', cursor);
          const res = await owner.get<JobBody[]>(`/orgs/${t.orgId}/jobs?${query}`);
          if (res.status !== 200) throw new Error(`jobs of ${triggerId}: ${res.status} ${res.text}`);
          jobs.push(...res.body);
          cursor = res.headers.get('x-next-cursor');
        } while (cursor !== null);
        return jobs.reverse(); // the list is newest first
      },
      async finish(jobId, result) {
        // Through the agent job protocol (signed, at the fake clock's time): start, then finish.
        const now = clock.now();
        const started = await agent.request('POST', `/v1/agent/jobs/${jobId}/start`, undefined, { now });
        if (started.status !== 200) throw new Error(`start job: ${started.status} ${started.text}`);
        const body = {
          status: result.status,
          exitCode: result.exitCode,
          errorMessage: result.errorMessage ?? null,
          output: result.output ?? {},
        };
        const finished = await agent.request('POST', `/v1/agent/jobs/${jobId}/finish`, body, { now });
        if (finished.status !== 200) throw new Error(`finish job: ${finished.status} ${finished.text}`);
      },
      async reject(jobId, message) {
        const now = clock.now();
        const body = { reason: 'queue_full', message };
        const res = await agent.request('POST', `/v1/agent/jobs/${jobId}/reject`, body, { now });
        if (res.status !== 200) throw new Error(`reject job: ${res.status} ${res.text}`);
      },
      nextJob(agentId = agent.agentId) {
        return new Promise((resolve) => {
          const off = ctx.jobEvents.onJobCreated((forAgent, jobId) => {
            if (forAgent !== agentId) return;
            off();
            resolve(jobId);
          });
        });
      },
      async workflowId(name, agentId = agent.agentId) {
        const res = await (
          await fixture.owner()
        ).get<{ id: string; agentId: string; name: string }[]>(`/orgs/${t.orgId}/workflows`);
        const found = res.body.find((w) => w.agentId === agentId && w.name === name);
        if (!found) throw new Error(`no workflow ${name}: ${res.status} ${res.text}`);
        return found.id;
      },
      async setWorkflowLimits(workflowId, limits) {
        const owner = await fixture.owner();
        const res = await owner.patch(`/orgs/${t.orgId}/workflows/${workflowId}`, { body: limits });
        if (res.status !== 200) throw new Error(`workflow limits: ${res.status} ${res.text}`);
      },
      close: () => t.close(),
    };
    await fixture.putWorkflows(agent, defs);
    return fixture;
  } catch (error) {
    await t.close();
    throw error;
  }
}
