import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetch } from 'undici';
import { freshPostgresDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import {
  enrollAgentStateDir,
  killProcessesWithEnv,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { makeTempDir } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { bindDevices, createApp, release, uploadArtifact, type AppBody } from '../helpers/ota.js';
import { installedVersion, writeUpdateWorkflow } from '../helpers/ota-agent.js';
import { eventually } from '../helpers/poll.js';
import { TestS3 } from '../helpers/s3.js';
import type { PresignedUpload } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * Three coordinators on one PostgreSQL database and one bucket (docs/operations.md, "Several
 * coordinators"): real `drover-coordinator start` processes, each with its own data directory and
 * port, behind a balancer whose URL is everyone's DROVER_PUBLIC_URL, and four real
 * `drover-agent run` processes: three pinned to one coordinator each (failing over to the next),
 * one spread by the balancer. Trigger runs, files and an OTA rollout go through every
 * coordinator; then one is killed with SIGKILL in the middle of a load, and
 * nothing accepted is lost or run twice.
 *
 * A cron occurrence that every scheduler finds due at once is claimed once: the scheduler's own
 * tests prove it on both databases on a clock they move (coordinator/test/domain/cron), and
 * cluster-events.test.ts that a trigger created on one coordinator is scheduled on the others;
 * here it cost up to a minute's wait for a real minute boundary.
 */

const SIZE = 3;
const AGENTS = 4;

let database: TestDatabase;
const s3 = new TestS3(['drover-cluster']);
let cluster: Cluster;
let work: string;
const agents: { dir: AgentStateDir; daemon: DaemonProcess; marks: string }[] = [];
/** Every job the test started: their processes are killed when it ends. */
const jobIds: string[] = [];

afterAll(async () => {
  for (const a of agents) await stopDaemonProcess(a.daemon);
  await cluster?.close();
  await s3.close();
  await database?.drop();
  for (const id of jobIds) killProcessesWithEnv('DROVER_JOB_ID', id);
  for (const a of agents) fs.rmSync(path.dirname(a.dir.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  database = await freshPostgresDatabase();
  await s3.start();
  cluster = await startCluster({
    size: SIZE,
    env: {
      DROVER_DATABASE_URL: database.url,
      ...s3.storageEnv('drover-cluster'),
      DROVER_STREAM_PING_MS: '500',
      DROVER_AGENT_DISCONNECT_GRACE_MS: '2000',
    },
  });
  work = makeTempDir('drover-cluster-work-');
  fs.mkdirSync(path.join(work, 'runs'));
  const t = { owner: cluster.owner, orgId: cluster.orgId, url: cluster.balancer.url };
  for (let i = 0; i < AGENTS; i++) {
    const url = i < SIZE ? cluster.balancer.urlPreferring(i) : cluster.balancer.url;
    const dir = await enrollAgentStateDir(t, url);
    // Records each run in the agent's file, so a job run twice shows. Its queue takes every job
    // the test sends at once (the default of four would refuse some).
    writeWorkflowFile(
      dir.stateDir,
      'work',
      [
        'name: work',
        'steps:',
        `  - run: echo "$DROVER_JOB_ID" >> "${path.join(work, 'runs', String(i))}"; sleep 0.05; echo "agent=${i}" >> "$DROVER_OUTPUT"`,
        '    shell: true',
        '',
      ].join('\n'),
    );
    const marks = path.join(work, `marks-${i}`);
    writeUpdateWorkflow(dir.stateDir, marks);
    agents.push({
      dir,
      daemon: startDaemonProcess(dir.stateDir, ['--deploy-poll-interval', '1s', '--queue-capacity', '64']),
      marks,
    });
  }
  await eventually(
    async () => {
      const res = await cluster.owner.get<{ agentId: string }[]>(`/orgs/${cluster.orgId}/workflows`);
      return res.status === 200 && res.body.length === AGENTS * 2;
    },
    60_000,
    'every agent to connect and report its workflows',
  );
}, 120_000);

/** A client of node `i` signed in as the owner (the session was issued through the balancer). */
const ownerOn = (node: ClusterNode) => node.api.withToken(cluster.owner.token);
const live = () => cluster.nodes.filter((n) => n.alive);

/** Trigger runs of the `work` workflow: one async and one sync trigger per agent, one token for all. */
let triggers: { async: string; sync: string }[] = [];
let runToken: string;

async function job(id: string): Promise<{ status: string; output: any; agentId: string }> {
  const res = await cluster.owner.get(`/jobs/${id}`);
  if (res.status !== 200) throw new Error(`job ${id}: ${res.status} ${res.text}`);
  return res.body;
}

/** How many times each job ran, from the agents' run files. */
function runCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < AGENTS; i++) {
    const file = path.join(work, 'runs', String(i));
    if (!fs.existsSync(file)) continue;
    for (const id of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean))
      counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

describe('three coordinators on one PostgreSQL database and one bucket', { timeout: 60_000 }, () => {
  it('bootstrap one owner and one organization, and hold the agents streams between them', async () => {
    const members = await cluster.owner.get(`/orgs/${cluster.orgId}/members`);
    expect(members.body).toHaveLength(1);
    expect((await cluster.owner.get('/orgs')).body).toHaveLength(1);
    const streams = await eventually(
      async () => {
        const counts = await Promise.all(cluster.nodes.map((n) => n.streams()));
        return counts.reduce((a, b) => a + b, 0) === AGENTS && counts;
      },
      15_000,
      'every stream to be open',
    );
    // Each pinned agent streams from its own coordinator.
    expect(streams.every((n) => n >= 1)).toBe(true);
  });

  it('accept on every coordinator the session and the API tokens another issued', async () => {
    for (const node of cluster.nodes) expect((await ownerOn(node).get('/orgs')).status).toBe(200);
    const agentIds = agents.map((a) => a.dir.agentId);
    triggers = [];
    for (const [i, agentId] of agentIds.entries()) {
      const create = async (responseMode: string) => {
        const res = await ownerOn(cluster.nodes[i % SIZE]!).post(`/orgs/${cluster.orgId}/triggers`, {
          body: {
            name: `work ${i} ${responseMode}`,
            agentId,
            scopeType: 'workflow',
            workflowName: 'work',
            responseMode,
          },
        });
        expect(res.status, res.text).toBe(201);
        return res.body.id as string;
      };
      triggers.push({ async: await create('async'), sync: await create('sync') });
    }
    const ids = triggers.flatMap((t) => [t.async, t.sync]);
    runToken = (await issueApiToken(ownerOn(cluster.nodes[2]!), cluster.orgId, [{ type: 'trigger', triggerIds: ids }]))
      .token;
  });

  it('run triggers async and sync through every coordinator, whichever holds the agent stream', async () => {
    const calls = cluster.nodes.flatMap((node) =>
      triggers.map(async (t, agent) => {
        const [async, sync] = await Promise.all([
          node.api.post(`/triggers/${t.async}/run`, { token: runToken, body: {} }),
          node.api.post(`/triggers/${t.sync}/run`, { token: runToken, body: {} }),
        ]);
        expect(async.status, async.text).toBe(202);
        expect(sync.status, sync.text).toBe(200);
        jobIds.push(async.body.jobId, sync.body.jobId);
        expect(sync.body).toMatchObject({ status: 'success', output: { agent: String(agent) } });
        return async.body.jobId as string;
      }),
    );
    const asyncJobs = await Promise.all(calls);
    for (const id of asyncJobs) {
      await eventually(async () => (await job(id)).status === 'success', 20_000, `async job ${id} to succeed`);
    }
  });

  it('uploads through one coordinator and downloads through another, straight from the bucket', async () => {
    const { token } = await issueApiToken(cluster.owner, cluster.orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
    ]);
    const presign = await cluster.nodes[0]!.api.post<PresignedUpload>('/storage/files/presign-upload', {
      token,
      body: { cleanupRule: 'persistent', filename: 'report.txt' },
    });
    expect(presign.status, presign.text).toBe(201);
    expect(presign.body.uploadUrl.startsWith(s3.endpoint)).toBe(true);
    const put = await fetch(presign.body.uploadUrl, {
      method: 'PUT',
      headers: presign.body.headers,
      body: 'cluster data',
    });
    expect(put.status).toBe(200);
    const done = await cluster.nodes[1]!.api.post(`/storage/files/${presign.body.fileId}/complete`, { token });
    expect(done.status, done.text).toBe(200);
    const url = await cluster.nodes[2]!.api.get<{ downloadUrl: string }>(
      `/storage/files/${presign.body.fileId}/download-url`,
      { token },
    );
    expect(url.status, url.text).toBe(200);
    expect(await (await fetch(url.body.downloadUrl)).text()).toBe('cluster data');
  });

  let app: AppBody;
  let uploader: ApiClient;

  /** Every device runs `version`, as the coordinators see it and as the update workflow installed it. */
  async function everyDeviceOn(version: string, releaseId: string) {
    await eventually(
      async () => {
        const res = await cluster.owner.get<{ current: { releaseId: string } | null; state: string }[]>(
          `/orgs/${cluster.orgId}/apps/${app.id}/devices`,
        );
        return (
          res.body.length === AGENTS &&
          res.body.every((b) => b.current?.releaseId === releaseId && b.state === 'installed')
        );
      },
      30_000,
      `every device on ${version}`,
    );
    for (const a of agents) expect(installedVersion(a.marks)).toBe(version);
  }

  it('publishes a release that reaches every device, whichever coordinator holds its stream', async () => {
    const { token } = await issueApiToken(cluster.owner, cluster.orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read', 'write', 'delete'] },
    ]);
    uploader = cluster.nodes[1]!.api.withToken(token);
    app = await createApp(ownerOn(cluster.nodes[0]!), cluster.orgId, {
      slug: 'kiosk',
      updateWorkflowName: 'apply-update',
    });
    await bindDevices(
      ownerOn(cluster.nodes[1]!),
      cluster.orgId,
      app.id,
      agents.map((a) => a.dir.agentId),
    );
    const artifactFileId = await uploadArtifact(uploader, 'kiosk build 1.0.0', 'kiosk-1.0.0.tar.gz');
    const r = await release(ownerOn(cluster.nodes[2]!), cluster.orgId, app.id, { version: '1.0.0', artifactFileId });
    await everyDeviceOn('1.0.0', r.id);
  });

  it('loses no accepted job and runs none twice when a coordinator is killed mid-load; every device converges', async () => {
    const victim = cluster.nodes[1]!;
    const artifactFileId = await uploadArtifact(uploader, 'kiosk build 1.1.0', 'kiosk-1.1.0.tar.gz');
    const r = await release(ownerOn(cluster.nodes[0]!), cluster.orgId, app.id, { version: '1.1.0', artifactFileId });
    const LOAD = 48;
    const accepted: string[] = [];
    const killed: Promise<void>[] = [];
    /** One async run with its idempotency key, through coordinator k % 3, then the next ones while refused. */
    const run = async (k: number): Promise<string> => {
      for (let attempt = 0; attempt < SIZE * 3; attempt++) {
        const node = cluster.nodes[(k + attempt) % SIZE]!;
        try {
          const res = await node.api.post(`/triggers/${triggers[k % AGENTS]!.async}/run`, {
            token: runToken,
            body: {},
            headers: { 'idempotency-key': `load-${k}` },
          });
          if (res.status === 202) {
            accepted.push(res.body.jobId);
            if (accepted.length === LOAD / 3) killed.push(victim.kill());
            return res.body.jobId as string;
          }
          if (res.status < 500) throw new Error(`run ${k}: ${res.status} ${res.text}`);
        } catch (error) {
          if (!(error instanceof TypeError)) throw error; // fetch failed: the coordinator is gone
        }
      }
      throw new Error(`run ${k} was never accepted`);
    };
    const ids = await Promise.all(Array.from({ length: LOAD }, (_, k) => run(k)));
    jobIds.push(...ids);
    expect(killed).toHaveLength(1);
    await Promise.all(killed);
    expect(victim.alive).toBe(false);
    // One job per idempotency key, each accepted once whichever coordinator answered.
    expect(new Set(ids).size).toBe(LOAD);
    for (const id of ids) {
      await eventually(async () => (await job(id)).status === 'success', 30_000, `load job ${id} to succeed`);
    }
    const counts = runCounts();
    expect(ids.filter((id) => counts.get(id) !== 1)).toEqual([]);
    // The killed coordinator's agents stream from the survivors now.
    await eventually(
      async () => (await Promise.all(live().map((n) => n.streams()))).reduce((a, b) => a + b, 0) === AGENTS,
      15_000,
      'every agent to stream from a surviving coordinator',
    );
    await everyDeviceOn('1.1.0', r.id);
    // Nothing ran twice in the whole test.
    expect([...runCounts().values()].filter((n) => n !== 1)).toEqual([]);
  });
});
