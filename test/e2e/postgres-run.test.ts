import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * A coordinator on PostgreSQL end to end: it migrates an empty database and bootstraps its owner
 * there, a real `drover-agent` enrolls, connects and reports its workflows, and trigger runs
 * (async, sync, with an idempotency key) reach the agent and end with their output.
 */

let database: TestDatabase | undefined;
let rig: DaemonRig | undefined;

beforeAll(async () => {
  database = await freshPostgresDatabase();
  rig = await startDaemonRig({
    workPrefix: 'drover-postgres-run-',
    env: { DROVER_DATABASE_URL: database.url },
    workflows: () => ({
      hello: [
        'name: hello',
        'params:',
        '  - {name: who, type: string, default: world}',
        'steps:',
        '  - run: echo "Hello, $DROVER_PARAM_WHO!"; echo "greeting=Hello, $DROVER_PARAM_WHO!" >> "$DROVER_OUTPUT"',
        '    shell: true',
      ],
    }),
  });
}, 60_000);

afterAll(async () => {
  await rig?.close();
  await database?.drop();
});

describe('a coordinator on PostgreSQL', () => {
  it('keeps its state there: the bootstrapped owner and the enrolled, connected agent', async () => {
    const { t, a } = rig!;
    expect(t.coordinator.database).toBe('postgres');
    expect(() => t.coordinator.db).toThrow(/runs on PostgreSQL/);
    // Its workflows are reported before its stream opens.
    const agents = await eventually(
      async () => {
        const res = await t.owner.get(`/orgs/${t.orgId}/agents`);
        return res.body[0]?.status === 'connected' ? res.body : undefined;
      },
      15_000,
      'the agent to connect',
    );
    expect(agents).toEqual([expect.objectContaining({ id: a.agentId, status: 'connected' })]);
    const users = await t.coordinator.ctx.repos.users.count();
    expect(users).toBe(1);
  });

  it('runs a trigger async, sync and once per idempotency key through the real agent', async () => {
    const { t, a, jobIds } = rig!;
    const tr = await runnableTrigger(t, a.agentId, 'hello');
    const async = await t.api.post(`/triggers/${tr.id}/run`, {
      token: tr.token,
      body: { params: { who: 'Postgres' } },
    });
    expect(async.status, async.text).toBe(202);
    jobIds.push(async.body.jobId);
    const done = await eventually(
      async () => {
        const j = await t.owner.get(`/jobs/${async.body.jobId}`);
        return j.body.status === 'success' ? j.body : undefined;
      },
      30_000,
      'the async job to end',
    );
    expect(done).toMatchObject({ status: 'success', exitCode: 0, output: { greeting: 'Hello, Postgres!' }, number: 1 });
    expect(done.logs.map((l: { text: string }) => l.text)).toContain('Hello, Postgres!');

    const syncTrigger = await runnableTrigger(t, a.agentId, 'hello', { name: 'sync hello', responseMode: 'sync' });
    const sync = await t.api.post(`/triggers/${syncTrigger.id}/run`, { token: syncTrigger.token, body: {} });
    expect(sync.status, sync.text).toBe(200);
    jobIds.push(sync.body.jobId);
    expect(sync.body).toMatchObject({ status: 'success', output: { greeting: 'Hello, world!' } });

    const key = { 'idempotency-key': 'deploy-42' };
    const [first, second] = await Promise.all(
      [0, 1].map(() => t.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body: {}, headers: key })),
    );
    jobIds.push(first!.body.jobId);
    expect(first!.body.jobId).toBe(second!.body.jobId);
    expect([first!.body.idempotent, second!.body.idempotent].filter((x) => x === true)).toHaveLength(1);
  });
});
