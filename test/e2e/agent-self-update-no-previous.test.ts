import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEnrollmentToken } from '../helpers/agent.js';
import { buildAgentBinary, buildAgentVersion } from '../helpers/agent-builds.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact } from '../helpers/ota.js';
import { bindingWhen, updateJobsOf } from '../helpers/ota-agent.js';
import { eventually } from '../helpers/poll.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Self-update whose rollback cannot run (docs/agent.md, "Self-update"): the new binary misses its
 * deadline (the network is down during its trial) and `drover-agent.previous` is gone (a field
 * technician removed it). The new binary keeps running; once it connects, the update job must
 * end and the marker go, rather than the job staying `running` and every start trying the
 * rollback again. Real single-executable builds, a real coordinator behind a TCP proxy that is cut.
 */

const DEADLINE = '4s';
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1' };

function version(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, ['--version'], { env, timeout: 30_000 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout.trim().split(' ')[0]!),
    );
  });
}

describe('self-update whose previous binary cannot be put back', () => {
  let t: TestCoordinator;
  let proxy: TcpProxy;
  let scratch: string;
  let exe: string;
  let stateDir: string;
  let agentId: string;
  let child: ChildProcess | null = null;
  const exits: (number | null)[] = [];

  const start = () => {
    const c = spawn(exe, ['run', '--state-dir', stateDir, '--self-update-deadline', DEADLINE], {
      env,
      stdio: 'ignore',
    });
    child = c;
    c.once('exit', (code) => exits.push(code));
  };
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    await exited;
  };
  const agentLog = () => fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8');
  const marker = () => path.join(stateDir, 'self-update.json');

  beforeAll(async () => {
    const v1 = await buildAgentBinary();
    t = await startTestCoordinator();
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    scratch = makeTempDir('drover-self-update-no-previous-');
    fs.mkdirSync(path.join(scratch, 'bin'));
    exe = path.join(scratch, 'bin', 'drover-agent');
    fs.copyFileSync(v1, exe);
    fs.chmodSync(exe, 0o755);
    stateDir = path.join(scratch, 'state');
    const token = await insertEnrollmentToken(t);
    const url = `http://127.0.0.1:${proxy.port}/v1`;
    const enrolled = await new Promise<string>((resolve, reject) =>
      execFile(
        exe,
        ['enroll', '--url', url, '--token', token, '--name', 'no-previous', '--state-dir', stateDir],
        { env, timeout: 30_000 },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    agentId = /Enrolled as agent ([0-9a-f-]{36})/.exec(enrolled)?.[1] ?? '';
    start();
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${agentId}`)).body.status === 'connected',
      20_000,
      'the agent connected',
    );
  }, 300_000);

  afterAll(async () => {
    await stop();
    await proxy?.close();
    await t?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('ends the update job once the new binary connects, and clears the marker', async () => {
    const v2 = await buildAgentVersion('0.2.0');
    const app = await createApp(t.owner, t.orgId, { slug: 'drover-agent', updateWorkflowName: 'drover-agent-update' });
    const [binding] = await bindDevices(t.owner, t.orgId, app.id, [agentId]);
    const uploader = await artifactUploader(t);
    const fileId = await uploadArtifact(uploader, fs.readFileSync(v2), 'drover-agent');
    const published = await release(t.owner, t.orgId, app.id, { version: '0.2.0', artifactFileId: fileId });

    // The swap: the old binary exits with 75. No restart loop here: the network goes down and the
    // technician removes the previous binary before the new one starts.
    await eventually(() => exits.length === 1, 120_000, 'the agent swapped its binary and exited');
    expect(exits).toEqual([75]);
    expect(await version(exe)).toBe('0.2.0');
    await proxy.cut();
    fs.rmSync(`${exe}.previous`);
    start();
    await eventually(
      () => agentLog().includes('self-update: cannot put'),
      60_000,
      'the rollback was tried after the deadline and could not run',
    );
    expect(child!.exitCode).toBeNull(); // 0.2.0 keeps running

    // The network comes back: the new binary connects, and settles the update.
    await proxy.restore();
    const job = await eventually(
      async () => {
        const [j] = await updateJobsOf(t, agentId);
        return j && !['pending', 'queued', 'running'].includes(j.status) ? j : undefined;
      },
      60_000,
      'the update job ended',
    );
    expect(job).toMatchObject({ status: 'success', errorMessage: null });
    const b = await bindingWhen(t, app.id, binding!.id, (x) => x.state === 'installed', 'the binding installed');
    expect(b.current).toMatchObject({ releaseId: published.id, version: '0.2.0' });
    expect(fs.existsSync(marker())).toBe(false);
    expect(agentLog()).toContain('self-update to 0.2.0 confirmed: connected to the coordinator');
  }, 240_000);
});
