import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readRegularFile } from '@drover/shared';
import { AgentError } from '../errors.js';
import { describePermissionDenied, isPermissionError } from './owner.js';

/**
 * Makes sure `dir` exists and only its owner can enter it (0700). A directory we create gets
 * 0700; an existing one that others can read is refused rather than chmod-ed, because it may
 * not be ours to change (think `--state-dir /tmp`).
 */
export function ensurePrivateDir(dir: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw stateError(`Cannot read the state directory ${dir}`, error, dir);
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      fs.chmodSync(dir, 0o700); // the umask cannot widen it, but a parent created by recursion may differ
    } catch (cause) {
      const error = stateError(`Cannot create the state directory ${dir}`, cause, dir);
      // Most often the default of a user whose home is not its own (HOME=/nonexistent, a system
      // user's), or a path under root's directories: said with what to do.
      if (!isPermissionError(cause) && (cause as NodeJS.ErrnoException)?.code !== 'EROFS') throw error;
      throw new AgentError(
        'bad_state',
        `${error.message}; give one this user may write with --state-dir (or DROVER_AGENT_STATE_DIR), ` +
          'or make this one for it first',
        { cause },
      );
    }
    return;
  }
  if (!stat.isDirectory()) throw new AgentError('bad_state', `The state directory ${dir} is not a directory`);
  const mode = stat.mode & 0o777;
  if (mode & 0o077) {
    throw new AgentError(
      'bad_state',
      `The state directory ${dir} is accessible to other users (mode ${mode.toString(8).padStart(4, '0')}); ` +
        `run \`chmod 700 ${dir}\` or choose another directory with --state-dir`,
    );
  }
}

/**
 * Makes `dir`, a directory of the state directory (`what` it holds: "the outbox"), when it does
 * not exist yet, and returns its entries. One the agent cannot keep its files in stops it with a
 * bad_state error of one line naming the directory, the cause and what to do (a file in its
 * place, a permission), as the state directory itself does (ensurePrivateDir).
 */
export function listStateDir(dir: string, what: string): string[] {
  makeStateDir(dir, what);
  try {
    return fs.readdirSync(dir);
  } catch (error) {
    throw unusableDir(dir, what, error);
  }
}

/** listStateDir without the listing. */
export function makeStateDir(dir: string, what: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw unusableDir(dir, what, error);
  }
}

function unusableDir(dir: string, what: string, error: unknown): AgentError {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (isPermissionError(error))
    return new AgentError('bad_state', `${describePermissionDenied('Cannot use', dir)} (${what})`, { cause: error });
  const cause =
    code === 'EEXIST' || code === 'ENOTDIR'
      ? `it is not a directory (${code}): move away the file in its place, and the agent makes the directory at its next start`
      : code === 'ELOOP'
        ? `a loop of symbolic links (ELOOP): make it a directory`
        : describeFileError(error, path.dirname(dir));
  return new AgentError('bad_state', `Cannot use ${dir} (${what}): ${cause}`, { cause: error });
}

/**
 * Why a file operation failed, in a technician's words, for the causes an edge machine meets
 * (`dir`: where to free space): a full disk, a read-only file system (remounted so after an
 * error), a failing disk, a permission, a directory removed or a file or directory in the wrong
 * place. Any other cause is its error code (or message).
 */
export function describeFileError(error: unknown, dir: string): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  switch (code) {
    case 'ENOSPC':
      return `no space left on the device (ENOSPC; free some: \`df -h ${dir}\`)`;
    case 'EDQUOT':
      return `the disk quota of this user is used up (EDQUOT)`;
    case 'EROFS':
      return 'the file system is read-only (EROFS)';
    case 'EIO':
      return 'an input/output error (EIO): the disk or its file system may be failing';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code})`;
    case 'EINVAL':
      return (error as Error).message; // readStateFile's words: a FIFO or a device in a file's place
    case 'ENOENT':
      return 'its directory is missing (ENOENT): was it removed while the agent ran? Restart the agent to make it again';
    case 'ENOTDIR':
      return 'a file stands where a directory of its path belongs (ENOTDIR): move that file away';
    case 'EISDIR':
      return 'a directory stands where the file belongs (EISDIR): move that directory away';
    case 'ELOOP':
      return 'a loop of symbolic links on its path (ELOOP)';
    default:
      return code ?? (error as Error)?.message;
  }
}

/**
 * Writes a file atomically with mode 0600 (or `mode`): a temporary file in the same directory,
 * flushed to disk, then renamed over the target, so a reader sees the old content or the new,
 * never half. `durable: false` skips the flushes (about 1 ms each here, up to 12 ms at p99) for
 * writes a power cut may lose without harm, such as status.json (an agent crash keeps them all
 * the same).
 */
export function writeFileAtomic(
  file: string,
  content: string,
  options: { durable?: boolean; mode?: number } = {},
): void {
  const durable = options.durable ?? true;
  const temp = tempFileFor(file);
  try {
    const fd = fs.openSync(temp, 'wx', options.mode ?? 0o600);
    try {
      if (options.mode !== undefined) fs.fchmodSync(fd, options.mode); // whatever the umask
      fs.writeFileSync(fd, content);
      if (durable) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, file);
  } catch (error) {
    removeLeftover(temp);
    throw stateError(`Cannot write ${file}`, error, file);
  }
  if (durable) syncDir(path.dirname(file));
}

/**
 * Removes what a failed write may have left, if it can: where the write failed because its
 * directory is gone or is a file, the removal fails too, and must not hide the write's own error.
 */
function removeLeftover(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // Nothing was left there.
  }
}

/**
 * writeFileAtomic's durable write with its flushes on libuv's thread pool, so that the event loop
 * goes on meanwhile (the agent reports a job's start while its journal entry is flushed). The
 * temporary file's creation goes to the pool too (on a VM's disk a create can take most of a
 * millisecond); the small steps (write, close, rename: tens of µs each) run at once on the event
 * loop; then the flushes: the file's, then its directory's after the rename, and from the start,
 * side by side with them, those of `alsoFlush`: directories whose entries must reach the disk
 * with this file, such as a new job directory's entry in `jobs/`. One trip to the pool per create
 * and flush, where a FileHandle costs one per call (open, write, sync, close...), each waiting
 * for the event loop to take its answer.
 */
export async function writeFileAtomicAsync(
  file: string,
  content: string,
  alsoFlush: readonly string[] = [],
): Promise<void> {
  const others = Promise.all(alsoFlush.map((dir) => syncDirAsync(dir)));
  const temp = tempFileFor(file);
  try {
    await fillAndFlush(await openOnPool(temp, 'wx'), content);
    fs.renameSync(temp, file);
  } catch (error) {
    removeLeftover(temp);
    await others;
    throw stateError(`Cannot write ${file}`, error, file);
  }
  await Promise.all([syncDirAsync(path.dirname(file)), others]);
}

/**
 * Writes a new file durably with one flush's wait instead of two: created in place (0600, on the
 * thread pool: a create can take most of a millisecond on a VM's disk), then its data, its
 * directory's entry and those of `alsoFlush` flushed side by side on the thread pool. Until it
 * resolves, a crash may leave the file empty or cut short (where writeFileAtomicAsync leaves
 * nothing), so it is only for files whose reader takes such a file for a damaged one and skips
 * it. An empty file that exists already (made ahead of time) is filled the same way; one with
 * content is replaced by writeFileAtomicAsync.
 */
export async function createFileDurably(
  file: string,
  content: string,
  alsoFlush: readonly string[] = [],
): Promise<void> {
  let fd: number;
  try {
    fd = await openOnPool(file, fs.constants.O_WRONLY | fs.constants.O_CREAT);
  } catch (error) {
    throw stateError(`Cannot write ${file}`, error, file);
  }
  if (fs.fstatSync(fd).size > 0) {
    fs.closeSync(fd);
    return writeFileAtomicAsync(file, content, alsoFlush);
  }
  const entries = Promise.all([path.dirname(file), ...alsoFlush].map((dir) => syncDirAsync(dir)));
  try {
    await fillAndFlush(fd, content);
  } catch (error) {
    fs.rmSync(file, { force: true });
    await entries;
    throw stateError(`Cannot write ${file}`, error, file);
  }
  await entries;
}

/**
 * Creates `file` (0600) holding `size` spaces, flushed with its data blocks and size, for
 * fillBlankFile to fill later. Its directory's entry is not flushed here: the caller does that,
 * with whatever else it makes.
 */
export async function writeBlankFile(file: string, size: number): Promise<void> {
  const handle = await fs.promises.open(file, 'wx', 0o600);
  try {
    await handle.write(Buffer.alloc(size, 0x20));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `content` at the start of a file writeBlankFile made (the rest stays spaces, which a JSON
 * reader skips) with its data alone flushed: the file's blocks and size are on disk already, so
 * the file system has no metadata to commit, and the flush neither waits for nor joins the other
 * files' (a write and a flush of the disk's cache: ~0.15 ms on this VM's disk, where a new file
 * with its directory entries takes 0.7-0.9 ms and much longer when other flushes are under way).
 * The file is opened on the event loop (an existing file: no create, no metadata) with O_DSYNC,
 * so that the write on libuv's thread pool returns once the data is on disk: one trip to the pool
 * instead of three (open, write, fdatasync), each of which waits for a busy event loop to take
 * its answer. The file's entry in its directory must already be on disk (the caller's affair).
 * Until the promise resolves a crash may leave the file part written. False, with nothing
 * written, when the file is not one of exactly `size` bytes large enough for `content` (made by
 * an older build, say): the caller writes it another way.
 */
export async function fillBlankFile(file: string, content: string, size: number): Promise<boolean> {
  const data = Buffer.from(content);
  if (data.length > size) return false;
  const dsync = fs.constants.O_DSYNC ?? 0; // not on Windows: flushed after the write there
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_WRONLY | dsync);
  } catch (error) {
    throw stateError(`Cannot write ${file}`, error, file);
  }
  try {
    if (fs.fstatSync(fd).size !== size) return false;
    await new Promise<void>((resolve, reject) =>
      fs.write(fd, data, 0, data.length, 0, (error) => (error ? reject(error) : resolve())),
    );
    if (dsync === 0)
      await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())));
    return true;
  } catch (error) {
    throw stateError(`Cannot write ${file}`, error, file);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes `content` into the open file, flushes it on libuv's thread pool, and closes it. */
async function fillAndFlush(fd: number, content: string): Promise<void> {
  try {
    fs.writeFileSync(fd, content);
    await fsyncOnPool(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Opens `file` on libuv's thread pool, with mode 0600 when it creates it. */
function openOnPool(file: string, flags: fs.OpenMode): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.open(file, flags, 0o600, (error, fd) => (error ? reject(error) : resolve(fd))),
  );
}

/** fsync on libuv's thread pool. */
function fsyncOnPool(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (error) => (error ? reject(error) : resolve())));
}

const tempFileFor = (file: string) =>
  path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);

/** Flushes a directory's entries (a rename, a new file or subdirectory) to disk; not possible on every platform. */
export function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Windows cannot open directories; the rename is still atomic.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** syncDir with the flush on libuv's thread pool. */
export async function syncDirAsync(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    await fsyncOnPool(fd);
  } catch {
    // as syncDir
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * A state file's content, never read from what is not a regular file: a FIFO (or a device) in a
 * file's place would hold the agent's start on its read for ever (a FIFO without a writer) or
 * fill its memory (`/dev/zero`); refused with the error code EINVAL and words that name it
 * (`readRegularFile`).
 */
export const readStateFile = readRegularFile;

/** The file's content, or null when it does not exist. */
export function readFileIfExists(file: string): string | null {
  try {
    return readStateFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      // A link left pointing nowhere (its target moved or deleted) is not a file never written.
      const target = danglingLinkTarget(file);
      if (target === null) return null;
      throw new AgentError(
        'bad_state',
        `Cannot read ${file}: it is a symbolic link to ${target}, which does not exist: put the file back there, or remove the link`,
        { cause: error },
      );
    }
    // Most often a command run as another user than the files' (sudo, or the service reading
    // what root wrote): said with both users and what to run.
    if (isPermissionError(error))
      throw new AgentError('bad_state', describePermissionDenied('Cannot read', file), { cause: error });
    throw stateError(`Cannot read ${file}`, error, file);
  }
}

/** Where `file` points, when it is a symbolic link (whose target is missing); null otherwise. */
function danglingLinkTarget(file: string): string | null {
  try {
    return fs.lstatSync(file).isSymbolicLink() ? fs.readlinkSync(file) : null;
  } catch {
    return null;
  }
}

/** `Cannot write …/journal.json: no space left on the device (free some: …)`: see describeFileError. */
function stateError(message: string, cause: unknown, file: string): AgentError {
  const detail = describeFileError(cause, path.dirname(file));
  return new AgentError('bad_state', detail ? `${message}: ${detail}` : message, { cause });
}
