import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentError } from '../../src/errors.js';
import {
  createFileDurably,
  ensurePrivateDir,
  fillBlankFile,
  readFileIfExists,
  writeFileAtomic,
  writeBlankFile,
  writeFileAtomicAsync,
} from '../../src/state/files.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-files-'));
});
// Retried: the FIFO test's writer, started in the background, may make its file as the directory goes.
afterEach(() => fs.rmSync(root, { recursive: true, force: true, maxRetries: 5 }));

const mode = (p: string) => fs.statSync(p).mode & 0o777;

describe('the private state directory', () => {
  it('is created with mode 0700, parents included', () => {
    const dir = path.join(root, 'a', 'b');
    ensurePrivateDir(dir);
    expect(mode(dir)).toBe(0o700);
  });

  it('accepts an existing private directory as it is', () => {
    const dir = path.join(root, 'mine');
    fs.mkdirSync(dir, { mode: 0o700 });
    expect(() => ensurePrivateDir(dir)).not.toThrow();
  });

  it('refuses an existing directory that other users can enter, without changing it', () => {
    const dir = path.join(root, 'shared');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o755);
    expect(() => ensurePrivateDir(dir)).toThrow(/accessible to other users \(mode 0755\).*chmod 700/);
    expect(mode(dir)).toBe(0o755);
  });

  it('refuses a path that is a file', () => {
    const file = path.join(root, 'file');
    fs.writeFileSync(file, '');
    const error = (() => {
      try {
        ensurePrivateDir(file);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(AgentError);
    expect((error as AgentError).code).toBe('bad_state');
  });
});

describe('atomic writes', () => {
  it('writes a 0600 file and leaves no temporary file behind', () => {
    const file = path.join(root, 'agent.json');
    writeFileAtomic(file, 'one');
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
    expect(mode(file)).toBe(0o600);
    writeFileAtomic(file, 'two');
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
    expect(fs.readdirSync(root)).toEqual(['agent.json']);
  });

  it('makes the replaced file 0600 even when the old one was wider', () => {
    const file = path.join(root, 'agent.json');
    fs.writeFileSync(file, 'old', { mode: 0o644 });
    writeFileAtomic(file, 'new');
    expect(mode(file)).toBe(0o600);
  });

  it('fails with a bad_state error and cleans up when the directory is missing', () => {
    expect(() => writeFileAtomic(path.join(root, 'missing', 'x.json'), 'x')).toThrow(/Cannot write .*ENOENT/);
  });

  it('flushes in the background: the file before its rename, then its directory and the others', async () => {
    const file = path.join(root, 'job', 'journal.json');
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'old', { mode: 0o644 });
    // Which file each flush on the thread pool was for, and what the target held at that moment.
    const flushed: { target: string; held: string }[] = [];
    const { fsync } = fs;
    const onPool = vi.spyOn(fs, 'fsync').mockImplementation((fd, callback) => {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      flushed.push({ target: path.relative(root, target), held: fs.readFileSync(file, 'utf8') });
      fsync(fd, callback);
    });
    const sync = vi.spyOn(fs, 'fsyncSync');
    try {
      await writeFileAtomicAsync(file, 'new', [root]);
    } finally {
      onPool.mockRestore();
      sync.mockRestore();
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('new');
    expect(mode(file)).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['journal.json']);
    expect(sync).not.toHaveBeenCalled();
    // `root` is flushed from the start, side by side with the file; the file's directory after the rename.
    expect(flushed).toHaveLength(3);
    expect(flushed.find((f) => f.target === '')).toBeDefined();
    const temp = flushed.find((f) => f.target.startsWith('job/.journal.json.'));
    expect(temp).toMatchObject({ held: 'old' });
    expect(flushed.at(-1)).toEqual({ target: 'job', held: 'new' });
  });

  it('fails in the background with a bad_state error and cleans up when the directory is missing', async () => {
    const dir = path.join(root, 'missing');
    await expect(writeFileAtomicAsync(path.join(dir, 'x.json'), 'x', [root])).rejects.toThrow(/Cannot write .*ENOENT/);
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('creates a new file with its data and the directory entries flushed side by side', async () => {
    const file = path.join(root, 'job', 'journal.json');
    fs.mkdirSync(path.dirname(file));
    // Each flush on the thread pool: what it was for, and how many had completed when it began.
    const flushes: { target: string; completedBefore: number }[] = [];
    let completed = 0;
    const { fsync } = fs;
    const onPool = vi.spyOn(fs, 'fsync').mockImplementation((fd, callback) => {
      flushes.push({ target: path.relative(root, fs.readlinkSync(`/proc/self/fd/${fd}`)), completedBefore: completed });
      fsync(fd, (error) => {
        completed += 1;
        callback(error);
      });
    });
    try {
      await createFileDurably(file, 'first', [root]);
    } finally {
      onPool.mockRestore();
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('first');
    expect(mode(file)).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['journal.json']);
    expect(flushes.map((f) => f.target).sort()).toEqual(['', 'job', 'job/journal.json']);
    expect(flushes.every((f) => f.completedBefore === 0)).toBe(true);
  });

  it('fills an empty file made ahead in place, as it would a new one', async () => {
    const file = path.join(root, 'journal.json');
    fs.writeFileSync(file, '', { mode: 0o600 });
    const inode = fs.statSync(file).ino;
    await createFileDurably(file, 'first');
    expect(fs.readFileSync(file, 'utf8')).toBe('first');
    expect(fs.statSync(file).ino).toBe(inode); // the same file, not a replacement
    expect(fs.readdirSync(root)).toEqual(['journal.json']);
  });

  it('replaces a file that exists already atomically, and fails cleanly without its directory', async () => {
    const file = path.join(root, 'journal.json');
    fs.writeFileSync(file, 'old', { mode: 0o644 });
    await createFileDurably(file, 'new');
    expect(fs.readFileSync(file, 'utf8')).toBe('new');
    expect(mode(file)).toBe(0o600);
    expect(fs.readdirSync(root)).toEqual(['journal.json']);
    await expect(createFileDurably(path.join(root, 'missing', 'x.json'), 'x')).rejects.toThrow(/Cannot write .*ENOENT/);
  });

  it('fills a blank file made ahead in place with its data alone flushed, and only one of that size', async () => {
    const file = path.join(root, 'journal.json');
    await writeBlankFile(file, 64);
    expect(fs.readFileSync(file, 'utf8')).toBe(' '.repeat(64));
    expect(mode(file)).toBe(0o600);
    const inode = fs.statSync(file).ino;
    const opens = vi.spyOn(fs, 'openSync');
    const flushes = [vi.spyOn(fs, 'fdatasync'), vi.spyOn(fs, 'fsync'), vi.spyOn(fs, 'fsyncSync')];
    try {
      expect(await fillBlankFile(file, '{"a": 1}\n', 64)).toBe(true);
      // The write itself returns once its data is on disk (O_DSYNC); no flush of the whole file.
      expect(opens).toHaveBeenCalledWith(file, fs.constants.O_WRONLY | fs.constants.O_DSYNC);
      for (const flush of flushes) expect(flush).not.toHaveBeenCalled();
    } finally {
      opens.mockRestore();
      for (const flush of flushes) flush.mockRestore();
    }
    const text = fs.readFileSync(file, 'utf8');
    expect(text).toBe(`{"a": 1}\n${' '.repeat(64 - 9)}`);
    expect(JSON.parse(text)).toEqual({ a: 1 }); // a JSON reader skips the blank rest
    expect(fs.statSync(file).ino).toBe(inode);

    // Too long for it, or not a file of that size (an older build's empty one): nothing written.
    await writeBlankFile(path.join(root, 'small'), 8);
    expect(await fillBlankFile(path.join(root, 'small'), '{"a": 12345}', 8)).toBe(false);
    fs.writeFileSync(path.join(root, 'empty'), '');
    expect(await fillBlankFile(path.join(root, 'empty'), '{}', 64)).toBe(false);
    expect(fs.readFileSync(path.join(root, 'small'), 'utf8')).toBe(' '.repeat(8));
    expect(fs.readFileSync(path.join(root, 'empty'), 'utf8')).toBe('');
    await expect(fillBlankFile(path.join(root, 'missing'), '{}', 64)).rejects.toThrow(/Cannot write .*ENOENT/);
  });

  it('reads a missing file as null, and refuses a link to a missing file naming where it points', () => {
    expect(readFileIfExists(path.join(root, 'nope'))).toBeNull();
    const file = path.join(root, 'agent.json');
    const target = path.join(root, 'moved', 'agent.json');
    fs.symlinkSync(target, file);
    expect(() => readFileIfExists(file)).toThrow(
      new AgentError(
        'bad_state',
        `Cannot read ${file}: it is a symbolic link to ${target}, which does not exist: put the file back there, or remove the link`,
      ),
    );
  });

  it('refuses a FIFO in its place at once, naming it, rather than wait for a writer for ever', () => {
    const file = path.join(root, 'agent.json');
    // With a writer for 5 s, so that a read that waits gets `{}` and the test fails rather than hangs.
    execFileSync('sh', ['-c', 'mkfifo "$0" && (timeout 5 sh -c \'echo {} > "$0"\' "$0" &)', file], { stdio: 'ignore' });
    expect(() => readFileIfExists(file)).toThrow(
      new AgentError('bad_state', `Cannot read ${file}: it is a FIFO, not a regular file (EINVAL): remove it`),
    );
  });
});

describe('a state file this user may not read', () => {
  it('names its owner and this user, and what to run (the service reading what root wrote)', () => {
    const file = path.join(root, 'agent.json');
    fs.writeFileSync(file, '{}');
    const open = fs.openSync;
    const stat = fs.statSync;
    const denied = Object.assign(new Error(`EACCES: permission denied, open '${file}'`), { code: 'EACCES' });
    const spies = [
      vi.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, f: fs.OpenMode, m?: fs.Mode) => {
        if (p === file) throw denied;
        return open(p, f, m);
      }) as typeof fs.openSync),
      vi
        .spyOn(fs, 'statSync')
        .mockImplementation(((p: fs.PathLike, o?: never) =>
          p === file ? { ...stat(p), uid: 0 } : stat(p, o)) as typeof fs.statSync),
      vi.spyOn(process, 'getuid').mockReturnValue(65534),
    ];
    try {
      expect(() => readFileIfExists(file)).toThrow(
        new AgentError(
          'bad_state',
          `Cannot read ${file}: permission denied: it belongs to root, and this runs as nobody; ` +
            'run it as root (`sudo -u root drover-agent …`), or, if the agent runs as nobody, ' +
            `give it the directory: \`sudo chown -R nobody: ${root}\``,
        ),
      );
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

// The causes an edge machine meets, said in words with what to do, where the agent said a bare
// code (`the agent failed: Cannot write …/journal.json: ENOSPC` as a job's error, `Cannot take the
// lock …: EROFS`, `Cannot create the state directory /nonexistent/.drover-agent: EACCES`).
describe('a state file that cannot be written', () => {
  const failure = (code: string) => Object.assign(new Error(`${code}: failed`), { code });

  it('says a full disk, a read-only file system or a failing disk in words', () => {
    const file = path.join(root, 'journal.json');
    for (const [code, words] of [
      ['ENOSPC', `no space left on the device (ENOSPC; free some: \`df -h ${root}\`)`],
      ['EROFS', 'the file system is read-only (EROFS)'],
      ['EIO', 'an input/output error (EIO): the disk or its file system may be failing'],
      ['EACCES', 'permission denied (EACCES)'],
    ] as const) {
      // The write into the temporary file fails (the file system's answer to a write).
      const spy = vi.spyOn(fs, 'writeFileSync').mockImplementation(() => {
        throw failure(code);
      });
      try {
        expect(() => writeFileAtomic(file, '{}')).toThrow(
          new AgentError('bad_state', `Cannot write ${file}: ${words}`),
        );
      } finally {
        spy.mockRestore();
      }
      expect(fs.readdirSync(root)).toEqual([]);
    }
  });

  it('says a directory removed, or a file or a directory in the wrong place, in words', () => {
    // What a technician clearing space or copying files by hand leaves (no mock: the real errors).
    const gone = path.join(root, 'gone', 'journal.json');
    expect(() => writeFileAtomic(gone, '{}')).toThrow(
      new AgentError(
        'bad_state',
        `Cannot write ${gone}: its directory is missing (ENOENT): was it removed while the agent ran? Restart the agent to make it again`,
      ),
    );
    fs.writeFileSync(path.join(root, 'jobs'), 'not a directory');
    const under = path.join(root, 'jobs', 'journal.json');
    expect(() => writeFileAtomic(under, '{}')).toThrow(
      new AgentError(
        'bad_state',
        `Cannot write ${under}: a file stands where a directory of its path belongs (ENOTDIR): move that file away`,
      ),
    );
    fs.mkdirSync(path.join(root, 'agent.json'));
    const file = path.join(root, 'agent.json');
    expect(() => writeFileAtomic(file, '{}')).toThrow(
      new AgentError(
        'bad_state',
        `Cannot write ${file}: a directory stands where the file belongs (EISDIR): move that directory away`,
      ),
    );
    expect(fs.readdirSync(root).sort()).toEqual(['agent.json', 'jobs']);
  });

  it('says what to do when the state directory cannot be made (a user whose home is not its own)', () => {
    const dir = path.join(root, 'nonexistent', '.drover-agent');
    const spy = vi.spyOn(fs, 'mkdirSync').mockImplementation(() => {
      throw failure('EACCES');
    });
    try {
      expect(() => ensurePrivateDir(dir)).toThrow(
        new AgentError(
          'bad_state',
          `Cannot create the state directory ${dir}: permission denied (EACCES); give one this user may write ` +
            'with --state-dir (or DROVER_AGENT_STATE_DIR), or make this one for it first',
        ),
      );
    } finally {
      spy.mockRestore();
    }
  });
});
