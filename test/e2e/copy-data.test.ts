import fs from 'node:fs';
import path from 'node:path';
import { signRequest, verifyManifestEntry } from '@drover/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lockDataDir } from '../../coordinator/src/cli/data-dir-lock.js';
import { loadCopyDataConfig } from '../../coordinator/src/config/copy-data-config.js';
import { copyData as copyDataInProcess, CopyDataError } from '../../coordinator/src/copy-data/copy-data.js';
import { copyDatabase, CopyVerificationError } from '../../coordinator/src/db/copy/copy-database.js';
import { firstTableWithRows } from '../../coordinator/src/db/copy/postgres-target.js';
import { SqliteSource } from '../../coordinator/src/db/copy/sqlite-source.js';
import { COPIED_TABLES } from '../../coordinator/src/db/copy/tables.js';
import { databaseFile, openDatabase } from '../../coordinator/src/db/database.js';
import { loadMigrations, migrate, migratePostgres } from '../../coordinator/src/db/migrate.js';
import { createPool } from '../../coordinator/src/db/postgres/pool.js';
import { freshPostgresDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { connectWorkspace } from '../helpers/chat.js';
import { coordinatorCli, killLeftoverCoordinators } from '../helpers/coordinator-cli.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { FakeSlack, SLACK_BOT_TOKEN, SLACK_CODE, SLACK_TEAM, slackEnv } from '../helpers/fake-slack.js';
import { ApiClient } from '../helpers/http.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact } from '../helpers/ota.js';
import { S3_KEYS, TestS3 } from '../helpers/s3.js';
import { sha256, storageClient, uploadFile } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * `drover-coordinator copy-data` on a data directory made by this release: a real coordinator on
 * SQLite is given agents, workflows, triggers, jobs with logs, files, an OTA release and a Slack
 * workspace, then stopped; its data is copied into an empty PostgreSQL database and its files
 * into a bucket, and a coordinator started on those finds everything through the API.
 */

const BUCKET = 'drover-moved';
const PREFIX = 'prod';
const slack = new FakeSlack();
const s3 = new TestS3([BUCKET]);
let database: TestDatabase;
let source: TestCoordinator;
let moved: TestCoordinator | undefined;
/** Temporary directories of this file, removed at the end. */
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = makeTempDir(prefix);
  dirs.push(dir);
  return dir;
};
const sourceDir = tempDir('drover-copy-source-');

/** What the source coordinator held, read through its API before it stopped. */
interface Before {
  sessionToken: string;
  agent: TestAgent;
  revokedAgent: TestAgent;
  trigger: { id: string; token: string };
  storageToken: string;
  file: { id: string; sha256: string };
  deletedFileId: string;
  artifact: { id: string; sha256: string };
  appId: string;
  reads: Record<string, unknown>;
}
let before: Before;

/** The management reads compared before and after the move. */
const READS = (orgId: string, appId: string) => [
  '/orgs',
  `/orgs/${orgId}/members`,
  `/orgs/${orgId}/agents`,
  `/orgs/${orgId}/workflows`,
  `/orgs/${orgId}/triggers`,
  `/orgs/${orgId}/api-tokens`,
  `/orgs/${orgId}/storage-bindings`,
  `/orgs/${orgId}/jobs`,
  `/orgs/${orgId}/audit?limit=200`,
  `/orgs/${orgId}/apps`,
  `/orgs/${orgId}/apps/${appId}/releases`,
  `/orgs/${orgId}/apps/${appId}/devices`,
  `/orgs/${orgId}/chat-integrations`,
];

async function readAll(t: TestCoordinator, owner: ApiClient, appId: string): Promise<Record<string, unknown>> {
  const reads: Record<string, unknown> = {};
  for (const p of READS(t.orgId, appId)) {
    const res = await owner.get(p);
    expect(res.status, `${p}: ${res.text}`).toBe(200);
    reads[p] = res.body;
  }
  return reads;
}

beforeAll(async () => {
  [database] = await Promise.all([freshPostgresDatabase(), s3.start(), slack.start()]);
  source = await startTestCoordinator({ dataDir: sourceDir, env: slackEnv(slack), database: 'sqlite' });
  const t = source;
  const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-1' });
  expect((await agent.putWorkflows([workflow('build'), workflow('apply-update')])).status).toBe(200);
  const revoked = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-2' });
  expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${revoked.agentId}`)).status).toBe(200);

  // A webhook trigger run to its end through the agent protocol, with log lines; a cron trigger.
  const trigger = await runnableTrigger(t, agent.agentId, 'build');
  const run = await t.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
  expect(run.status, run.text).toBe(202);
  const jobId = run.body.jobId as string;
  for (const step of ['accept', 'start']) {
    expect((await agent.request('POST', `/v1/agent/jobs/${jobId}/${step}`)).status).toBe(200);
  }
  const at = new Date().toISOString();
  const lines = [1, 2, 3].map((seq) => ({ seq, at, stream: 'stdout', step: 0, text: `line ${seq}` }));
  expect((await agent.request('POST', `/v1/agent/jobs/${jobId}/logs`, { lines })).body.accepted).toBe(3);
  const finish = { status: 'success', exitCode: 0, errorMessage: null, output: { built: 'yes' } };
  expect((await agent.request('POST', `/v1/agent/jobs/${jobId}/finish`, finish)).status).toBe(200);
  const cron = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
    body: {
      name: 'yearly',
      type: 'cron',
      agentId: agent.agentId,
      scopeType: 'workflow',
      workflowName: 'build',
      responseMode: 'async',
      cronExpression: '0 0 1 1 *',
    },
  });
  expect(cron.status, cron.text).toBe(201);

  // Files: one kept, one deleted (its blob is not copied); an OTA release bound to the agent.
  const storage = await storageClient(t, null, ['read', 'write', 'delete']);
  const content = 'moved with the data directory\n'.repeat(1000);
  const file = await uploadFile(storage, content, { cleanupRule: 'persistent', filename: 'notes.txt' });
  const gone = await uploadFile(storage, 'soon gone', { cleanupRule: 'persistent' });
  expect((await storage.delete(`/storage/files/${gone.fileId}`)).status).toBe(200);
  const artifactBytes = Buffer.from('release 1.0 artifact');
  const artifact = await uploadArtifact(await artifactUploader(t), artifactBytes);
  const app = await createApp(t.owner, t.orgId, { slug: 'edge-app' });
  await release(t.owner, t.orgId, app.id, { version: '1.0', artifactFileId: artifact });
  await bindDevices(t.owner, t.orgId, app.id, [agent.agentId]);

  // A Slack workspace, its bot token sealed with the data directory's secrets key.
  const { completion } = await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: SLACK_CODE, state }));
  expect(completion.body.outcome, completion.text).toBe('connected');

  before = {
    sessionToken: t.owner.token!,
    agent,
    revokedAgent: revoked,
    trigger,
    storageToken: storage.token!,
    file: { id: file.fileId, sha256: sha256(content) },
    deletedFileId: gone.fileId,
    artifact: { id: artifact, sha256: sha256(artifactBytes) },
    appId: app.id,
    reads: await readAll(t, t.owner, app.id),
  };
  // A log line holding a NUL character, as coordinators before 2026-11-25 stored binary output on
  // SQLite: PostgreSQL's text cannot hold one.
  await t.sql.run("UPDATE job_logs SET text = 'line ' || char(0) || '2' WHERE seq = 2");
  await source.close();
}, 60_000);

afterEach(() => {
  expect(killLeftoverCoordinators(), 'child processes left running').toEqual([]);
});

afterAll(async () => {
  await source?.close();
  await moved?.close();
  await database?.drop();
  await Promise.all([s3.close(), slack.close()]);
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

async function copyData(args: string[], env: Record<string, string> = {}) {
  const c = coordinatorCli(['copy-data', ...args], env);
  const code = await c.exited;
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const filesTo = () =>
  `s3://${BUCKET}/${PREFIX}?endpoint=${encodeURIComponent(s3.endpoint)}&region=us-east-1&forcePathStyle=true`;
const awsKeys = { AWS_ACCESS_KEY_ID: S3_KEYS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_KEYS.secretAccessKey };

describe('copy-data', () => {
  it('moves every table and every file; a coordinator on PostgreSQL and the bucket finds them all', async () => {
    const copied = await copyData(['--data-dir', sourceDir, '--to', database.url, '--files-to', filesTo()], awsKeys);
    expect(copied.stderr).toBe('');
    expect(copied.code).toBe(0);
    expect(copied.stdout).toMatch(
      new RegExp(
        `^copied ${COPIED_TABLES.length} tables, \\d+ rows, into postgres://drover:\\*\\*\\*\\*@.+ in one transaction \\(\\d+\\.\\d s\\)`,
      ),
    );
    expect(copied.stdout).toMatch(/^ {2}job_logs +3$/m);
    expect(copied.stdout).toContain(
      'warning: job_logs.text: 1 value held a NUL character (U+0000), which PostgreSQL cannot store: copied with U+FFFD in its place',
    );
    expect(copied.stdout).toMatch(/^ {2}job_log_usage +1$/m);
    expect(copied.stdout).toMatch(
      /^copied 2 files \(.+\) into s3:\/\/drover-moved\/prod\/ \(\d+\.\d s\), each object's size checked$/m,
    );
    expect(copied.stdout).toContain('stored server-ed25519.key as server_ed25519_key and secrets.key as secrets_key');
    expect(copied.stdout).not.toContain(database.url.split('@')[0]!.split(':')[2]!); // never the password

    // The live files' blobs are in the bucket under the coordinator's keys; the deleted one's is not.
    const keys = [before.file.id, before.artifact.id].map((id) => `${PREFIX}/${id.slice(0, 2)}/${id}`);
    const deletedKey = `${PREFIX}/${before.deletedFileId.slice(0, 2)}/${before.deletedFileId}`;
    expect(s3.objectKeys(BUCKET)).toEqual(expect.arrayContaining(keys));
    expect(s3.objectKeys(BUCKET)).not.toContain(deletedKey);

    expect(copied.stdout).toMatch(
      /^next: start the coordinators with DROVER_DATABASE_URL and DROVER_STORAGE_URL, each on a data directory of its own .*; they read the server's keys from the database/m,
    );

    // A new machine: an empty data directory of its own; the keys come from the database.
    const newDir = tempDir('drover-copy-target-');
    moved = await startTestCoordinator({
      dataDir: newDir,
      env: { DROVER_DATABASE_URL: database.url, ...s3.storageEnv(BUCKET, PREFIX), ...slackEnv(slack) },
    });
    const t = moved;
    expect(t.coordinator.database).toBe('postgres');
    expect(t.coordinator.bootstrap.created).toBe(false);
    expect(t.coordinator.ctx.serverKey.publicKey).toBe(before.agent.serverPublicKey);

    // The session issued by the old coordinator is accepted; every management read is the same.
    const oldSession = t.api.withToken(before.sessionToken);
    expect(await readAll(t, oldSession, before.appId)).toEqual(before.reads);
    const jobs = before.reads[`/orgs/${t.orgId}/jobs`] as { id: string }[];
    const detail = await oldSession.get(`/jobs/${jobs.find((j) => j)!.id}`);
    expect(detail.body.logs.map((l: { text: string }) => l.text)).toEqual(['line 1', 'line \uFFFD2', 'line 3']);

    // The agent still authenticates with its key; the revoked one is still refused.
    const me = await signed(t, before.agent, 'GET', '/v1/agent/me');
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ agentId: before.agent.agentId, status: 'pending' });
    expect((await signed(t, before.revokedAgent, 'GET', '/v1/agent/me')).status).toBe(401);

    // Its manifest verifies against the server key it pinned; the artifact comes from the bucket.
    const desired = await signed(t, before.agent, 'GET', '/v1/agent/deploy/desired');
    expect(desired.status, desired.text).toBe(200);
    const [entry] = desired.body.apps;
    expect(verifyManifestEntry(entry, before.agent.serverPublicKey)).toBe(true);
    expect(entry.payload.desired.download_url.startsWith(`${s3.endpoint}/${BUCKET}/${PREFIX}/`)).toBe(true);
    expect(await downloadSha256(entry.payload.desired.download_url)).toBe(before.artifact.sha256);

    // A file downloads from the bucket with the same SHA-256, through the old API token.
    const storage = new ApiClient(t.baseUrl, before.storageToken);
    const url = await storage.get(`/storage/files/${before.file.id}/download-url`);
    expect(url.status, url.text).toBe(200);
    expect(await downloadSha256(url.body.downloadUrl)).toBe(before.file.sha256);

    // New rows continue the copied ones: job numbers, list order, audit entries.
    const runAgain = await t.api.post(`/triggers/${before.trigger.id}/run`, { token: before.trigger.token, body: {} });
    expect(runAgain.status, runAgain.text).toBe(202);
    const listed = await oldSession.get(`/orgs/${t.orgId}/jobs`);
    expect(listed.body.map((j: { id: string }) => j.id)).toEqual([runAgain.body.jobId, ...jobs.map((j) => j.id)]);
    const numbers = jobs.map((j) => (j as unknown as { number: number }).number);
    expect(listed.body[0].number).toBeGreaterThan(Math.max(...numbers));
    expect(
      (await issueApiToken(oldSession, t.orgId, [{ type: 'agent', agentIds: [before.agent.agentId] }])).id,
    ).toBeTruthy();

    // The Slack bot token opens with the copied secrets key; both keys are in server_secrets too.
    expect(await t.coordinator.ctx.chatIntegrations.tokenOf('slack', SLACK_TEAM.id)).toBe(SLACK_BOT_TOKEN);
    const pool = createPool(database.url, { max: 1 });
    try {
      const { rows } = await pool.query<{ name: string; value: string }>(
        "SELECT name, value FROM server_secrets WHERE name IN ('server_ed25519_key', 'secrets_key') ORDER BY name",
      );
      const file = (name: string) => fs.readFileSync(path.join(sourceDir, name), 'utf8').trim();
      expect(rows).toEqual([
        { name: 'secrets_key', value: file('secrets.key') },
        { name: 'server_ed25519_key', value: file('server-ed25519.key') },
      ]);
    } finally {
      await pool.end();
    }
  });
});

describe('copy-data refuses before writing anything', () => {
  it('a database that holds data (exit status 2, one line), a directory that is not a data directory, one in use, one of an older schema, no --to', async () => {
    // The command runs on a copy: the checks below take the source directory's lock meanwhile.
    const sourceCopy = tempDir('drover-copy-again-');
    fs.cpSync(sourceDir, sourceCopy, { recursive: true });
    const full = copyData(['--data-dir', sourceCopy, '--to', database.url]);
    const refusal = async (dataDir: string) => {
      const config = loadCopyDataConfig({}, { dataDir, to: database.url });
      const error = await copyDataInProcess(config).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CopyDataError);
      expect((error as CopyDataError).code).toBe('refused');
      return (error as Error).message;
    };
    const empty = tempDir('drover-copy-empty-');
    expect(await refusal(empty)).toBe(`${empty} is not a coordinator's data directory: it has no drover.sqlite`);
    expect(await refusal(path.join(empty, 'nope'))).toBe(
      `the data directory ${path.join(empty, 'nope')} does not exist (--data-dir)`,
    );
    expect(fs.readdirSync(empty)).toEqual([]);
    // A data directory held by a live process (this one), as a running coordinator holds it.
    const release = lockDataDir(sourceDir);
    try {
      expect(await refusal(sourceDir)).toBe(
        `the data directory ${sourceDir} is in use by a running drover-coordinator (pid ${process.pid}); stop it first`,
      );
    } finally {
      release();
    }
    // A data directory of an older release: its database lacks the last migration.
    const older = tempDir('drover-copy-older-');
    const db = openDatabase(databaseFile(older));
    migrate(db, loadMigrations().slice(0, -1));
    db.close();
    const [previous, last] = loadMigrations()
      .slice(-2)
      .map((m) => m.version);
    expect(await refusal(older)).toBe(
      `${databaseFile(older)} is at schema version ${previous}, this build copies version ${last}: run drover-coordinator migrate --data-dir ${older} first`,
    );
    // A database that cannot be reached is a failure (exit status 1), named without its password.
    const unreachable = loadCopyDataConfig(
      {},
      { dataDir: sourceDir, to: 'postgres://drover:hunter2@127.0.0.1:9/drover' },
    );
    const failure = await copyDataInProcess(unreachable).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'failed' });
    expect((failure as Error).message).toMatch(
      /^cannot read postgres:\/\/drover:\*{4}@127\.0\.0\.1:9\/drover: .*ECONNREFUSED/,
    );
    expect((failure as Error).message).not.toContain('hunter2');
    expect(() => loadCopyDataConfig({}, { dataDir: sourceDir })).toThrow(
      '--to: expected the PostgreSQL database to copy into',
    );

    const { code, stdout, stderr } = await full;
    expect(stderr).toMatch(
      /^drover-coordinator: postgres:\/\/drover:\*{4}@.+: the database already holds data \(table server_secrets has rows\); copy-data fills an empty database only\n$/,
    );
    expect(code).toBe(2);
    expect(stdout).toBe('');
  });
});

describe('a copy that fails', () => {
  it('commits nothing, whether it stops halfway or finds a count that differs; the next attempt copies all', async () => {
    const target = await freshPostgresDatabase();
    const pool = createPool(target.url, { max: 2 });
    const source = SqliteSource.open(databaseFile(sourceDir));
    try {
      await migratePostgres(pool);
      const stopAt = (table: string) => (t: string) => {
        if (t === table) throw new Error(`stopped at ${t}`);
      };
      await expect(copyDatabase({ source, pool, onProgress: stopAt('jobs') })).rejects.toThrow('stopped at jobs');
      expect(await firstTableWithRows(pool, COPIED_TABLES)).toBeNull();

      // A row that does not arrive (here a trigger drops it) is found by the counts before the commit.
      await pool.query(`CREATE FUNCTION drop_one() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.seq = 1 THEN RETURN NULL; END IF; RETURN NEW; END $$`);
      await pool.query('CREATE TRIGGER drop_one BEFORE INSERT ON job_logs FOR EACH ROW EXECUTE FUNCTION drop_one()');
      const mismatch = await copyDatabase({ source, pool }).catch((e: unknown) => e);
      expect(mismatch).toBeInstanceOf(CopyVerificationError);
      expect((mismatch as CopyVerificationError).mismatches).toEqual([{ table: 'job_logs', source: 3, target: 2 }]);
      expect(await firstTableWithRows(pool, COPIED_TABLES)).toBeNull();

      await pool.query('DROP TRIGGER drop_one ON job_logs');
      const copied = await copyDatabase({ source, pool, batchRows: 2 });
      expect(copied.find((t) => t.table === 'job_logs')).toEqual({
        table: 'job_logs',
        rows: 3,
        nulReplaced: new Map([['text', 1]]), // in batches of 2 rows, counted once
      });
      expect(copied.map((t) => t.rows)).toEqual(COPIED_TABLES.map((t) => source.count(t)));
    } finally {
      source.close();
      await pool.end();
      await target.drop();
    }
  });
});

async function signed(t: TestCoordinator, agent: TestAgent, method: string, path: string) {
  const headers = signRequest({ agentId: agent.agentId, privateKey: agent.privateKey, method, path });
  const res = await fetch(`${t.url}${path}`, { method, headers });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

async function downloadSha256(url: string): Promise<string> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return sha256(Buffer.from(await res.arrayBuffer()));
}
