import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { acquirePidLock, isProcessRunning, LockHeldError, lockHolderPid, processStart } from '../src/pid-lock.js';

const CONTENDER = fileURLToPath(new URL('./fixtures/take-lock.ts', import.meta.url));

let dir: string;
let file: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-pid-lock-'));
  file = path.join(dir, 'test.lock');
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill();
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A process that has exited, and whose parent never collects it: a zombie, until its parent
 * ends. The shell starts a child that waits for a file, then becomes `sleep` (which never
 * collects children); only then is the child let go, so the shell cannot collect it first.
 */
async function zombie(): Promise<number> {
  const go = path.join(dir, 'zombie-go');
  const parent = spawn('sh', ['-c', '(while [ ! -e "$1" ]; do sleep 0.01; done) & echo $!; exec sleep 600', 'sh', go], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(parent);
  const pid = await new Promise<number>((resolve) =>
    parent.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
  );
  await vi.waitFor(() =>
    expect(fs.readFileSync(`/proc/${parent.pid}/cmdline`, 'utf8')).toBe(['sleep', '600', ''].join('\0')),
  );
  fs.writeFileSync(go, '');
  await vi.waitFor(() => expect(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')).toMatch(/\) Z /));
  return pid;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

/** Starts `count` contenders for `file`, lets them all go at once, and answers what each said. */
async function contend(count: number): Promise<string[]> {
  const go = path.join(dir, 'go');
  const outputs = Array.from({ length: count }, () => '');
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, ['--import', 'tsx', CONTENDER, file, go], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    children.push(child);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (outputs[i] += chunk));
  }
  await vi.waitFor(() => expect(outputs.every((o) => o.startsWith('ready\n'))).toBe(true), { timeout: 20_000 });
  fs.writeFileSync(go, '');
  await vi.waitFor(() => expect(outputs.every((o) => /\n(got|held \d+|error .*)\n/.test(o))).toBe(true), {
    timeout: 10_000,
  });
  return outputs.map((o) => o.split('\n')[1]!);
}

describe('the pid lock', () => {
  it('lets one process at a time hold it, names the holder, and is released', () => {
    const release = acquirePidLock(file);
    expect(fs.readFileSync(file, 'utf8').split('\n')[0]).toBe(String(process.pid));
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(lockHolderPid(file)).toBe(process.pid);
    const other = process.ppid; // a live process that is not us
    expect(() => acquirePidLock(file, other)).toThrow(new LockHeldError(file, process.pid));
    release();
    expect(fs.existsSync(file)).toBe(false);
    expect(lockHolderPid(file)).toBeNull();
    expect(fs.readdirSync(dir)).toEqual([]); // nothing left beside it
  });

  it('release leaves alone a lock that another process holds by then', () => {
    const release = acquirePidLock(file);
    fs.rmSync(file);
    const releaseOther = acquirePidLock(file, process.ppid);
    release();
    expect(lockHolderPid(file)).toBe(process.ppid);
    releaseOther();
  });

  it('takes over a lock left by a process that exited', async () => {
    fs.writeFileSync(file, `${await deadPid()}\n`);
    expect(lockHolderPid(file)).toBeNull();
    const release = acquirePidLock(file);
    expect(lockHolderPid(file)).toBe(process.pid);
    release();
  });

  it('takes over a lock held by a zombie', async () => {
    const pid = await zombie();
    expect(isProcessRunning(pid)).toBe(false);
    fs.writeFileSync(file, `${pid}\n`);
    expect(lockHolderPid(file)).toBeNull();
    const release = acquirePidLock(file);
    expect(lockHolderPid(file)).toBe(process.pid);
    release();
  });

  it('takes over a lock whose pid now belongs to another process (a reused pid)', () => {
    const [boot] = processStart(process.ppid)!.split(':');
    fs.writeFileSync(file, `${process.ppid}\n${boot}:1\n`);
    expect(lockHolderPid(file)).toBeNull();
    acquirePidLock(file)();
  });

  it('keeps a lock whose holder runs, with or without its start time (locks written before it was recorded)', () => {
    for (const content of [`${process.ppid}\n${processStart(process.ppid)}\n`, `${process.ppid}\n`]) {
      fs.writeFileSync(file, content);
      expect(() => acquirePidLock(file)).toThrow(new LockHeldError(file, process.ppid));
      expect(fs.readFileSync(file, 'utf8')).toBe(content);
    }
  });

  it('leaves no file behind when the disk is full, and throws the ENOSPC as it comes', () => {
    // A full disk: the file aside is created, then writing its content fails.
    const write = vi.spyOn(fs, 'writeFileSync').mockImplementation((target, _data, options) => {
      fs.closeSync(fs.openSync(target as string, (options as { flag: string }).flag));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    try {
      expect(() => acquirePidLock(file)).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    } finally {
      write.mockRestore();
    }
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('takes over a lock file that names no process', () => {
    fs.writeFileSync(file, 'garbage\n');
    acquirePidLock(file)();
  });

  it('refuses a FIFO at its place, saying so, rather than wait for ever on its read; no process holds one', async () => {
    execFileSync('mkfifo', [file]);
    // In a process of its own: a read that blocks would hold this one for ever.
    expect(await contend(1)).toEqual(['error EINVAL: it is a FIFO, not a regular file (EINVAL): remove it']);
    expect(lockHolderPid(file)).toBeNull();
    expect(fs.statSync(file).isFIFO()).toBe(true);
  });

  it('is taken by exactly one of several processes starting at once on a fresh directory', async () => {
    const said = await contend(5);
    const winners = said.filter((s) => s === 'got');
    expect(winners, said.join(', ')).toHaveLength(1);
    const winner = children[said.indexOf('got')]!;
    expect(said.filter((s) => s !== 'got')).toEqual(Array(4).fill(`held ${winner.pid}`));
  }, 40_000);

  it('is taken over by exactly one of several processes starting at once after a crash', async () => {
    fs.writeFileSync(file, `${await deadPid()}\n`);
    const said = await contend(5);
    expect(
      said.filter((s) => s === 'got'),
      said.join(', '),
    ).toHaveLength(1);
    const winner = children[said.indexOf('got')]!;
    expect(said.filter((s) => s !== 'got')).toEqual(Array(4).fill(`held ${winner.pid}`));
    // The winner releases it on its way out; nothing is left beside it.
    winner.stdin!.end();
    await vi.waitFor(() => expect(fs.existsSync(file)).toBe(false));
    expect(fs.readdirSync(dir).sort()).toEqual(['go']);
  }, 40_000);
});
