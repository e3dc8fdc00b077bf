import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { syncDirAsync, writeBlankFile } from '../state/files.js';

/** The files of one job under `<state-dir>/jobs/<jobId>/`. */
export interface JobFiles {
  dir: string;
  /** The steps' default working directory. */
  workspace: string;
  /** The params as JSON (`$DROVER_PARAMS_FILE`). */
  paramsFile: string;
  /** The steps' `key=value` output (`$DROVER_OUTPUT`). */
  outputFile: string;
  /** The agent's record of the job (jobs/journal.ts). */
  journalFile: string;
}

export function jobFiles(stateDir: string, jobId: string): JobFiles {
  const dir = path.join(stateDir, 'jobs', jobId);
  return {
    dir,
    workspace: path.join(dir, 'workspace'),
    paramsFile: path.join(dir, 'params.json'),
    outputFile: path.join(dir, 'output.env'),
    journalFile: path.join(dir, 'journal.json'),
  };
}

/**
 * Removes a job's directory and whatever its steps left in it. A directory they made read-only
 * (Go's module cache is 0555, so is a tree after `chmod -R a-w`) cannot be emptied as it is: on
 * that refusal, the tree's directories are made writable by their owner (a link is never
 * followed) and the removal is tried again. Throws when that does not help either (a directory
 * of another user's, say).
 */
export function removeJobDir(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw error;
  }
  makeDirsWritable(dir);
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Gives the owner rwx on every directory of the tree (without recursion: a tree may be deep). */
function makeDirsWritable(root: string): void {
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (!stat?.isDirectory()) continue;
    try {
      if ((stat.mode & 0o700) !== 0o700) fs.chmodSync(dir, (stat.mode & 0o7777) | 0o700);
      for (const entry of fs.readdirSync(dir, { withFileTypes: true }))
        if (entry.isDirectory()) pending.push(path.join(dir, entry.name));
    } catch {
      // not ours to change or read: the removal says what stays
    }
  }
}

/**
 * The next job's directory, made ahead (makeSpareJobDir): a name that is not a job id, so that
 * the journal and its pruning pass it by. It is built under `.next-<random>` and renamed to
 * `.next` once complete: nothing writes into `.next` by its name, which a job may take any time.
 */
const SPARE_DIR = '.next';
const SPARE_BUILD_PREFIX = '.next-';

/**
 * The size of the spare's journal.json: blank (spaces), its blocks, size and directory entries
 * flushed while idle, so that the job's first entry is written in place with a data-only flush
 * (fillBlankFile). An entry that does not fit is written as a new file instead.
 */
export const SPARE_JOURNAL_BYTES = 8192;

/**
 * Whether a name in `<state-dir>/jobs/` is a spare job directory's (`.next`, or a build's
 * `.next-*`), which the journal looks into at start: one holding a filled journal.json is a job's
 * whose claim (a rename) a power cut undid (see claimSpareJobDir).
 */
export const isSpareJobDirName = (name: string): boolean => name === SPARE_DIR || name.startsWith(SPARE_BUILD_PREFIX);

/** State directories whose spare is being built by this process, and those cleaned of old builds. */
const building = new Set<string>();
const cleaned = new Set<string>();

/**
 * Makes the next job's directory ahead of time, while the agent is idle: `jobs/.next/` with the
 * workspace, the empty params.json and output.env, and a blank journal.json of
 * SPARE_JOURNAL_BYTES (0700 and 0600). A job needs two directories and three files before its
 * first step starts, and each create can take most of a millisecond on a VM's disk or an SD card;
 * claimSpareJobDir then takes them all with one rename. The journal file and the entries leading
 * to it (in the build's directory and in `jobs/`) are flushed before the spare is published, so
 * that the job's first entry needs only its data flushed. The creates run on libuv's thread pool,
 * so a job that arrives meanwhile is not held up (it makes its own directory). Nothing to do when
 * the spare is there or being made; a failure is left to the job, which then makes its own. The
 * first call of a process removes builds a crash left (after the journal, at start, took any a job
 * had filled).
 */
export async function makeSpareJobDir(stateDir: string): Promise<void> {
  const root = path.join(stateDir, 'jobs');
  if (building.has(stateDir) || fs.existsSync(path.join(root, SPARE_DIR))) return;
  building.add(stateDir);
  const build = jobFiles(stateDir, `${SPARE_BUILD_PREFIX}${randomBytes(6).toString('hex')}`);
  try {
    if (!cleaned.has(stateDir)) {
      cleaned.add(stateDir);
      for (const name of await fs.promises.readdir(root))
        if (name.startsWith(SPARE_BUILD_PREFIX))
          await fs.promises.rm(path.join(root, name), { recursive: true, force: true });
    }
    await fs.promises.mkdir(build.workspace, { recursive: true, mode: 0o700 });
    await Promise.all([
      ...[build.paramsFile, build.outputFile].map((file) => fs.promises.writeFile(file, '', { mode: 0o600 })),
      writeBlankFile(build.journalFile, SPARE_JOURNAL_BYTES),
    ]);
    await Promise.all([syncDirAsync(build.dir), syncDirAsync(root)]);
    if (!fs.existsSync(path.join(root, SPARE_DIR))) fs.renameSync(build.dir, path.join(root, SPARE_DIR));
  } catch {
    // the next job makes its own directory
  } finally {
    building.delete(stateDir);
    await fs.promises.rm(build.dir, { recursive: true, force: true }); // when it was not published
  }
}

/**
 * Gives `jobId` the spare job directory (one rename) when there is one and the job has no
 * directory yet. Its files are empty: the journal fills its entry in place, prepareJobFiles
 * writes the others. Its time is set to now, as a new directory's would be (pruning goes by it).
 * False when there was nothing to take: the caller makes the directory. The rename is not flushed:
 * a power cut may undo it, leaving the job's filled journal.json under the spare's name, where the
 * journal finds it at start (Journal.open).
 */
export function claimSpareJobDir(stateDir: string, jobId: string): boolean {
  const dir = jobFiles(stateDir, jobId).dir;
  try {
    if (fs.existsSync(dir)) return false; // never rename over a directory (an empty one would be replaced)
    fs.renameSync(jobFiles(stateDir, SPARE_DIR).dir, dir);
  } catch {
    return false; // no spare
  }
  const now = new Date();
  fs.utimes(dir, now, now, () => {}); // on the thread pool; an old time only makes pruning earlier
  return true;
}

/**
 * Creates the workspace (0700), writes params.json and an empty output file (0600), on libuv's
 * thread pool: each create can take most of a millisecond on a VM's disk, and a new job's files
 * are made while its start report travels, whose answer the event loop must be free to take.
 */
export async function prepareJobFiles(files: JobFiles, params: Record<string, unknown>): Promise<void> {
  await fs.promises.mkdir(files.workspace, { recursive: true, mode: 0o700 });
  await Promise.all([
    fs.promises.writeFile(files.paramsFile, paramsFileContent(params), { mode: 0o600 }),
    fs.promises.writeFile(files.outputFile, '', { mode: 0o600 }),
  ]);
}

/** (Re)writes params.json (0600): after the input files are downloaded, with their local paths. */
export function writeParamsFile(files: JobFiles, params: Record<string, unknown>): void {
  fs.writeFileSync(files.paramsFile, paramsFileContent(params), { mode: 0o600 });
}

const paramsFileContent = (params: Record<string, unknown>) => `${JSON.stringify(params, null, 2)}\n`;
