import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { jobFiles, makeSpareJobDir, prepareJobFiles, SPARE_JOURNAL_BYTES } from '../../src/exec/job-files.js';
import { Journal } from '../../src/jobs/journal.js';
import { assignment } from './harness.js';
import { eventually } from '../../../test/helpers/poll.js';

let stateDir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-journal-'));
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

describe('the journal', () => {
  it('survives a restart, and skips a damaged file with a report', () => {
    const journal = Journal.open(stateDir);
    const job = assignment('w');
    journal.create(job, 'accepted');
    journal.update(job.jobId, { state: 'running', startedAt: '2026-01-01T00:00:00.000Z', processGroup: 42 });
    const other = assignment('w');
    journal.create(other, 'accepted');
    fs.writeFileSync(path.join(stateDir, 'jobs', other.jobId, 'journal.json'), '{"jobId":');
    fs.mkdirSync(path.join(stateDir, 'jobs', '..weird'), { recursive: true });

    const damaged: string[] = [];
    const reopened = Journal.open(stateDir, (file) => damaged.push(file));
    expect(reopened.get(job.jobId)).toMatchObject({ state: 'running', processGroup: 42, assignment: job });
    expect(reopened.get(other.jobId)).toBeUndefined();
    expect(damaged).toEqual([path.join(stateDir, 'jobs', other.jobId, 'journal.json')]);
    expect(fs.statSync(path.join(stateDir, 'jobs', job.jobId, 'journal.json')).mode & 0o777).toBe(0o600);
  });

  it('takes a journal it cannot read for a damaged one, never for none: the job is not run again', () => {
    const journal = Journal.open(stateDir);
    const job = assignment('w');
    journal.create(job, 'accepted');
    journal.update(job.jobId, { state: 'running', startedAt: '2026-01-01T00:00:00.000Z' });
    // Tests run as root, which reads a file of mode 000: a directory in its place fails the read (EISDIR).
    const file = path.join(stateDir, 'jobs', job.jobId, 'journal.json');
    fs.rmSync(file);
    fs.mkdirSync(file);
    const damaged: [string, string][] = [];
    const reopened = Journal.open(stateDir, (f, reason) => damaged.push([f, reason]));
    expect(reopened.isDamaged(job.jobId)).toBe(true);
    expect(damaged).toEqual([[file, 'cannot read it: EISDIR']]);
  });

  it('flushes every write unless told not to, and the new directory once', () => {
    const journal = Journal.open(stateDir);
    const fsyncs = vi.spyOn(fs, 'fsyncSync');
    try {
      const job = assignment('w');
      journal.create(job, 'accepted', {}, { durable: false });
      expect(fsyncs).not.toHaveBeenCalled();
      journal.update(job.jobId, { state: 'running' });
      expect(fsyncs).toHaveBeenCalledTimes(3); // the file, its directory, its directory's entry in jobs/
      journal.update(job.jobId, { processGroup: 7 }, { durable: false });
      expect(fsyncs).toHaveBeenCalledTimes(3);
      journal.update(job.jobId, { state: 'finished' });
      expect(fsyncs).toHaveBeenCalledTimes(5);
      expect(Journal.open(stateDir).get(job.jobId)).toMatchObject({ state: 'finished', processGroup: 7 });

      // An entry found at start is already rooted: no jobs/ flush for it.
      const reopened = Journal.open(stateDir);
      fsyncs.mockClear();
      reopened.update(job.jobId, { note: 'x' });
      expect(fsyncs).toHaveBeenCalledTimes(2);
    } finally {
      fsyncs.mockRestore();
    }
  });

  it('keeps an entry in memory only when told, until its first write in the background', async () => {
    const journal = Journal.open(stateDir);
    const job = assignment('w');
    const file = path.join(stateDir, 'jobs', job.jobId, 'journal.json');
    journal.create(job, 'accepted', {}, { onDisk: false });
    expect(journal.get(job.jobId)?.state).toBe('accepted');
    expect(fs.existsSync(path.dirname(file))).toBe(false); // not even its directory
    expect(Journal.open(stateDir).get(job.jobId)).toBeUndefined();
    const writing = journal.updateInBackground(job.jobId, { state: 'running' });
    expect(journal.get(job.jobId)?.state).toBe('running'); // in memory at once
    await writing;
    expect(Journal.open(stateDir).get(job.jobId)?.state).toBe('running');
    expect(fs.readdirSync(path.dirname(file))).toEqual(['journal.json']); // created in place
    await journal.updateInBackground(job.jobId, { note: 'again' });
    expect(Journal.open(stateDir).get(job.jobId)?.note).toBe('again');
    expect(fs.readdirSync(path.dirname(file))).toEqual(['journal.json']);
  });

  it("gives a job's first write the spare directory made ahead, with its files, never over one that exists", async () => {
    const journal = Journal.open(stateDir);
    const spare = path.join(stateDir, 'jobs', '.next');
    const leftover = path.join(stateDir, 'jobs', '.next-0a1b2c3d4e5f'); // a build a crash cut short
    fs.mkdirSync(leftover);
    await makeSpareJobDir(stateDir);
    const made = (dir: string) => fs.readdirSync(dir).sort();
    expect(made(path.join(stateDir, 'jobs'))).toEqual(['.next']); // built aside, published whole
    expect(made(spare)).toEqual(['journal.json', 'output.env', 'params.json', 'workspace']);
    fs.utimesSync(spare, new Date(0), new Date(0));
    expect(fs.statSync(spare).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(spare, 'params.json')).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(spare, 'journal.json'), 'utf8')).toBe(' '.repeat(SPARE_JOURNAL_BYTES));
    await makeSpareJobDir(stateDir); // there already: nothing to do

    const job = assignment('w');
    journal.create(job, 'accepted', {}, { onDisk: false });
    await journal.updateInBackground(job.jobId, { state: 'running' });
    const files = jobFiles(stateDir, job.jobId);
    expect(fs.existsSync(spare)).toBe(false); // taken with one rename
    expect(made(files.dir)).toEqual(['journal.json', 'output.env', 'params.json', 'workspace']);
    await eventually(() => Date.now() - fs.statSync(files.dir).mtimeMs < 60_000); // as new: pruning goes by it
    expect(Journal.open(stateDir).get(job.jobId)?.state).toBe('running'); // the blank entry filled in place
    expect(fs.statSync(files.journalFile).size).toBe(SPARE_JOURNAL_BYTES);
    await prepareJobFiles(files, { n: 1 });
    expect(JSON.parse(fs.readFileSync(files.paramsFile, 'utf8'))).toEqual({ n: 1 });

    // A job with a directory already (queued before a restart) keeps it, and one refused unrun
    // takes none: the spare stays for the next.
    await makeSpareJobDir(stateDir);
    const refused = assignment('w');
    journal.create(refused, 'rejected');
    expect(made(jobFiles(stateDir, refused.jobId).dir)).toEqual(['journal.json']);
    const queued = assignment('w');
    fs.mkdirSync(jobFiles(stateDir, queued.jobId).dir, { recursive: true });
    journal.create(queued, 'accepted');
    expect(made(jobFiles(stateDir, queued.jobId).dir)).toEqual(['journal.json']);
    expect(fs.existsSync(spare)).toBe(true);
    // The journal and its pruning pass the spare by.
    const reopened = Journal.open(stateDir, (file) => expect.fail(`reported damaged: ${file}`));
    expect(
      reopened
        .all()
        .map((e) => e.jobId)
        .sort(),
    ).toEqual([job.jobId, queued.jobId, refused.jobId].sort());
    reopened.prune(0, Date.now() + 1_000_000);
    expect(fs.existsSync(spare)).toBe(true);
  });

  it('finds a job whose claim of the spare directory a power cut undid, and removes a spare whose filling it cut short', async () => {
    const jobs = path.join(stateDir, 'jobs');
    const started: string[] = [];
    // Two jobs take spares and write their `running` entries; then their claims (renames, not
    // flushed) are undone, one back to `.next`, one back to the build's own name.
    for (const name of ['.next', '.next-0a1b2c3d4e5f']) {
      const journal = Journal.open(stateDir);
      await makeSpareJobDir(stateDir);
      const job = assignment('w');
      journal.create(job, 'accepted', {}, { onDisk: false });
      await journal.updateInBackground(job.jobId, { state: 'running', processGroup: 42 });
      expect(fs.statSync(jobFiles(stateDir, job.jobId).journalFile).size).toBe(SPARE_JOURNAL_BYTES); // filled in place
      fs.renameSync(jobFiles(stateDir, job.jobId).dir, path.join(jobs, name));
      started.push(job.jobId);
    }
    const damaged: string[] = [];
    const journal = Journal.open(stateDir, (file) => damaged.push(file));
    expect(damaged).toEqual([]);
    for (const jobId of started) expect(journal.get(jobId)).toMatchObject({ state: 'running', processGroup: 42 });
    expect(fs.readdirSync(jobs).sort()).toEqual([...started].sort()); // under their names again
    expect(Journal.open(stateDir).all()).toHaveLength(2);

    // A blank spare stays; one whose entry was cut short (its step never started) is removed.
    await makeSpareJobDir(stateDir);
    const spare = path.join(jobs, '.next');
    expect(Journal.open(stateDir, (file) => damaged.push(file)).all()).toHaveLength(2);
    expect(fs.existsSync(spare)).toBe(true);
    fs.writeFileSync(path.join(spare, 'journal.json'), `{"jobId": "a${' '.repeat(SPARE_JOURNAL_BYTES - 12)}`);
    expect(Journal.open(stateDir, (file) => damaged.push(file)).all()).toHaveLength(2);
    expect(damaged).toEqual([path.join(spare, 'journal.json')]);
    expect(fs.existsSync(spare)).toBe(false);
  });

  it('takes a claimed spare whose blank entry was never filled (kill -9 between the claim and the write) for no entry, not a damaged one', async () => {
    Journal.open(stateDir);
    await makeSpareJobDir(stateDir);
    const job = assignment('w');
    // What claimSpareJobDir does before the job's first entry fills the blank file in place.
    fs.renameSync(path.join(stateDir, 'jobs', '.next'), jobFiles(stateDir, job.jobId).dir);
    const damaged: string[] = [];
    const journal = Journal.open(stateDir, (file) => damaged.push(file));
    expect(damaged).toEqual([]);
    expect(journal.get(job.jobId)).toBeUndefined();
    // Nothing was promised for it (its first step and first report wait for that write): delivered
    // pending again, it is taken and runs, where it was failed as "may have run already".
    expect(journal.isDamaged(job.jobId)).toBe(false);
    journal.create(job, 'accepted', {}, { onDisk: false });
    await journal.updateInBackground(job.jobId, { state: 'running' });
    expect(Journal.open(stateDir).get(job.jobId)?.state).toBe('running');
    // A blank file of another size, or one a power cut left with anything but the spare's spaces, stays damaged.
    fs.writeFileSync(jobFiles(stateDir, job.jobId).journalFile, ' '.repeat(SPARE_JOURNAL_BYTES - 1));
    expect(Journal.open(stateDir).isDamaged(job.jobId)).toBe(true);
    fs.writeFileSync(jobFiles(stateDir, job.jobId).journalFile, '\0'.repeat(SPARE_JOURNAL_BYTES));
    expect(Journal.open(stateDir).isDamaged(job.jobId)).toBe(true);
  });

  it('skips an entry that a power cut left empty, keeping its job as damaged until an entry is written', () => {
    const job = assignment('w');
    fs.mkdirSync(path.join(stateDir, 'jobs', job.jobId), { recursive: true });
    fs.writeFileSync(path.join(stateDir, 'jobs', job.jobId, 'journal.json'), '');
    const damaged: string[] = [];
    const journal = Journal.open(stateDir, (file) => damaged.push(file));
    expect(journal.get(job.jobId)).toBeUndefined();
    expect(journal.isDamaged(job.jobId)).toBe(true);
    expect(damaged).toHaveLength(1);
    // Delivered again, it is recorded anew over the damaged file.
    journal.create(job, 'finished');
    expect(journal.isDamaged(job.jobId)).toBe(false);
    expect(Journal.open(stateDir).get(job.jobId)?.state).toBe('finished');
  });

  it('checks every field of an entry, and skips one of another shape with a report saying what is wrong', () => {
    const journal = Journal.open(stateDir);
    const good = journal.create(assignment('w'), 'running', { processGroup: 42 });
    const cases: [string, (entry: Record<string, any>) => unknown][] = [
      ['no job assignment of its job', (e) => ({ jobId: e.jobId, state: 'running' })],
      ['no job assignment of its job', (e) => ({ ...e, assignment: { ...e.assignment, workflowName: 7 } })],
      ['no job assignment of its job', (e) => ({ ...e, assignment: { ...e.assignment, jobId: good.jobId } })],
      ['the state "Finished" is not one of the agent\'s', (e) => ({ ...e, state: 'Finished', finalDelivered: true })],
      ["the state null is not one of the agent's", (e) => ({ ...e, state: null })],
      ['its result or refusal is not one', (e) => ({ ...e, state: 'finished', final: { kind: 'done', body: {} } })],
      ['`finalDelivered` is not a boolean', (e) => ({ ...e, finalDelivered: 'yes' })],
      ['`processGroup` is not a process group id', (e) => ({ ...e, processGroup: '1' })],
      ['`processGroup` is not a process group id', (e) => ({ ...e, processGroup: -1 })],
      ['`updatedAt` is not a string', (e) => ({ ...e, updatedAt: undefined })],
      ['`startedAt` is not a string or null', (e) => ({ ...e, startedAt: 1 })],
      ['not an object', () => ['x']],
    ];
    const bad = cases.map(([, damage]) => {
      const entry = journal.create(assignment('w'), 'accepted');
      const file = path.join(stateDir, 'jobs', entry.jobId, 'journal.json');
      fs.writeFileSync(file, JSON.stringify(damage(JSON.parse(fs.readFileSync(file, 'utf8')))));
      return entry.jobId;
    });

    const damaged: [string, string][] = [];
    const reopened = Journal.open(stateDir, (file, reason) =>
      damaged.push([path.basename(path.dirname(file)), reason]),
    );
    expect(reopened.all().map((e) => e.jobId)).toEqual([good.jobId]);
    expect(new Map(damaged)).toEqual(new Map(bad.map((jobId, i) => [jobId, `not a journal entry: ${cases[i]![0]}`])));
    for (const jobId of bad) expect(reopened.isDamaged(jobId)).toBe(true);
    expect(reopened.isDamaged(good.jobId)).toBe(false);
  });

  it('prunes settled jobs after the retention, never one whose result is still owed', () => {
    const journal = Journal.open(stateDir);
    const final = {
      kind: 'finish' as const,
      body: { status: 'success' as const, exitCode: 0, errorMessage: null, output: {} },
    };
    const delivered = journal.create(assignment('w'), 'finished', { final, finalDelivered: true });
    const owed = journal.create(assignment('w'), 'finished', { final });
    const running = journal.create(assignment('w'), 'running');
    const abandoned = journal.create(assignment('w'), 'abandoned');
    const queued = journal.create(assignment('w'), 'accepted');
    const week = 7 * 24 * 3_600_000;
    expect(journal.prune(week)).toBe(0);
    expect(journal.prune(week, Date.now() + week + 1)).toBe(2);
    expect(journal.get(abandoned.jobId)).toBeUndefined();
    expect(journal.get(delivered.jobId)).toBeUndefined();
    expect(fs.existsSync(path.join(stateDir, 'jobs', delivered.jobId))).toBe(false);
    expect(journal.get(owed.jobId)).toBeDefined();
    expect(journal.get(running.jobId)).toBeDefined();
    expect(journal.get(queued.jobId)).toBeDefined(); // runs when delivered again
  });

  it('keeps a queued job across a restart after the clock jumped forward by weeks (no RTC before NTP)', () => {
    // The machine booted with its clock 30 days behind: job A ran, job B was accepted into the
    // queue, then kill -9; the agent restarts with the clock set right.
    const realNow = Date.now();
    vi.useFakeTimers({ now: realNow - 30 * 24 * 3_600_000, toFake: ['Date'] });
    let journal = Journal.open(stateDir);
    const final = {
      kind: 'finish' as const,
      body: { status: 'success' as const, exitCode: 0, errorMessage: null, output: {} },
    };
    const ran = journal.create(assignment('w'), 'running');
    journal.update(ran.jobId, { state: 'finished', final, finalDelivered: true });
    const queued = journal.create(assignment('w'), 'accepted');
    vi.useRealTimers();

    journal = Journal.open(stateDir);
    expect(journal.prune(7 * 24 * 3_600_000, realNow)).toBe(1); // A's outcome is the coordinator's
    expect(journal.get(ran.jobId)).toBeUndefined();
    expect(journal.get(queued.jobId)).toMatchObject({ state: 'accepted' });
    expect(Journal.open(stateDir).get(queued.jobId)).toMatchObject({ state: 'accepted' });
  });

  it("prunes a settled job whose steps left a read-only directory (Go's module cache), and never stops on one it cannot remove", () => {
    const week = 7 * 24 * 3_600_000;
    const journal = Journal.open(stateDir);
    const final = {
      kind: 'finish' as const,
      body: { status: 'success' as const, exitCode: 0, errorMessage: null, output: {} },
    };
    const [built, stuck, other] = [assignment('w'), assignment('w'), assignment('w')].map((job) =>
      journal.create(job, 'finished', { final, finalDelivered: true }),
    );
    // `go build` with its cache in the workspace: module directories are 0555, their files 0444.
    const modules = path.join(stateDir, 'jobs', built!.jobId, 'workspace', 'go', 'pkg', 'mod', 'x@v1');
    fs.mkdirSync(modules, { recursive: true });
    fs.writeFileSync(path.join(modules, 'x.go'), 'package x\n', { mode: 0o444 });
    for (let dir = modules; dir !== path.join(stateDir, 'jobs', built!.jobId); dir = path.dirname(dir))
      fs.chmodSync(dir, 0o555);
    // A directory the agent's user cannot change (another user's, made by a step run with sudo).
    const foreign = path.join(stateDir, 'jobs', stuck!.jobId, 'workspace', 'root-owned');
    fs.mkdirSync(foreign, { recursive: true });
    fs.writeFileSync(path.join(foreign, 'f'), '');

    const restore = asUserOtherThanRoot([foreign]);
    const kept: [string, string][] = [];
    try {
      expect(journal.prune(week, Date.now() + week + 1, (dir, reason) => kept.push([dir, reason]))).toBe(2);
    } finally {
      restore();
    }
    expect(fs.existsSync(path.join(stateDir, 'jobs', built!.jobId))).toBe(false);
    expect(journal.get(built!.jobId)).toBeUndefined();
    expect(fs.existsSync(path.join(stateDir, 'jobs', other!.jobId))).toBe(false);
    expect(kept).toEqual([[path.join(stateDir, 'jobs', stuck!.jobId), 'EACCES']]);
    expect(journal.get(stuck!.jobId)).toMatchObject({ state: 'finished' }); // tried again at the next start
  });

  it('prunes job directories without a readable entry once untouched for the retention', () => {
    const week = 7 * 24 * 3_600_000;
    const dirOf = (jobId: string) => path.join(stateDir, 'jobs', jobId);
    const [damaged, bare, fresh] = [assignment('w'), assignment('w'), assignment('w')];
    for (const job of [damaged, bare, fresh])
      fs.mkdirSync(path.join(dirOf(job.jobId), 'workspace'), { recursive: true });
    fs.writeFileSync(path.join(dirOf(damaged.jobId), 'journal.json'), '');
    const old = new Date(Date.now() - week - 60_000);
    for (const job of [damaged, bare]) fs.utimesSync(dirOf(job.jobId), old, old);
    const journal = Journal.open(stateDir);
    const kept = journal.create(assignment('w'), 'running');
    fs.utimesSync(dirOf(kept.jobId), old, old);

    expect(journal.prune(week)).toBe(2);
    expect(fs.existsSync(dirOf(damaged.jobId))).toBe(false);
    expect(fs.existsSync(dirOf(bare.jobId))).toBe(false);
    expect(fs.existsSync(dirOf(fresh.jobId))).toBe(true); // too recent
    expect(fs.existsSync(dirOf(kept.jobId))).toBe(true); // a readable entry decides for itself
  });
});

/**
 * Removing a tree as a user other than root does, whoever runs the tests (root may remove
 * anything): an entry of a directory without its owner's write bit cannot be removed, nor can
 * anything in the `foreign` directories (another user's), which cannot be chmod-ed either.
 * Returns the undo.
 */
function asUserOtherThanRoot(foreign: string[]): () => void {
  const rm = fs.rmSync;
  const chmod = fs.chmodSync;
  const spies = [
    vi.spyOn(fs, 'rmSync').mockImplementation((target, options) => {
      const blocked = blockedDir(String(target), foreign);
      if (blocked) throw Object.assign(new Error(`EACCES: permission denied, rm '${blocked}'`), { code: 'EACCES' });
      rm(target, options);
    }),
    vi.spyOn(fs, 'chmodSync').mockImplementation((target, mode) => {
      if (foreign.includes(String(target)))
        throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${String(target)}'`), { code: 'EPERM' });
      chmod(target, mode);
    }),
  ];
  return () => spies.forEach((spy) => spy.mockRestore());
}

/** The first directory of the tree whose entries the user could not remove, or null. */
function blockedDir(root: string, foreign: string[]): string | null {
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (!stat?.isDirectory()) continue;
    const entries = fs.readdirSync(dir, { withFileTypes: true });
    if (entries.length > 0 && (foreign.includes(dir) || (stat.mode & 0o200) === 0)) return dir;
    for (const entry of entries) if (entry.isDirectory()) pending.push(path.join(dir, entry.name));
  }
  return null;
}
