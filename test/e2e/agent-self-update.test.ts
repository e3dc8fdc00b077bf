import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEnrollmentToken } from '../helpers/agent.js';
import { buildAgentBinary, buildAgentVersion, buildUnconnectableAgent } from '../helpers/agent-builds.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact, type AppBody } from '../helpers/ota.js';
import { bindingWhen, updateJobsOf } from '../helpers/ota-agent.js';
import { eventually } from '../helpers/poll.js';

/**
 * Self-update (docs/agent.md, "Self-update"): the real single executable, installed in a
 * directory of its own, updates itself through a real coordinator's OTA. Three real builds: the
 * agent as built (0.1.0), the same stamped 0.2.0, and 0.1.1 whose signatures are broken (it never
 * connects). A small restart loop stands in for systemd's `Restart=on-failure`.
 */

const DEADLINE = '8s';
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1' };

function version(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, ['--version'], { env, timeout: 30_000 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout.trim().split(' ')[0]!),
    );
  });
}

/** Runs `drover-agent run` and starts it again whenever it exits non-zero, as systemd's Restart=on-failure. */
class Supervisor {
  readonly exits: (number | null)[] = [];
  #child: ChildProcess | null = null;
  #stopping = false;

  constructor(
    readonly executable: string,
    readonly args: string[],
  ) {}

  start(): void {
    const child = spawn(this.executable, this.args, { env, stdio: 'ignore' });
    this.#child = child;
    child.once('exit', (code) => {
      this.exits.push(code);
      if (!this.#stopping && code !== 0) setTimeout(() => this.start(), 200);
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

describe('self-update of the single executable through Drover OTA', () => {
  let t: TestCoordinator;
  let scratch: string;
  let exe: string;
  let stateDir: string;
  let agentId: string;
  let app: AppBody;
  let bindingId: string;
  let supervisor: Supervisor;
  const builds: Record<'v1' | 'v2' | 'broken', string> = { v1: '', v2: '', broken: '' };

  beforeAll(async () => {
    // One at a time: the builds of one package share a lock.
    builds.v1 = await buildAgentBinary();
    builds.v2 = await buildAgentVersion('0.2.0');
    builds.broken = await buildUnconnectableAgent('0.1.1');
    t = await startTestCoordinator();
    scratch = makeTempDir('drover-self-update-');
    fs.mkdirSync(path.join(scratch, 'bin'));
    exe = path.join(scratch, 'bin', 'drover-agent');
    fs.copyFileSync(builds.v1, exe);
    fs.chmodSync(exe, 0o755);
    stateDir = path.join(scratch, 'state');
    const token = await insertEnrollmentToken(t);
    const enrolled = await new Promise<string>((resolve, reject) =>
      execFile(
        exe,
        ['enroll', '--url', t.baseUrl, '--token', token, '--name', 'self-updater', '--state-dir', stateDir],
        { env, timeout: 30_000 },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    agentId = /Enrolled as agent ([0-9a-f-]{36})/.exec(enrolled)?.[1] ?? '';
    supervisor = new Supervisor(exe, ['run', '--state-dir', stateDir, '--self-update-deadline', DEADLINE]);
    supervisor.start();
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${agentId}`)).body.status === 'connected',
      20_000,
      'the agent connected',
    );

    app = await createApp(t.owner, t.orgId, { slug: 'drover-agent', updateWorkflowName: 'drover-agent-update' });
    const [binding] = await bindDevices(t.owner, t.orgId, app.id, [agentId]);
    bindingId = binding!.id;
  }, 300_000);

  afterAll(async () => {
    await supervisor?.stop();
    await t?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  const agentVersion = async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${agentId}`)).body.agentVersion;
  const agentLog = () => fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8');
  const ended = async (n: number) => {
    const jobs = await updateJobsOf(t, agentId);
    const job = jobs[n];
    return job && !['pending', 'queued', 'running'].includes(job.status) ? job : undefined;
  };

  it('reports the built-in workflow drover-agent-update with its workflows', async () => {
    const listed = await t.owner.get<{ name: string; description: string }[]>(`/orgs/${t.orgId}/workflows`);
    const names = JSON.stringify(listed.body);
    expect(names).toContain('drover-agent-update');
    expect(await agentVersion()).toBe('0.1.0');
  });

  it('rolls a new binary that cannot connect back to the previous one, and the update job says so', async () => {
    const uploader = await artifactUploader(t);
    const fileId = await uploadArtifact(uploader, fs.readFileSync(builds.broken), 'drover-agent');
    await release(t.owner, t.orgId, app.id, { version: '0.1.1', artifactFileId: fileId });

    const job = await eventually(
      () => ended(0),
      60_000,
      () => `the update to 0.1.1 ended (the agent exited with ${JSON.stringify(supervisor.exits)})`,
    );
    expect(job.status).toBe('failed');
    expect(job.errorMessage).toMatch(
      /^self-update to 0\.1\.1 failed: rolled back to 0\.1\.0: it did not connect to the coordinator within 8s \(last error: cannot open the stream: .*401/,
    );
    expect(await version(exe)).toBe('0.1.0');
    // The swap and the rollback each stopped the agent with 75; the restart loop started it again.
    expect(supervisor.exits).toEqual([75, 75]);
    expect(fs.existsSync(path.join(stateDir, 'self-update.json'))).toBe(false);
    const b = await bindingWhen(t, app.id, bindingId, (x) => x.state === 'failed', 'the binding failed');
    expect(b.error).toContain('rolled back to 0.1.0');
    expect(await agentVersion()).toBe('0.1.0');
    // The field technician's lines, in the agent's log.
    const log = agentLog();
    expect(log).toContain('self-update: running 0.1.1 on trial (start 1)');
    expect(log).toContain('self-update to 0.1.1 rolled back: it did not connect to the coordinator within 8s');
    expect(log).toContain('self-update to 0.1.1 failed and was rolled back');
  }, 120_000);

  it('updates itself to 0.2.0, restarts, and the update job reports the new agentVersion', async () => {
    const uploader = await artifactUploader(t);
    const fileId = await uploadArtifact(uploader, fs.readFileSync(builds.v2), 'drover-agent');
    const published = await release(t.owner, t.orgId, app.id, { version: '0.2.0', artifactFileId: fileId });

    const job = await eventually(
      () => ended(1),
      60_000,
      () => `the update to 0.2.0 ended (the agent exited with ${JSON.stringify(supervisor.exits)})`,
    );
    expect(job).toMatchObject({ status: 'success', errorMessage: null });
    const detail = (await t.owner.get(`/jobs/${job.id}`)).body;
    expect(detail.output).toEqual({ agentVersion: '0.2.0', previousVersion: '0.1.0' });
    expect(detail.logs.map((l: { text: string }) => l.text).join('\n')).toContain(
      'self-update: the new binary answers 0.2.0 (Node.js',
    );
    expect(await agentVersion()).toBe('0.2.0');
    const b = await bindingWhen(t, app.id, bindingId, (x) => x.state === 'installed', 'the binding installed');
    expect(b.current).toMatchObject({ releaseId: published.id, version: '0.2.0' });
    expect(await version(exe)).toBe('0.2.0');
    expect(await version(`${exe}.previous`)).toBe('0.1.0');
    expect(supervisor.exits).toEqual([75, 75, 75]);
    expect(fs.existsSync(path.join(stateDir, 'self-update.json'))).toBe(false);
    expect(agentLog()).toContain('self-update to 0.2.0 confirmed: connected to the coordinator');
  }, 120_000);
});
