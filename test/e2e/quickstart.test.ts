import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive as alive } from '../helpers/agent-daemon.js';
import { eventually, sleep } from '../helpers/poll.js';
import { makeTempDir } from '../helpers/coordinator.js';
import { ApiClient } from '../helpers/http.js';
import { userPath } from '../helpers/old-node.js';
import { freePort } from '../helpers/ports.js';

/**
 * The README's main job, `scripts/quickstart.ts` (run by scripts/quickstart.sh after the build):
 * a coordinator and a local agent from the built dist, the sample workflow and printed curl lines
 * that work as printed; Ctrl-C stops everything.
 */

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The ids of the live processes whose parent is `ppid` and whose command line contains `match`. */
function childrenOf(ppid: number, match: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(parent) !== ppid || state === 'Z') continue;
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(match)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

interface CurlCall {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** Parses a printed `curl` command line (continuation lines joined; single-quoted words). */
function parseCurl(command: string): CurlCall {
  const words = [...command.replace(/\\\n/g, ' ').matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
  expect(words[0]).toBe('curl');
  const call: CurlCall = { method: 'GET', url: '', headers: {}, body: undefined };
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === '-s') continue;
    else if (word === '-X') call.method = words[++i]!;
    else if (word === '-H') {
      const header = words[++i]!;
      const colon = header.indexOf(':');
      call.headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (word === '-d') call.body = words[++i]!;
    else if (/^https?:\/\//.test(word)) call.url = word;
    else throw new Error(`unexpected curl word \`${word}\` in: ${command}`);
  }
  return call;
}

/** The curl command printed after the line `intro`. */
function curlAfter(output: string, intro: string): CurlCall {
  const at = output.indexOf(intro);
  expect(at, `the line "${intro}" in:\n${output}`).toBeGreaterThanOrEqual(0);
  const block = output
    .slice(at + intro.length)
    .split('\n\n')[0]!
    .trim();
  return parseCurl(block);
}

/** How scripts/quickstart.sh runs it, once set up. */
const QUICKSTART = ['--conditions=drover-source', '--import', 'tsx', 'scripts/quickstart.ts'];
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DROVER_')));

/** Runs a command to its end (in the checkout), with `env` added to a DROVER_-free environment. */
function runToEnd(command: string, args: string[], env: Record<string, string>, cwd = repoRoot) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const c = spawn(command, args, { cwd, env: { ...cleanEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    c.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    c.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function execute(call: CurlCall) {
  const res = await fetch(call.url, { method: call.method, headers: call.headers, body: call.body });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('the quickstart', () => {
  const dataDir = makeTempDir('drover-quickstart-');
  let child: ChildProcess | undefined;
  let output = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  const started: number[] = [];
  /** When the quickstart had everything running (performance.now()). */
  let upAt = 0;

  afterAll(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  beforeAll(async () => {
    // It runs the built coordinator and agent; CI builds before the tests.
    const built = ['agent/dist/cli/main.js', 'coordinator/dist/cli/main.js'].every((f) =>
      fs.existsSync(path.join(repoRoot, f)),
    );
    if (!built) {
      const build = spawnSync('pnpm', ['build'], { cwd: repoRoot, stdio: 'inherit', timeout: 300_000 });
      if (build.status !== 0) throw new Error(`pnpm build failed (${build.status ?? build.signal})`);
    }
    const port = await freePort();
    child = spawn(process.execPath, QUICKSTART, {
      cwd: repoRoot,
      env: { ...cleanEnv, DROVER_DATA_DIR: dataDir, DROVER_PORT: String(port), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((resolve) => child!.once('exit', (code, signal) => resolve({ code, signal })));
    await eventually(
      () => {
        if (child!.exitCode !== null) throw new Error(`the quickstart exited (${child!.exitCode}):\n${output}`);
        return output.includes('Press Ctrl-C to stop both.');
      },
      90_000,
      'the quickstart to print its curl lines',
    );
    started.push(...childrenOf(child.pid!, '/dist/cli/main.js'));
    upAt = performance.now();
  }, 400_000);

  it('prints curl lines that run the sample workflow async and sync', async () => {
    const asyncCall = curlAfter(output, 'Run the workflow and get the job id at once (async):');
    const syncCall = curlAfter(output, 'Run it and wait for the result (sync):');
    expect(asyncCall).toMatchObject({
      method: 'POST',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1\/triggers\/[0-9a-f-]{36}\/run$/),
      headers: { authorization: expect.stringMatching(/^Bearer drv_/), 'content-type': 'application/json' },
      body: '{"params":{"who":"Drover"}}',
    });

    const queued = await execute(asyncCall);
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    expect(queued.body).toEqual({
      jobId: expect.any(String),
      status: 'pending',
      statusUrl: `/api/jobs/${queued.body.jobId}`,
    });

    const result = await execute(syncCall);
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body).toMatchObject({
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: { greeting: 'Hello, Drover!' },
    });

    // The printed owner credentials sign in, and the async job has run too.
    const creds = /Dashboard owner: (\S+) \/ (\S+) /.exec(output);
    expect(creds, output).not.toBeNull();
    // The dashboard's address is printed, and it answers with the dashboard.
    const dashboard = /Dashboard: (http:\/\/\S+\/) /.exec(output);
    expect(dashboard, output).not.toBeNull();
    const page = await fetch(dashboard![1]!, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const owner = await new ApiClient(asyncCall.url.replace(/\/triggers\/.*$/, '')).login(creds![1]!, creds![2]!);
    const job = await eventually(
      async () => {
        const res = await owner.get(`/jobs/${queued.body.jobId}`);
        return res.body.status === 'success' ? res.body : undefined;
      },
      15_000,
      'the async job to succeed',
    );
    expect(job.output).toEqual({ greeting: 'Hello, Drover!' });
  }, 60_000);

  it('prints drover and drover-agent commands that work as pasted, from anywhere, even where `node` is too old', async () => {
    const elsewhere = makeTempDir('drover-quickstart-shell-');
    try {
      // A shell whose `node` is 20 when setup fetched Node.js 24 (as on such a machine), in another directory.
      const { PATH } = userPath(path.join(elsewhere, 'bin'));
      const paste = (line: string) => runToEnd('bash', ['-c', line], { PATH, HOME: elsewhere }, elsewhere);
      const at = output.indexOf('The same with the drover command line');
      expect(at, output).toBeGreaterThanOrEqual(0);
      const drover = output.slice(output.indexOf('\n', at) + 1).split('\n\n')[0]!;
      expect(drover).toMatch(/^ {2}DROVER_URL=\S+ DROVER_TOKEN=drv_\S+ \\\n {4}\/\S+\/drover run [0-9a-f-]{36} /);
      const ran = await paste(drover);
      expect(ran.stderr).toBe('');
      expect(ran.stdout).toMatch(/^Job [0-9a-f-]{36} succeeded\n.+\nOutput:\n {2}greeting: Hello, Drover!\n$/);
      expect(ran.code).toBe(0);

      const logs = /^read its log with: (.+)$/m.exec(output)?.[1];
      expect(logs, output).toMatch(/^\/\S+\/drover-agent logs --state-dir /);
      const read = await paste(logs!);
      expect(read.code, read.stderr).toBe(0);
      expect(read.stdout).toMatch(/ job …[0-9a-f]{8} hello: /);
      expect(output).toContain(
        `To call them by name, put the checkout on your PATH: export PATH=${repoRoot.replace(/\/$/, '')}:"$PATH"`,
      );
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 60_000);

  it('says what it is doing while it starts', () => {
    const lines = output.split('\n');
    const at = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix));
    expect(at('First run: the owner will be admin@localhost')).toBe(0);
    expect(at('Starting the coordinator on http://127.0.0.1:')).toBeGreaterThan(0);
    expect(at('Enrolling the local agent')).toBeGreaterThan(at('Starting the coordinator'));
    expect(at('Starting the local agent')).toBeGreaterThan(at('Enrolling the local agent'));
    expect(at('Drover is running')).toBeGreaterThan(at('Starting the local agent'));
  });

  it('refuses a second quick start on the same data in one line naming the first, before setting anything up', async () => {
    const before = fs.readFileSync(path.join(dataDir, 'quickstart.json'), 'utf8');
    const other = String(await freePort());
    const line = `quickstart: another quick start (pid ${child!.pid}) is running with the data directory ${dataDir}; stop it (Ctrl-C in its terminal), or give this one another DROVER_DATA_DIR and DROVER_PORT\n`;
    const [direct, script] = await Promise.all([
      runToEnd(process.execPath, QUICKSTART, { DROVER_DATA_DIR: dataDir, DROVER_PORT: other }),
      runToEnd('bash', ['scripts/quickstart.sh'], { DROVER_DATA_DIR: dataDir, DROVER_PORT: other }),
    ]);
    expect(direct).toEqual({ code: 1, stdout: '', stderr: line });
    expect(script).toEqual({ code: 1, stdout: '', stderr: line }); // no setup ran
    expect(fs.readFileSync(path.join(dataDir, 'quickstart.json'), 'utf8')).toBe(before);
  });

  it('refuses in one line, creating nothing, when its port is in use', async () => {
    const port = new URL(curlAfter(output, 'Run it and wait for the result (sync):').url).port;
    const fresh = path.join(makeTempDir('drover-quickstart-'), 'data');
    const res = await runToEnd(process.execPath, QUICKSTART, { DROVER_DATA_DIR: fresh, DROVER_PORT: port });
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr: `quickstart: port ${port} on 127.0.0.1 is in use by another program; stop it, or set DROVER_PORT (and DROVER_HOST) to another address\n`,
    });
    expect(fs.existsSync(fresh)).toBe(false);
  });

  it('stops the coordinator and the agent gracefully on Ctrl-C (SIGINT)', async () => {
    expect(started).toHaveLength(2); // the coordinator and the agent
    expect(started.every(alive)).toBe(true);
    // Left running 8 s first: a response the quickstart never read once held one of its
    // connections open, and the coordinator's shutdown waited for it until its 10 s watchdog
    // (it showed only after several seconds of uptime). The tests above ran meanwhile: only
    // what is left of the 8 s is waited.
    await sleep(upAt + 8000 - performance.now());
    const stopAt = Date.now();
    child!.kill('SIGINT');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopAt).toBeLessThan(9000);
    expect(output).toContain('Stopping the agent and the coordinator...');
    await eventually(() => started.every((pid) => !alive(pid)), 15_000, 'both children to exit');
    const coordinatorLog = fs.readFileSync(path.join(dataDir, 'coordinator.log'), 'utf8');
    expect(coordinatorLog).toContain('"msg":"stopped"');
    expect(coordinatorLog).not.toContain('shutdown did not finish in time');
    expect(fs.existsSync(path.join(dataDir, 'quickstart.lock'))).toBe(false);
  }, 40_000);
});

describe('the quickstart, when a process it starts fails', () => {
  it('says why in one line, from the output of that process', async () => {
    const dataDir = makeTempDir('drover-quickstart-');
    try {
      fs.writeFileSync(path.join(dataDir, 'drover.sqlite'), 'this is not a database, it is text\n'.repeat(200));
      fs.writeFileSync(path.join(dataDir, 'quickstart.json'), '{"email":"admin@localhost","password":"irrelevant"}');
      const port = String(await freePort());
      const res = await runToEnd(process.execPath, QUICKSTART, { DROVER_DATA_DIR: dataDir, DROVER_PORT: port });
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        `quickstart: the coordinator exited (code 1): drover-coordinator: could not start: file is not a database (log: ${path.join(dataDir, 'coordinator.log')})\n`,
      );
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("says why the agent stopped from the agent's own log, where its output has nothing", async () => {
    const dataDir = makeTempDir('drover-quickstart-');
    const child = spawn(process.execPath, QUICKSTART, {
      cwd: repoRoot,
      env: { ...cleanEnv, DROVER_DATA_DIR: dataDir, DROVER_PORT: String(await freePort()), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    const started: number[] = [];
    try {
      await eventually(() => stdout.includes('Press Ctrl-C to stop both.'), 90_000, 'the quickstart to be up');
      started.push(...childrenOf(child.pid!, '/dist/cli/main.js'));
      const [agent] = childrenOf(child.pid!, 'agent/dist/cli/main.js');
      // Stopped from outside (a `kill`, the machine shutting down): it writes nothing to its
      // output, only to its log, whose last line the quick start must show.
      process.kill(agent!, 'SIGTERM');
      expect(await exited).toBe(1);
      const agentLog = path.join(dataDir, 'agent', 'logs', 'agent.log');
      expect(stderr).toBe(`quickstart: the agent exited (code 0): drover-agent stopped (log: ${agentLog})\n`);
      await eventually(() => started.every((pid) => !alive(pid)), 15_000, 'the coordinator to be stopped too');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 150_000);
});
