import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateEd25519KeyPair } from '@drover/shared';
import { acquireDaemonLock } from '../../src/daemon/lock.js';
import type { DaemonStatus } from '../../src/status/daemon-status.js';
import { saveEnrollment, savePrivateKey } from '../../src/state/enrollment.js';
import { runAgentCli as run } from './run-cli.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-status-daemon-'));
  savePrivateKey(root, generateEd25519KeyPair().privateKey);
  saveEnrollment(root, {
    url: 'https://drover.example.com',
    agentId: '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d',
    orgId: '0b7d7c2e-1111-4222-8333-444455556666',
    serverPublicKey: generateEd25519KeyPair().publicKey,
    enrolledAt: '2026-01-02T03:04:05.000Z',
  });
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const daemon = (pid: number): DaemonStatus => ({
  pid,
  startedAt: '2026-11-22T10:00:00.000Z',
  version: '0.1.0',
  connection: 'disconnected',
  lastConnectedAt: '2026-11-22T10:30:00.000Z',
  lastError: 'Cannot reach the coordinator at https://drover.example.com: connection refused',
  queue: {
    capacity: 4,
    running: {
      jobId: '1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516',
      workflowName: 'deploy',
      startedAt: '2026-11-22T10:31:02.000Z',
    },
    waiting: [{ jobId: 'aaaabbbb-5f60-4718-9a0b-c1d2e3f4bbbb', workflowName: 'backup' }],
  },
  workflows: {
    loaded: 2,
    invalid: [
      { file: 'bad.yaml', message: 'line 2: steps: expected a list' },
      { file: 'bad.yaml', message: 'line 5: timeout: expected a duration' },
      { file: 'worse.yaml', message: 'invalid YAML' },
    ],
  },
  updatedAt: '2026-11-22T10:31:03.000Z',
});

/** status.json as the daemon of `status.pid` writes it, holding daemon.lock as it does (unless `locked: false`). */
const writeStatus = (status: DaemonStatus, { locked = true } = {}) => {
  fs.writeFileSync(path.join(root, 'status.json'), JSON.stringify(status));
  if (locked && !fs.existsSync(path.join(root, 'daemon.lock'))) acquireDaemonLock(root, status.pid);
};

describe('drover-agent status with the daemon', () => {
  it("shows the running daemon's connection, queue and workflows from status.json", async () => {
    writeStatus(daemon(process.pid));
    const res = await run('status', '--state-dir', root);
    expect(res.code).toBe(0);
    expect(res.out).toMatch(new RegExp(`Agent: +running \\(pid ${process.pid}, version 0\\.1\\.0, since \\d{4}-`));
    expect(res.out).toMatch(/Connection: +disconnected \(last connected: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)/);
    expect(res.out).toMatch(/Last error: +Cannot reach the coordinator/);
    expect(res.out).toMatch(/Queue: +1 running, 1 waiting \(capacity 4\)/);
    expect(res.out).toMatch(/running: +job …e3f40516 deploy \(started /);
    expect(res.out).toMatch(/waiting: +job …e3f4bbbb backup/);
    // Files are counted, as `drover-agent workflows` counts them; each problem has its line.
    expect(res.out).toMatch(
      /Workflows: +2 loaded, 2 invalid files skipped \(3 problems\)\n +invalid: +bad\.yaml: line 2: steps: expected a list\n +invalid: +bad\.yaml: line 5: /,
    );
    expect(res.out).not.toMatch(/Outbox:/);
    // Reports kept while the coordinator is unreachable are counted from the outbox directory.
    fs.mkdirSync(path.join(root, 'outbox'), { recursive: true });
    for (const name of ['000000000001-finish-j1.json', '000000000002-logs-j2.json', 'x.tmp']) {
      fs.writeFileSync(path.join(root, 'outbox', name), '{}');
    }
    expect((await run('status', '--state-dir', root)).out).toMatch(
      /Outbox: +2 report\(s\) waiting for the coordinator/,
    );
    fs.rmSync(path.join(root, 'outbox'), { recursive: true });
    const json = JSON.parse((await run('status', '--state-dir', root, '--json')).out);
    expect(json).toMatchObject({ running: true, daemon: { pid: process.pid, connection: 'disconnected' } });
  });

  it('shows the labels the agent reports, and what the coordinator made of them', async () => {
    const reported = { arch: 'x64', os: 'linux', site: 'berlin' };
    const labelsOut = async (labels: DaemonStatus['labels']) => {
      writeStatus({ ...daemon(process.pid), labels });
      const { out } = await run('status', '--state-dir', root);
      return out.split('\n').filter((line) => /^(Labels:| {2}coordinator:)/.test(line));
    };
    expect(await labelsOut({ reported, state: 'pending', effective: null, problem: null })).toEqual([
      'Labels:        arch=x64,os=linux,site=berlin (not taken by the coordinator yet)',
    ]);
    expect(await labelsOut({ reported, state: 'accepted', effective: reported, problem: null })).toEqual([
      'Labels:        arch=x64,os=linux,site=berlin',
    ]);
    expect(
      await labelsOut({ reported, state: 'accepted', effective: { ...reported, site: 'munich' }, problem: null }),
    ).toEqual([
      'Labels:        arch=x64,os=linux,site=berlin',
      "  coordinator: arch=x64,os=linux,site=munich (an operator's label wins a clash)",
    ]);
    expect(await labelsOut({ reported, state: 'unsupported', effective: null, problem: null })).toEqual([
      'Labels:        arch=x64,os=linux,site=berlin (this coordinator does not take labels; upgrade it to use them)',
    ]);
    expect(
      await labelsOut({ reported, state: 'refused', effective: null, problem: 'body.labels.site: not allowed' }),
    ).toEqual([
      'Labels:        arch=x64,os=linux,site=berlin (refused by the coordinator: body.labels.site: not allowed)',
    ]);
    // A status.json of an agent before labels has none: no line.
    expect(await labelsOut(undefined)).toEqual([]);
  });

  it('says "not running" when the pid in status.json is gone', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    const pid = child.pid!;
    await new Promise((resolve) => child.on('exit', resolve));
    writeStatus(daemon(pid));
    const res = await run('status', '--state-dir', root);
    expect(res.out).toMatch(
      new RegExp(`Agent: +not running \\(its process, pid ${pid}, has ended; its last status was written `),
    );
    expect(res.out).not.toMatch(/Queue:/);
    expect(JSON.parse((await run('status', '--state-dir', root, '--json')).out)).toMatchObject({ running: false });
  });

  it('says "not running" when the pid in status.json is now another process\'s (a daemon killed, its pid reused)', async () => {
    // The daemon died without its lock (kill -9, a power cut) and its pid went to another process:
    // that one runs, but it is not the agent. Here, a sleep given the pid of status.json.
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      writeStatus({ ...daemon(other.pid!), connection: 'connected' }, { locked: false });
      const res = await run('status', '--state-dir', root);
      expect(res.out).toMatch(new RegExp(`Agent: +not running \\(its process, pid ${other.pid}, has ended; `));
      expect(res.out).not.toMatch(/Connection:/);
      expect(JSON.parse((await run('status', '--state-dir', root, '--json')).out)).toMatchObject({ running: false });
      // A lock left by the dead daemon names its pid, but not this process's start: stale as well.
      fs.writeFileSync(path.join(root, 'daemon.lock'), `${other.pid}\nboot:1\n`);
      expect((await run('status', '--state-dir', root)).out).toMatch(/Agent: +not running \(its process/);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('says "not running" when there is no status.json, or a damaged one', async () => {
    expect((await run('status', '--state-dir', root)).out).toMatch(
      /Agent: +not running \(start it with: drover-agent run\)/,
    );
    fs.writeFileSync(path.join(root, 'status.json'), '{"pid": ');
    expect((await run('status', '--state-dir', root)).out).toMatch(/Agent: +not running/);
  });

  it("names the running daemon's proxy, else the one this environment's variables would give", async () => {
    const names = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];
    const saved = names.map((name) => [name, process.env[name]] as const);
    const setEnv = (vars: Record<string, string>) => {
      for (const name of names) delete process.env[name];
      Object.assign(process.env, vars);
    };
    try {
      setEnv({ HTTPS_PROXY: 'http://other:3128' });
      writeStatus({ ...daemon(process.pid), proxy: 'http://drover:***@proxy.lan:3128 (from HTTPS_PROXY)' });
      expect((await run('status', '--state-dir', root)).out).toContain(
        'Coordinator:   https://drover.example.com\nProxy:         http://drover:***@proxy.lan:3128 (from HTTPS_PROXY)\n',
      );

      fs.rmSync(path.join(root, 'status.json'));
      const byEnv = "(by this environment's variables; the agent reads its own at start)";
      setEnv({ https_proxy: 'http://drover:s3cret@proxy.lan:3128' });
      let res = await run('status', '--state-dir', root);
      expect(res.out).toContain(`Proxy:         http://drover:***@proxy.lan:3128 (from https_proxy) ${byEnv}\n`);
      expect(res.out).not.toContain('s3cret');
      setEnv({ HTTPS_PROXY: 'http://proxy.lan:3128', NO_PROXY: '.example.com' });
      expect((await run('status', '--state-dir', root)).out).toContain(
        `Proxy:         no proxy (NO_PROXY matches \`.example.com\`) ${byEnv}\n`,
      );
      setEnv({});
      expect((await run('status', '--state-dir', root)).out).toContain(`Proxy:         direct ${byEnv}\n`);
      setEnv({ HTTPS_PROXY: 'socks5://drover:s3cret@proxy.lan:1080' });
      res = await run('status', '--state-dir', root, '--json');
      expect(JSON.parse(res.out).proxy).toBe(
        'none usable: HTTPS_PROXY must be an http:// or https:// proxy (the agent speaks HTTP CONNECT to it), got `socks5://drover:***@proxy.lan:1080`',
      );
    } finally {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
