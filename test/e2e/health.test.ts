import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, queryDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * `GET /healthz` for load balancers (docs/operations.md, "Health"), a PostgreSQL database that goes
 * away, and the pool of connections to it.
 */

describe('the health check', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('answers 200 without credentials, never cached, with the version and the database', async () => {
    const res = await fetch(`${t.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.json();
    expect(body).toEqual({
      status: 'ok',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      database: t.coordinator.database,
      clusterEvents: t.coordinator.database === 'postgres' ? 'connected' : null,
    });
    const head = await fetch(`${t.url}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    // An operations endpoint, not part of the API.
    const doc = await t.api.get<{ paths: Record<string, unknown> }>('/openapi.json');
    expect(Object.keys(doc.body.paths).some((p) => p.includes('healthz'))).toBe(false);
  });

  it('refuses other methods with 405', async () => {
    const res = await fetch(`${t.url}/healthz`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/GET/);
  });
});

/** A coordinator on SQLite in a data directory of its own, for the `describe` it is called in. */
function sqliteCoordinator(): { t: TestCoordinator; dataDir: string } {
  const rig = { t: undefined as unknown as TestCoordinator, dataDir: '' };
  beforeAll(async () => {
    rig.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-health-'));
    rig.t = await startTestCoordinator({ dataDir: rig.dataDir, database: 'sqlite' });
  });
  afterAll(async () => {
    await rig.t?.close();
    fs.rmSync(rig.dataDir, { recursive: true, force: true });
  });
  return rig;
}

describe('a SQLite database file removed or replaced under a running coordinator', () => {
  const rig = sqliteCoordinator();

  it('fails the health check (its writes would go to a file lost at the next start), and passes once it is back', async () => {
    const file = path.join(rig.dataDir, 'drover.sqlite');
    expect((await fetch(`${rig.t.url}/healthz`)).status).toBe(200);
    fs.renameSync(file, `${file}.moved`);
    const gone = await fetch(`${rig.t.url}/healthz`);
    expect(gone.status).toBe(503);
    expect(gone.headers.get('retry-after')).toBe('5');
    fs.copyFileSync(`${file}.moved`, file); // another file of the same name: still not the one open
    expect((await fetch(`${rig.t.url}/healthz`)).status).toBe(503);
    fs.rmSync(file);
    fs.renameSync(`${file}.moved`, file);
    expect((await fetch(`${rig.t.url}/healthz`)).status).toBe(200);
  });
});

describe('a SQLite database whose disk is full', () => {
  const rig = sqliteCoordinator();

  it('answers the writes 503 naming the full disk (not 500), serves the reads, and takes the writes once there is room', async () => {
    const db = rig.t.coordinator.db;
    const pages = db.pragma('page_count', { simple: true }) as number;
    // The database may not grow: SQLite's SQLITE_FULL, as on a disk with no space left.
    db.pragma(`max_page_count = ${pages}`);
    const create = (i: number) =>
      rig.t.owner.post(`/orgs/${rig.t.orgId}/enrollment-tokens`, { body: { name: `full-${i}` } });
    let refused: Awaited<ReturnType<typeof create>> | undefined;
    for (let i = 0; i < 500 && !refused; i++) {
      const res = await create(i);
      if (res.status !== 201) refused = res;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get('retry-after')).toBe('60');
    expect(refused?.body).toEqual({
      statusCode: 503,
      code: 'unavailable',
      message:
        "The coordinator's database cannot take writes: its disk is full (SQLITE_FULL); try again once its operator has freed space",
    });
    expect((await rig.t.owner.get('/orgs')).status).toBe(200); // reads still served

    db.pragma('max_page_count = 1073741823');
    expect((await create(-1)).status).toBe(201);
  });
});

describe('a PostgreSQL database that goes away', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let t: TestCoordinator;
  beforeAll(async () => {
    database = await freshPostgresDatabase();
    const url = new URL(database.url);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    url.port = String(proxy.port);
    t = await startTestCoordinator({ env: { DROVER_DATABASE_URL: url.toString() } });
  });
  afterAll(async () => {
    await proxy?.restore();
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('turns the health check and the requests that need it into 503 with Retry-After, then recovers', async () => {
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    await proxy.cut();

    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(503);
    expect(health.headers.get('retry-after')).toBe('5');
    const body = await health.json();
    expect(body).toMatchObject({ statusCode: 503, code: 'unavailable', message: 'The database does not answer' });
    // The reason (addresses, the driver's words) stays in the log.
    expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|ECONN|terminated/);

    const orgs = await t.owner.get('/orgs');
    expect(orgs.status).toBe(503);
    expect(orgs.headers.get('retry-after')).toBe('5');
    expect(orgs.body).toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(/database could not be reached/),
    });

    await proxy.restore();
    await expect.poll(async () => (await fetch(`${t.url}/healthz`)).status, { timeout: 10_000 }).toBe(200);
    expect((await t.owner.get('/orgs')).status).toBe(200);
  });
});

describe('DROVER_DATABASE_POOL_SIZE', () => {
  let database: TestDatabase;
  let t: TestCoordinator;
  beforeAll(async () => {
    database = await freshPostgresDatabase();
    t = await startTestCoordinator({ env: { DROVER_DATABASE_URL: database.url, DROVER_DATABASE_POOL_SIZE: '2' } });
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it('caps the connections a coordinator opens; requests beyond it wait their turn', async () => {
    const answers = await Promise.all(Array.from({ length: 40 }, () => t.owner.get(`/orgs/${t.orgId}/audit`)));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    const rows = await queryDatabase(
      database.url,
      `SELECT application_name, count(*)::int AS count FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY application_name ORDER BY 1`,
    );
    expect(rows).toEqual([
      { application_name: 'drover-coordinator', count: 2 },
      { application_name: 'drover-coordinator-events', count: 1 },
    ]);
  });
});
