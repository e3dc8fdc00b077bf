import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freshPostgresDatabase,
  sessionOf,
  type TestDatabase,
  type TestSession,
} from '../../coordinator/test/postgres/database.js';
import { enrollTestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiResponse } from '../helpers/http.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  createRelease,
  uploadArtifact,
  type AppBody,
} from '../helpers/ota.js';
import { eventually } from '../helpers/poll.js';

/**
 * A yank and another move of its rollout at once, on PostgreSQL (several coordinators share one
 * database; a coordinator's requests run side by side): the test holds the rollout's row locked
 * while an operator's pause and then the yank reach it, so the pause moves the rollout first and
 * the yank comes after it, as it would when the pause lands between the yank's read of the
 * rollout and its write. The yank still ends the rollout aborted: a rollout left paused (or
 * running) on a yanked release never ends, stays in the overview's rollouts in progress, and can
 * be resumed and advanced.
 */

let database: TestDatabase;
let t: TestCoordinator;
let lock: TestSession;
let watch: TestSession;
let app: AppBody;

beforeAll(async () => {
  database = await freshPostgresDatabase({ migrated: true });
  t = await startTestCoordinator({
    env: { DROVER_DATABASE_URL: database.url, DROVER_DATABASE_POOL_SIZE: '6' },
  });
  lock = await sessionOf(database.url);
  // pg_stat_activity is read on a connection of its own, outside the lock's transaction: within a
  // transaction PostgreSQL shows the sessions (and their statements) as they were at its first read,
  // so a connection the coordinator's pool opened later was never seen waiting.
  watch = await sessionOf(database.url);
  app = await createApp(t.owner, t.orgId, { slug: 'gateway', updateWorkflowName: 'apply-update' });
  const agents = [];
  for (let i = 0; i < 2; i++) agents.push(await enrollTestAgent(t.owner, t.orgId));
  await bindDevices(
    t.owner,
    t.orgId,
    app.id,
    agents.map((a) => a.agentId),
  );
}, 60_000);

// Generous: on a machine busy with other test files, PostgreSQL's commits may stall for seconds.
afterAll(async () => {
  await lock?.end().catch(() => undefined);
  await watch?.end().catch(() => undefined);
  await t?.close();
  await database?.drop();
}, 60_000);

/** What every other session of the database is doing (for a failure's message). */
async function sessions(): Promise<unknown[]> {
  return watch.query(
    `SELECT pid, state, wait_event_type, wait_event, left(query, 200) AS query, now() - query_start AS running
     FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
}

/**
 * Whether a statement of the coordinator whose text holds `text` waits for a lock (the one
 * the test holds): told by its text, so that another statement waiting meanwhile is not taken for it.
 */
async function waitingFor(text: string): Promise<boolean> {
  const rows = await watch.query(
    `SELECT 1 FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
       AND strpos(query, $1) > 0`,
    [text],
  );
  return rows.length > 0;
}

describe('a yank racing a move of its rollout', { timeout: 120_000 }, () => {
  it('ends the rollout aborted when an operator paused it between the yank and its end', async () => {
    const base = `/orgs/${t.orgId}/apps/${app.id}/releases`;
    const uploader = await artifactUploader(t);
    const artifactFileId = await uploadArtifact(uploader, 'gateway build 1.0.0', 'gateway-1.0.0.tar.gz');
    const r = await createRelease(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId });
    const published = await t.owner.post(`${base}/${r.id}/publish`, {
      body: { rollout: { waves: [50, 100], soakSeconds: 3600, maxFailureRate: 0.5 } },
    });
    expect(published.status, published.text).toBe(200);

    await lock.query('BEGIN');
    await lock.query('SELECT 1 FROM rollouts WHERE release_id = $1 FOR UPDATE', [r.id]);
    let pause: Promise<ApiResponse> | undefined;
    let yank: Promise<ApiResponse> | undefined;
    try {
      pause = t.owner.post(`${base}/${r.id}/rollout/pause`);
      await eventually(
        () => waitingFor('SELECT * FROM rollouts WHERE release_id'),
        30_000,
        () => 'the pause to wait for the rollout',
      );
      yank = t.owner.post(`${base}/${r.id}/yank`);
      // Should it not wait, say what it answered instead, and what the database's sessions do.
      let answered = 'no answer yet';
      void yank.then((res) => (answered = `answered ${res.status} ${res.text}`));
      const yankWaits = await eventually(() => waitingFor("UPDATE rollouts SET status = 'aborted'"), 30_000).catch(
        () => false,
      );
      if (!yankWaits) {
        throw new Error(
          `the yank did not come to wait for the rollout within 30 s; the yank: ${answered}; ` +
            `the database's sessions: ${JSON.stringify(await sessions())}`,
        );
      }
    } finally {
      await lock.query('ROLLBACK');
    }
    const [paused, yanked] = await Promise.all([pause, yank]);
    expect(paused.status, paused.text).toBe(200);
    expect(yanked.status, yanked.text).toBe(200);
    expect(yanked.body).toMatchObject({ status: 'yanked' });

    const rollout = await t.owner.get(`${base}/${r.id}/rollout`);
    expect(rollout.body).toMatchObject({ status: 'aborted', pausedReason: null });
    expect(rollout.body.history.map((h: { event: string }) => h.event)).toEqual(['start', 'pause', 'abort']);
    expect((await t.owner.post(`${base}/${r.id}/rollout/resume`)).status).toBe(409);
    const overview = await t.owner.get(`/orgs/${t.orgId}/overview`);
    expect(JSON.stringify(overview.body)).not.toContain(r.id);
  });
});
