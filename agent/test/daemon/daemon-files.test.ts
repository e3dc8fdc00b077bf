import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { acquireDaemonLock } from '../../src/daemon/lock.js';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { Journal } from '../../src/jobs/journal.js';
import { createAgentLogger } from '../../src/logging/create-logger.js';
import { Outbox } from '../../src/outbox/outbox.js';
import { isAlive, readDaemonStatus } from '../../src/status/daemon-status.js';
import { DaemonStatusWriter } from '../../src/status/daemon-status-writer.js';
import { runAgentCli as run } from '../cli/run-cli.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-daemon-files-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe('a directory of the state directory', () => {
  it('with a file or a loop of links in its place stops the start with one line naming it, the cause and the fix', () => {
    const notDir = (dir: string, what: string) =>
      `Cannot use ${dir} (${what}): it is not a directory (EEXIST): move away the file in its place, and the agent makes the directory at its next start`;
    for (const name of ['outbox', 'jobs', 'deploy', 'logs']) fs.writeFileSync(path.join(root, name), '');
    const outbox = path.join(root, 'outbox');
    expect(() => Outbox.open(outbox)).toThrow(notDir(outbox, 'the reports waiting for the coordinator'));
    expect(() => Journal.open(root)).toThrow(notDir(path.join(root, 'jobs'), "the jobs' directories"));
    expect(() => DeployStateStore.open(root)).toThrow(
      notDir(path.join(root, 'deploy'), 'the record of over-the-air updates'),
    );
    expect(() => createAgentLogger({ stateDir: root, level: 'info' })).toThrow(
      notDir(path.join(root, 'logs'), "the agent's log"),
    );
    fs.rmSync(outbox);
    fs.symlinkSync('outbox', outbox);
    expect(() => Outbox.open(outbox)).toThrow(
      `Cannot use ${outbox} (the reports waiting for the coordinator): a loop of symbolic links (ELOOP): make it a directory`,
    );
  });
});

describe('the daemon lock', () => {
  it('lets one daemon at a time use a state directory, and is released on stop', () => {
    const release = acquireDaemonLock(root);
    expect(fs.readFileSync(path.join(root, 'daemon.lock'), 'utf8').split('\n')[0]).toBe(String(process.pid));
    const other = process.ppid; // a live process that is not us
    expect(() => acquireDaemonLock(root, other)).toThrow(
      new RegExp(`Another drover-agent \\(pid ${process.pid}\\) is already running with the state directory`),
    );
    release();
    expect(fs.existsSync(path.join(root, 'daemon.lock'))).toBe(false);
  });

  it('says that the disk is full in words, and leaves no file behind', () => {
    const write = vi.spyOn(fs, 'writeFileSync').mockImplementation((target, _data, options) => {
      fs.closeSync(fs.openSync(target as string, (options as { flag: string }).flag)); // created, then nothing fits
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    try {
      expect(() => acquireDaemonLock(root)).toThrow(
        `Cannot take the lock ${path.join(root, 'daemon.lock')}: no space left on the device in ${root} (free some: \`df -h ${root}\`)`,
      );
    } finally {
      write.mockRestore();
    }
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('says that the file system is read-only in words (remounted so after an error), where it said EROFS', () => {
    const write = vi.spyOn(fs, 'writeFileSync').mockImplementation(() => {
      throw Object.assign(new Error('EROFS: read-only file system, open'), { code: 'EROFS' });
    });
    try {
      expect(() => acquireDaemonLock(root)).toThrow(
        `Cannot take the lock ${path.join(root, 'daemon.lock')}: the file system is read-only (EROFS)`,
      );
    } finally {
      write.mockRestore();
    }
  });

  it('says what stands in its place when it is a FIFO, and that the status finds no daemon there', () => {
    // The read that would wait for a writer for ever is proven refused in a process of its own
    // (shared/test/pid-lock.test.ts); here, the words of the agent.
    execFileSync('mkfifo', [path.join(root, 'daemon.lock'), path.join(root, 'status.json')]);
    expect(() => acquireDaemonLock(root)).toThrow(
      `Cannot take the lock ${path.join(root, 'daemon.lock')}: it is a FIFO, not a regular file (EINVAL): remove it`,
    );
    expect(readDaemonStatus(root)).toEqual({ status: null, running: false });
  });

  it('takes over a lock left by a daemon that died', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const deadPid = child.pid!;
    await new Promise((resolve) => child.once('exit', resolve));
    fs.writeFileSync(path.join(root, 'daemon.lock'), `${deadPid}\n`);
    const release = acquireDaemonLock(root);
    expect(fs.readFileSync(path.join(root, 'daemon.lock'), 'utf8').split('\n')[0]).toBe(String(process.pid));
    release();
  });

  it.runIf(process.platform === 'linux')(
    'takes over a lock whose process is a zombie (exited, not yet reaped by its parent)',
    async () => {
      const { zombie, parent } = await startZombie();
      try {
        expect(isAlive(zombie)).toBe(false);
        fs.writeFileSync(path.join(root, 'daemon.lock'), `${zombie}\n`);
        const release = acquireDaemonLock(root);
        expect(fs.readFileSync(path.join(root, 'daemon.lock'), 'utf8').split('\n')[0]).toBe(String(process.pid));
        release();
        expect(isAlive(parent.pid!)).toBe(true); // a sleeping process is still alive
      } finally {
        parent.kill('SIGKILL'); // its zombie child goes to init, which reaps it
      }
    },
  );
});

/**
 * A real zombie: `sh` starts a child that waits for a line on fd 3, then becomes `sleep` (exec
 * keeps the pid), which never waits for children. Once `sleep` runs, the line is sent: the child
 * exits and stays a zombie. Resolves once `/proc` shows it in state Z.
 */
async function startZombie(): Promise<{ zombie: number; parent: ChildProcess }> {
  const parent = spawn('/bin/sh', ['-c', 'read line <&3 & echo $!; exec sleep 60'], {
    stdio: ['ignore', 'pipe', 'ignore', 'pipe'],
  });
  const zombie = await new Promise<number>((resolve, reject) => {
    let out = '';
    parent.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(Number.parseInt(out, 10));
    });
    parent.once('error', reject);
  });
  await vi.waitFor(() => expect(fs.readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim()).toBe('sleep'));
  (parent.stdio[3] as Writable).end('go\n');
  await vi.waitFor(() => expect(procState(zombie)).toBe('Z'), { timeout: 5000 });
  return { zombie, parent };
}

function procState(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .charAt(0);
}

describe('status.json', () => {
  it('is written at once, then once per burst of changes, in the shape `drover-agent status` reads', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onTestFinished(() => void vi.useRealTimers());
    const writes = () => fs.statSync(path.join(root, 'status.json')).ino; // each write is a new file
    const release = acquireDaemonLock(root); // as the daemon holds it: what tells that it runs
    const status = new DaemonStatusWriter(
      root,
      {
        pid: process.pid,
        startedAt: '2026-01-01T00:00:00.000Z',
        version: '0.1.0',
        connection: 'connecting',
        lastConnectedAt: null,
        lastError: null,
        queue: { capacity: 4, running: null, waiting: [] },
        workflows: { loaded: 0, invalid: [] },
      },
      () => {},
      50,
    );
    expect(readDaemonStatus(root)).toMatchObject({ running: true, status: { connection: 'connecting' } });
    const first = writes();
    status.update({ connection: 'connected', lastConnectedAt: '2026-01-01T00:00:01.000Z' });
    vi.advanceTimersByTime(10);
    status.update({ queue: { capacity: 4, running: null, waiting: [{ jobId: 'j', workflowName: 'w' }] } });
    vi.advanceTimersByTime(39);
    expect(writes()).toBe(first); // not yet: changes gather for 50 ms from the first one
    vi.advanceTimersByTime(1);
    expect(writes()).not.toBe(first);
    expect(readDaemonStatus(root).status).toMatchObject({
      connection: 'connected',
      queue: { waiting: [{ jobId: 'j', workflowName: 'w' }] },
    });
    status.update({ connection: 'connecting' });
    status.close({ connection: 'disconnected' }); // at once, and the pending write is dropped
    expect(readDaemonStatus(root).status?.connection).toBe('disconnected');
    status.update({ connection: 'connected' });
    vi.advanceTimersByTime(1000);
    expect(readDaemonStatus(root).status?.connection).toBe('disconnected');
    release();
    expect(readDaemonStatus(root)).toMatchObject({ running: false, status: { pid: process.pid } });
    expect(fs.readdirSync(root)).toEqual(['status.json']);
  });

  it.runIf(process.platform === 'linux')('counts a daemon whose process is a zombie as not running', async () => {
    const { zombie, parent } = await startZombie();
    try {
      const status = new DaemonStatusWriter(
        root,
        {
          pid: zombie,
          startedAt: '2026-01-01T00:00:00.000Z',
          version: '0.1.0',
          connection: 'connected',
          lastConnectedAt: null,
          lastError: null,
          queue: { capacity: 4, running: null, waiting: [] },
          workflows: { loaded: 0, invalid: [] },
        },
        () => {},
      );
      status.close({});
      expect(readDaemonStatus(root)).toMatchObject({ running: false, status: { pid: zombie } });
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

describe('drover-agent run, before it starts', () => {
  it('says the machine is not enrolled and exits 1 without creating anything but the state directory', async () => {
    const stateDir = path.join(root, 'state');
    const res = await run('run', '--state-dir', stateDir);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(
      /^drover-agent: error: This machine is not enrolled \(nothing in .*\); run `drover-agent enroll/,
    );
    expect(fs.readdirSync(stateDir)).toEqual([]);
  });

  it('refuses bad option values with a message naming the option', async () => {
    const cases: [string[], RegExp][] = [
      [['--queue-capacity', '0'], /--queue-capacity expects a whole number from 1 to 1000, got `0`/],
      [['--queue-capacity', 'four'], /--queue-capacity expects a whole number/],
      [
        ['--shutdown-grace', 'soon'],
        /--shutdown-grace: expected a duration like 30s, 5m or a number of seconds, got `soon`/,
      ],
      [['--job-timeout', '0'], /--job-timeout: must be at least 1ms/],
      [['--log-level', 'loud'], /--log-level expects trace, debug, info, warn or error, got `loud`/],
      [
        ['--min-download-speed', '1.5k'],
        /--min-download-speed expects a whole number of bytes per second \(0: no minimum\), got `1.5k`/,
      ],
    ];
    for (const [args, message] of cases) {
      const res = await run('run', '--state-dir', path.join(root, 'x'), ...args);
      expect(res.code, args.join(' ')).not.toBe(0);
      expect(res.err, args.join(' ')).toMatch(message);
    }
    // The environment variable of an option is checked the same way.
    process.env.DROVER_AGENT_MIN_DOWNLOAD_SPEED = '-1';
    try {
      const res = await run('run', '--state-dir', path.join(root, 'x'));
      expect(res.code).not.toBe(0);
      expect(res.err).toMatch(
        /--min-download-speed expects a whole number of bytes per second \(0: no minimum\), got `-1`/,
      );
    } finally {
      delete process.env.DROVER_AGENT_MIN_DOWNLOAD_SPEED;
    }
  });
});
