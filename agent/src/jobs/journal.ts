import fs from 'node:fs';
import path from 'node:path';
import type { FinishJobRequest, JobAssignment, RejectJobRequest } from '@drover/shared';
import { claimSpareJobDir, isSpareJobDirName, jobFiles, removeJobDir, SPARE_JOURNAL_BYTES } from '../exec/job-files.js';
import {
  createFileDurably,
  fillBlankFile,
  listStateDir,
  readStateFile,
  syncDir,
  writeFileAtomic,
  writeFileAtomicAsync,
} from '../state/files.js';
import { isObject } from '../util/is-object.js';
import { isJobAssignment } from './job-event.js';

/**
 * Where the agent is with a job:
 * - `accepted`: in the local queue, not started (it may be started after a restart);
 * - `running`: its first step may have started: it is never started again;
 * - `finished`: it has a result (`final` is the finish report);
 * - `rejected`: refused at arrival (`final` is the reject report);
 * - `abandoned`: the coordinator refused its accept or start (the job was no longer waiting).
 */
export type JournalState = 'accepted' | 'running' | 'finished' | 'rejected' | 'abandoned';

export type FinalReport = { kind: 'finish'; body: FinishJobRequest } | { kind: 'reject'; body: RejectJobRequest };

/** `jobs/<jobId>/journal.json`. */
export interface JournalEntry {
  jobId: string;
  assignment: JobAssignment;
  state: JournalState;
  receivedAt: string;
  startedAt: string | null;
  /** The job's last report to the coordinator: its result or its refusal. */
  final: FinalReport | null;
  /** The coordinator took `final` (or refused it for good). */
  finalDelivered: boolean;
  note: string | null;
  /** The process group of the step running now (killed at the next start if the agent crashes). */
  processGroup?: number | null;
  updatedAt: string;
}

/** Job ids are UUIDs; anything else is not used as a directory name. */
export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

/**
 * Every write is atomic (a reader sees the old entry or the new one). It is also durable (on disk
 * before the call returns, so it survives a power loss) unless `durable: false`, which is for
 * writes whose loss in a power cut or kernel crash harms nothing, while an agent crash still keeps
 * them (they are in the page cache): a step's process group (no process outlives the machine
 * going down) and the delivered mark of a result (sending it again is answered as a duplicate).
 * A torn non-durable file is reported as damaged at the next start and skipped.
 */
export interface Durability {
  durable?: boolean;
  /**
   * `false` (create only): the entry is kept in memory and nothing is written, not even its
   * directory (made with its first write): for a job that starts at once, whose first write is
   * its `running` entry (nothing is promised to the coordinator before it; lost with the agent,
   * the job is still pending there).
   */
  onDisk?: boolean;
}

/**
 * The local journal of jobs: one `journal.json` per job directory, written atomically. It is
 * what makes a job id run at most once across reconnects and restarts: an entry is written
 * before the job is accepted, and marked `running` before its first step starts.
 */
export class Journal {
  readonly #entries = new Map<string, JournalEntry>();
  /**
   * Jobs whose directory and its entry in `jobs/` are known to be on disk (found at start, or
   * flushed with a first durable write); until then each write makes the directory first.
   */
  readonly #rooted = new Set<string>();
  /** Jobs whose journal file was found damaged at start, until an entry is written for them (isDamaged). */
  readonly #damaged = new Set<string>();
  readonly #stateDir: string;

  private constructor(stateDir: string) {
    this.#stateDir = stateDir;
  }

  /**
   * Reads every journal of `<state-dir>/jobs/`. Damaged ones are reported and skipped, their jobs
   * kept as damaged (isDamaged): never run, whatever is delivered again. A spare
   * directory whose journal a job filled (its claim undone by a power cut) is given back its job's
   * name; one whose filling a crash cut short is reported and removed (its job never started: the
   * step waits for the flush).
   */
  static open(stateDir: string, onDamaged: (file: string, reason: string) => void = () => {}): Journal {
    const journal = new Journal(stateDir);
    const root = path.join(stateDir, 'jobs');
    for (const name of listStateDir(root, "the jobs' directories")) {
      if (isSpareJobDirName(name)) journal.#adoptFilledSpare(path.join(root, name), onDamaged);
      if (!JOB_ID_PATTERN.test(name)) continue;
      const file = jobFiles(stateDir, name).journalFile;
      let text: string;
      try {
        text = readStateFile(file);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue; // a job directory without a journal: nothing was promised for it
        // There, but unreadable (a permission, an I/O error, a directory in its place): what it
        // promised is not known, so the job is never run, as for a damaged one.
        journal.#damaged.add(name);
        onDamaged(file, `cannot read it: ${code === 'EINVAL' ? (error as Error).message : (code ?? String(error))}`);
        continue;
      }
      // The spare's blank journal.json, never filled: the agent stopped between claiming the spare
      // (a rename) and the first write of the job's entry, which its first step (and a queued job's
      // accept) waits for; a fill is one write, which a crash does not cut short. None of the job
      // ran: it is unknown here, as in a job directory without a journal (run when delivered
      // pending again, failed as lost when its start was reported meanwhile), not damaged. A power
      // cut after that write leaves it filled.
      if (isBlankSpareJournal(text)) continue;
      try {
        journal.#load(parseEntry(text, name));
      } catch (error) {
        journal.#damaged.add(name);
        onDamaged(file, (error as Error).message);
      }
    }
    return journal;
  }

  get(jobId: string): JournalEntry | undefined {
    return this.#entries.get(jobId);
  }

  all(): JournalEntry[] {
    return [...this.#entries.values()];
  }

  /**
   * The job has a journal file that could not be read at start. Such a job is taken as seen, its
   * outcome unknown, never as unknown: the file may be a first entry a power cut left empty (its
   * step never started), but also a `running` or `finished` entry whose rewrite without a flush
   * (a process group, a delivered mark: see Durability) a power cut left empty or cut short, or
   * one damaged otherwise; nothing in it tells which. Running it then could run it twice, while
   * failing it costs at worst a run that never happened: the caller ends it `failed` instead
   * (decideIntake's `fail_damaged`), which writes a new entry over the file.
   */
  isDamaged(jobId: string): boolean {
    return this.#damaged.has(jobId);
  }

  /**
   * Records a job the agent has just received; throws when it cannot be written. Durable unless
   * `{durable: false}` (see Durability).
   */
  create(
    assignment: JobAssignment,
    state: JournalState,
    fields: Partial<JournalEntry> = {},
    options: Durability = {},
  ): JournalEntry {
    const now = new Date().toISOString();
    const entry: JournalEntry = {
      jobId: assignment.jobId,
      assignment,
      state,
      receivedAt: now,
      startedAt: null,
      final: null,
      finalDelivered: false,
      note: null,
      ...fields,
      updatedAt: now,
    };
    if (options.onDisk === false) this.#entries.set(entry.jobId, entry);
    else this.#write(entry, options);
    this.#damaged.delete(entry.jobId);
    return entry;
  }

  /** Changes a job's entry; durable unless `{durable: false}` (see Durability). */
  update(
    jobId: string,
    patch: Partial<Omit<JournalEntry, 'jobId' | 'assignment'>>,
    options: Durability = {},
  ): JournalEntry {
    const entry = this.#patched(jobId, patch);
    this.#write(entry, options);
    return entry;
  }

  /**
   * Changes a job's entry in memory only, after its write failed (a full disk): the agent goes on
   * by it, and the job's next write (markFinalDelivered) puts it on disk when there is room again.
   */
  remember(jobId: string, patch: Partial<Omit<JournalEntry, 'jobId' | 'assignment'>>): JournalEntry {
    const entry = this.#patched(jobId, patch);
    this.#entries.set(jobId, entry);
    return entry;
  }

  /**
   * A report was delivered or dropped for good (the report sender's `onSettled`): when it is a
   * job's result or refusal, the entry notes that the coordinator took it, so that a restart does
   * not send it again. Not durable (see Durability).
   */
  markFinalDelivered(report: { kind: string; jobId: string }): void {
    if (report.kind !== 'finish' && report.kind !== 'reject') return;
    if (!this.#entries.has(report.jobId)) return;
    this.update(report.jobId, { finalDelivered: true }, { durable: false });
  }

  /**
   * A durable update whose flushes run on libuv's thread pool: the entry changes in memory at
   * once, and on disk when the promise resolves. Nothing else may write the job's entry until
   * then (the later write could land first). An entry never written before is created in place
   * (createFileDurably: one flush's wait, or fillBlankFile in the spare's blank file); a crash before
   * it resolves can leave the spare's blank file, which the next start takes for a missing one, or
   * (a power cut) a damaged file. Its directory and file are created on
   * the pool too: creating a file or a directory can take 0.2 to 0.8 ms on a VM's disk, time the
   * event loop needs for the start report's answer (docs/performance.md, "Dispatch latency").
   */
  async updateInBackground(
    jobId: string,
    patch: Partial<Omit<JournalEntry, 'jobId' | 'assignment'>>,
  ): Promise<JournalEntry> {
    const entry = this.#patched(jobId, patch);
    this.#entries.set(jobId, entry);
    if (this.#rooted.has(jobId)) await writeFileAtomicAsync(this.#file(jobId), serialize(entry));
    else {
      // The spare's blank journal.json is on disk with its directory entries: filling it needs a
      // data-only flush. Otherwise (no spare, or one an older build made) a new file is written.
      const claimed = claimSpareJobDir(this.#stateDir, jobId);
      if (!(claimed && (await fillBlankFile(this.#file(jobId), serialize(entry), SPARE_JOURNAL_BYTES)))) {
        if (!claimed) await fs.promises.mkdir(jobFiles(this.#stateDir, jobId).dir, DIR_MODE);
        await createFileDurably(this.#file(jobId), serialize(entry), [this.#root]);
      }
      this.#rooted.add(jobId);
    }
    return entry;
  }

  /**
   * Removes the directories of jobs settled longer ago than `olderThanMs` (their result was
   * delivered, or there was nothing to deliver), and of job directories without a readable entry
   * (a crash left the journal damaged or unwritten) untouched for that long. Returns how many
   * were removed.
   *
   * A job not settled is never removed, however old its entry looks: `accepted` (it runs when
   * the coordinator delivers it again, docs/agent.md), `running` (recover ends it), a result not
   * delivered yet. Their times are the machine's wall clock, which may have been days off when
   * they were written (no RTC before NTP): an age is no proof that the coordinator gave them up.
   * Removing a settled job early, by a clock that jumped, costs nothing (the coordinator has its
   * outcome).
   *
   * A directory that cannot be removed (removeJobDir: a directory of another user's in it, say) is
   * passed to `onKept` and left for the next start: what a job left behind never stops the agent.
   */
  prune(olderThanMs: number, now = Date.now(), onKept: (dir: string, reason: string) => void = () => {}): number {
    let removed = 0;
    const remove = (dir: string): boolean => {
      try {
        removeJobDir(dir);
        return true;
      } catch (error) {
        onKept(dir, (error as NodeJS.ErrnoException).code ?? (error as Error).message);
        return false;
      }
    };
    for (const entry of this.all()) {
      const settled =
        entry.state === 'abandoned' ||
        ((entry.state === 'finished' || entry.state === 'rejected') && entry.finalDelivered);
      if (!settled || now - Date.parse(entry.updatedAt) < olderThanMs) continue;
      if (!remove(jobFiles(this.#stateDir, entry.jobId).dir)) continue;
      this.#entries.delete(entry.jobId);
      this.#rooted.delete(entry.jobId);
      removed += 1;
    }
    for (const name of fs.readdirSync(this.#root)) {
      if (!JOB_ID_PATTERN.test(name) || this.#entries.has(name)) continue;
      const dir = jobFiles(this.#stateDir, name).dir;
      const stat = fs.statSync(dir, { throwIfNoEntry: false });
      if (!stat?.isDirectory() || now - stat.mtimeMs < olderThanMs) continue;
      if (!remove(dir)) continue;
      this.#damaged.delete(name);
      removed += 1;
    }
    return removed;
  }

  #write(entry: JournalEntry, { durable = true }: Durability): void {
    const first = !this.#rooted.has(entry.jobId);
    // Only a job that will run takes the spare directory (not one refused or ended unrun).
    if (first) this.#makeDir(entry.jobId, entry.state === 'accepted');
    writeFileAtomic(this.#file(entry.jobId), serialize(entry), { durable });
    this.#entries.set(entry.jobId, entry);
    if (durable && first) {
      syncDir(this.#root);
      this.#rooted.add(entry.jobId);
    }
  }

  #load(entry: JournalEntry): void {
    this.#entries.set(entry.jobId, entry);
    this.#rooted.add(entry.jobId);
  }

  /** See open: a spare directory holding a job's entry gets the job's name back. */
  #adoptFilledSpare(dir: string, onDamaged: (file: string, reason: string) => void): void {
    const file = path.join(dir, 'journal.json');
    let text: string;
    try {
      text = readStateFile(file);
    } catch {
      return; // a build a crash cut short: removed by the next build
    }
    if (text.trim() === '') return; // a spare no job took
    try {
      const entry = parseEntry(text);
      const target = jobFiles(this.#stateDir, entry.jobId).dir;
      if (fs.existsSync(target)) throw new Error(`job ${entry.jobId} has a directory already`);
      fs.renameSync(dir, target);
      syncDir(this.#root);
      this.#load(entry);
    } catch (error) {
      onDamaged(file, (error as Error).message);
      fs.rmSync(dir, { recursive: true, force: true }); // never taken by a job with this content
    }
  }

  #patched(jobId: string, patch: Partial<Omit<JournalEntry, 'jobId' | 'assignment'>>): JournalEntry {
    const current = this.#entries.get(jobId);
    if (!current) throw new Error(`no journal for job ${jobId}`);
    return { ...current, ...patch, updatedAt: new Date().toISOString() };
  }

  #makeDir(jobId: string, claimSpare: boolean): void {
    if (!claimSpare || !claimSpareJobDir(this.#stateDir, jobId))
      fs.mkdirSync(jobFiles(this.#stateDir, jobId).dir, DIR_MODE);
  }

  #file(jobId: string): string {
    return jobFiles(this.#stateDir, jobId).journalFile;
  }

  /** `jobs/`, whose entry for a new job's directory must reach the disk too, with its first flush. */
  get #root(): string {
    return path.join(this.#stateDir, 'jobs');
  }
}

const DIR_MODE = { recursive: true, mode: 0o700 } as const;

/**
 * A journal file's entry (of job `name` when given), or an error saying why the file holds none.
 * Every field is checked, as the code that reads it relies on it (recover, decideIntake, prune):
 * an entry that is valid JSON but of another shape (cut short in an odd place, written by hand)
 * would otherwise stop the agent at every start, or slip past the intake rules.
 */
function parseEntry(text: string, name?: string): JournalEntry {
  const entry: unknown = JSON.parse(text);
  const problem = entryProblem(entry, name);
  if (problem) throw new Error(`not a journal entry: ${problem}`);
  return entry as JournalEntry;
}

const JOURNAL_STATES: readonly JournalState[] = ['accepted', 'running', 'finished', 'rejected', 'abandoned'];

function entryProblem(entry: unknown, name: string | undefined): string | null {
  if (!isObject(entry)) return 'not an object';
  const { jobId, assignment, state, final, processGroup } = entry;
  if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId)) return 'no usable job id';
  if (name !== undefined && jobId !== name) return `the job id ${jobId} is not its directory's`;
  // The shape the stream's job events are checked for (a deploy event's parsed data has it too).
  if (!isJobAssignment(assignment) || assignment.jobId !== jobId) return 'no job assignment of its job';
  if (!JOURNAL_STATES.includes(state as JournalState))
    return `the state ${JSON.stringify(state)} is not one of the agent's`;
  if (
    final !== null &&
    !(isObject(final) && (final.kind === 'finish' || final.kind === 'reject') && isObject(final.body))
  )
    return 'its result or refusal is not one';
  if (typeof entry.finalDelivered !== 'boolean') return '`finalDelivered` is not a boolean';
  if (
    processGroup !== undefined &&
    processGroup !== null &&
    !(Number.isSafeInteger(processGroup) && (processGroup as number) > 0)
  )
    return '`processGroup` is not a process group id';
  for (const key of ['receivedAt', 'updatedAt'] as const) {
    if (typeof entry[key] !== 'string') return `\`${key}\` is not a string`;
  }
  for (const key of ['startedAt', 'note'] as const) {
    if (entry[key] !== null && typeof entry[key] !== 'string') return `\`${key}\` is not a string or null`;
  }
  return null;
}

/** The blank journal.json of a spare job directory (makeSpareJobDir), as it was made. */
const isBlankSpareJournal = (text: string): boolean => text.length === SPARE_JOURNAL_BYTES && !/[^ ]/.test(text);

const serialize = (entry: JournalEntry) => `${JSON.stringify(entry, null, 2)}\n`;
