import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { insertEnrollmentToken } from '../helpers/agent.js';
import { createTestJob } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BINARY = path.join(REPO, 'agent/dist/drover-agent');
const BUILD = path.join(REPO, 'agent/scripts/build-binary.mjs');
const EXAMPLES = path.join(REPO, 'agent/examples/workflows');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], options: { cwd?: string; timeout?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    // A bare environment: the binary must not need NODE_OPTIONS, tsx or the repository.
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
    execFile(file, args, { cwd: options.cwd, env, timeout: options.timeout ?? 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

describe('the single executable agent/dist/drover-agent', () => {
  let t: TestCoordinator;
  let scratch: string;
  let stateDir: string;
  let agentId: string;
  let daemon: ChildProcess | undefined;
  beforeAll(async () => {
    // Built once (skipped when made from the same inputs), as `pnpm --filter @drover/agent build:binary` does.
    const build = await run(process.execPath, [BUILD, '--if-stale'], { cwd: REPO, timeout: 240_000 });
    if (build.code !== 0) throw new Error(`build:binary failed:\n${build.stdout}\n${build.stderr}`);
    t = await startTestCoordinator();
    scratch = makeTempDir('drover-agent-binary-');
  }, 300_000);
  afterAll(async () => {
    if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
      daemon.kill('SIGKILL');
      await new Promise((resolve) => daemon!.once('exit', resolve));
    }
    await t?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('is one executable file that runs without node_modules or the repository', async () => {
    const stat = fs.statSync(BINARY);
    expect(stat.mode & 0o111).not.toBe(0);
    const version = await run(BINARY, ['--version'], { cwd: scratch });
    // Built from Node 24 whatever node runs this test (agent/scripts/build-binary.mjs).
    expect(version.stdout).toMatch(
      new RegExp(`^0\\.1\\.0 \\(Node\\.js 24\\.\\d+\\.\\d+, ${process.platform}-${process.arch}\\)\\n$`),
    );
    expect(version).toMatchObject({ code: 0, stderr: '' });
    const help = await run(BINARY, ['--help'], { cwd: scratch });
    expect(help.code).toBe(0);
    for (const command of ['enroll', 'status', 'workflows', 'logs']) expect(help.stdout).toContain(command);
  });

  it('enrolls against a real coordinator, then shows its status', async () => {
    stateDir = path.join(scratch, 'state');
    const token = await insertEnrollmentToken(t);
    const enroll = await run(
      BINARY,
      ['enroll', '--url', t.baseUrl, '--token', token, '--name', 'sea-box', '--state-dir', stateDir],
      { cwd: scratch },
    );
    expect(enroll.stderr).toBe('');
    expect(enroll.code).toBe(0);
    agentId = /Enrolled as agent ([0-9a-f-]{36}) \("sea-box"\)/.exec(enroll.stdout)?.[1] ?? '';
    expect(agentId).not.toBe('');
    const listed = await t.owner.get<{ items?: { id: string; name: string }[] } | { id: string; name: string }[]>(
      `/orgs/${t.orgId}/agents`,
    );
    expect(JSON.stringify(listed.body)).toContain(agentId);

    const status = await run(BINARY, ['status', '--state-dir', stateDir], { cwd: scratch });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`Agent id:      ${agentId}`);
    expect(status.stdout).toMatch(/Agent: +not running/);
  });

  it('validates and lists workflow files, with file:line problems', async () => {
    const dir = path.join(scratch, 'workflows');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(EXAMPLES, 'hello.yaml'), path.join(dir, 'hello.yaml'));
    const ok = await run(BINARY, ['workflows', '--state-dir', scratch, '--workflows-dir', dir], { cwd: scratch });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/hello +1\.0 +who:string +2 steps +1m +hello\.yaml/);

    fs.writeFileSync(path.join(dir, 'broken.yml'), 'name: broken\nsteps:\n  - run: x\n    retries: 3\n');
    const bad = await run(BINARY, ['workflows', '--state-dir', scratch, '--workflows-dir', dir], { cwd: scratch });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(
      'broken.yml:4: steps[0].retries: unknown key; expected one of name, run, args, env, cwd, timeout, shell',
    );
  });

  it('runs as the daemon: connects, runs a job with its params and secrets, and stops on SIGTERM', async () => {
    expect(agentId).not.toBe(''); // enrolled by the test above
    const workflows = path.join(stateDir, 'workflows');
    fs.mkdirSync(workflows, { recursive: true });
    fs.copyFileSync(path.join(EXAMPLES, 'hello.yaml'), path.join(workflows, 'hello.yaml'));
    fs.writeFileSync(
      path.join(workflows, 'keyed.yaml'),
      'name: keyed\nsecrets: [API_KEY]\nsteps:\n  - run: echo "using $API_KEY"; echo "key=$API_KEY" >> "$DROVER_OUTPUT"\n    shell: true\n',
    );
    fs.writeFileSync(path.join(stateDir, 'secrets.yaml'), 'API_KEY: "sk-live-4242"\n', { mode: 0o600 });

    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1' };
    const child = spawn(BINARY, ['run', '--state-dir', stateDir], { cwd: scratch, env, stdio: 'ignore' });
    daemon = child;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const statusFile = path.join(stateDir, 'status.json');
    const readStatus = () => {
      try {
        return JSON.parse(fs.readFileSync(statusFile, 'utf8'));
      } catch {
        return null;
      }
    };
    await eventually(
      () => readStatus()?.connection === 'connected' && readStatus()?.workflows.loaded === 2,
      20_000,
      'connected',
    );

    const status = await run(BINARY, ['status', '--state-dir', stateDir], { cwd: scratch });
    expect(status.stdout).toMatch(new RegExp(`Agent: +running \\(pid ${child.pid},`));
    expect(status.stdout).toMatch(/Connection: +connected/);

    const agent = { agentId, orgId: t.orgId };
    const hello = await createTestJob(t, agent, {
      workflowName: 'hello',
      params: { who: 'technician' },
      timeoutMs: 30_000,
    });
    const keyed = await createTestJob(t, agent, { workflowName: 'keyed', params: {}, timeoutMs: 30_000 });
    const done = async (id: string) => {
      const job = (await t.owner.get(`/jobs/${id}`)).body;
      return ['success', 'failed', 'timed_out', 'rejected', 'cancelled'].includes(job.status) ? job : undefined;
    };
    const texts = (job: { logs: { text: string }[] }) => job.logs.map((l) => l.text);
    const helloJob = await eventually(() => done(hello.id), 20_000, 'the hello job to finish');
    expect(helloJob).toMatchObject({ status: 'success', exitCode: 0, output: { greeting: 'Hello, technician!' } });
    expect(texts(helloJob)).toContain('Hello, technician!');

    const keyedJob = await eventually(() => done(keyed.id), 20_000, 'the keyed job to finish');
    expect(keyedJob).toMatchObject({ status: 'success', output: { key: '***' } });
    const keyedLogs = texts(keyedJob);
    expect(keyedLogs).toContain('using ***');
    expect(JSON.stringify(keyedLogs)).not.toContain('sk-live-4242');
    expect(fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8')).not.toContain('sk-live-4242');

    // A job id's last 8 characters, as the lines show them (its first 8 are its creation time).
    const tail = `…${hello.id.slice(-8)}`;
    const logs = await run(BINARY, ['logs', '--state-dir', stateDir, '--job', tail], { cwd: scratch });
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain(`job ${tail} hello:`);
    expect(logs.stdout).not.toContain(keyed.id.slice(-8));

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const after = await run(BINARY, ['status', '--state-dir', stateDir], { cwd: scratch });
    expect(after.stdout).toMatch(/Agent: +not running/);
  }, 60_000);
});
