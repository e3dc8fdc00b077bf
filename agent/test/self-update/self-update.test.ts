import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeployReportRequest } from '@drover/shared';
import type { DeployApi } from '../../src/deploy/deploy-api.js';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import type { JobResult } from '../../src/exec/run-workflow.js';
import { SELF_UPDATE_WORKFLOW } from '../../src/self-update/builtin-workflow.js';
import {
  describeMarker,
  markerPath,
  peekMarker,
  readMarker,
  writeMarker,
  type SelfUpdateMarker,
} from '../../src/self-update/marker.js';
import { HANDED_OVER, SelfUpdate, stagingProblem, type SelfUpdateOptions } from '../../src/self-update/self-update.js';
import { captureLogger } from '../log-capture.js';
import { eventually } from '../../../test/helpers/poll.js';

/**
 * The self-update's rules (docs/agent.md, "Self-update") with shell scripts standing in for the
 * binaries: each answers `--version` as drover-agent does. The real single executable is
 * updated and rolled back in test/e2e/agent-self-update.test.ts.
 */

const PLATFORM = `${process.platform}-${process.arch}`;
const APP = '3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b';
const JOB = '01a22507-6a18-7cbe-81a5-f3632d4c6831';
const RELEASE = { releaseId: '0bbd5bdb-a616-40ee-a95a-37e36c7e67b6', version: '0.2.0', sequence: 2 };

/** A stand-in binary: a script whose `--version` prints `answer` (and exits with `code`). */
function script(file: string, answer: string, code = 0): string {
  fs.writeFileSync(file, `#!/bin/sh\necho '${answer}'\nexit ${code}\n`, { mode: 0o755 });
  return file;
}

const agentLine = (version: string, platform = PLATFORM) => `${version} (Node.js 24.21.0, ${platform})`;

describe('self-update', () => {
  let dir: string;
  let stateDir: string;
  let exe: string;
  let restarts: string[];
  let finished: { jobId: string; result: JobResult }[];
  let reports: DeployReportRequest[];
  let store: DeployStateStore;
  let log: ReturnType<typeof captureLogger>;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-self-update-unit-'));
    stateDir = path.join(dir, 'state');
    fs.mkdirSync(stateDir, { mode: 0o700 });
    fs.mkdirSync(path.join(dir, 'bin'));
    exe = script(path.join(dir, 'bin', 'drover-agent'), agentLine('0.1.0'));
    restarts = [];
    finished = [];
    reports = [];
    store = DeployStateStore.open(stateDir);
    log = captureLogger();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const api = {
    report: (body: DeployReportRequest) => {
      reports.push(body);
      return Promise.resolve({ state: body.state });
    },
  } as unknown as DeployApi;

  function selfUpdate(version: string, extra: Partial<SelfUpdateOptions> = {}): SelfUpdate {
    const update = new SelfUpdate({
      stateDir,
      logger: log.logger,
      executable: exe,
      version,
      enabled: true,
      deadlineMs: 60_000,
      restart: (reason) => restarts.push(reason),
      ...extra,
    });
    return update;
  }

  const parts = () => ({
    finishJob: (jobId: string, result: JobResult) => finished.push({ jobId, result }),
    deploy: { api, store },
  });

  const messages = () => log.records.map((r) => r.msg as string);

  async function install(update: SelfUpdate, artifact: string) {
    const said: string[] = [];
    const result = await update.install({
      jobId: JOB,
      applicationId: APP,
      release: RELEASE,
      artifactPath: artifact,
      say: (text) => said.push(text),
    });
    return { result, said };
  }

  /** The marker an install of 0.2.0 over 0.1.0 leaves, with `changes`. */
  function marker(changes: Partial<SelfUpdateMarker> = {}): SelfUpdateMarker {
    return {
      version: 1,
      phase: 'swapped',
      jobId: JOB,
      applicationId: APP,
      release: RELEASE,
      executable: exe,
      previous: `${exe}.previous`,
      fromVersion: '0.1.0',
      toVersion: '0.2.0',
      deadlineMs: 60_000,
      swappedAt: new Date().toISOString(),
      firstStartAt: null,
      starts: 0,
      reason: null,
      ...changes,
    };
  }

  it('swaps: keeps the running binary as .previous, renames the new one over it, writes the marker, restarts', async () => {
    const artifact = script(path.join(dir, 'artifact'), agentLine('0.2.0'));
    const update = selfUpdate('0.1.0');
    const { result, said } = await install(update, artifact);
    expect(result).toBe(HANDED_OVER);
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.2.0');
    expect(fs.readFileSync(`${exe}.previous`, 'utf8')).toContain('0.1.0');
    expect(fs.statSync(exe).mode & 0o777).toBe(0o755);
    expect(fs.existsSync(`${exe}.new`)).toBe(false);
    expect(fs.existsSync(artifact)).toBe(false); // moved, not left in the job's workspace as a second copy
    expect(readMarker(stateDir)).toMatchObject({
      phase: 'swapped',
      jobId: JOB,
      fromVersion: '0.1.0',
      toVersion: '0.2.0',
      previous: `${exe}.previous`,
      deadlineMs: 60_000,
      starts: 0,
    });
    expect(restarts).toEqual(['self-update to 0.2.0']);
    expect(said).toContain(`self-update: the new binary answers ${agentLine('0.2.0')}`);
    expect(said.at(-1)).toMatch(
      /restarting \(exit code 75: the service manager starts the new binary, which must connect within 1m\)$/,
    );
  });

  it.each([
    [
      'does not run',
      (file: string) => script(file, 'Segmentation fault', 139),
      /--version` exited with code 139: Segmentation fault/,
    ],
    [
      'answers something else',
      (file: string) => script(file, 'hello'),
      /did not answer as drover-agent does .* got "hello"/,
    ],
    [
      'is built for another platform',
      (file: string) => script(file, agentLine('0.2.0', 'linux-riscv64')),
      new RegExp(`the new binary is built for linux-riscv64, this machine is ${PLATFORM}`),
    ],
  ])('refuses a new binary that %s: nothing changes', async (_what, make, problem) => {
    const update = selfUpdate('0.1.0');
    const { result } = await install(update, make(path.join(dir, 'artifact')));
    expect(result).not.toBe(HANDED_OVER);
    expect(result).toMatchObject({ status: 'failed', errorMessage: expect.stringMatching(problem) });
    expect((result as JobResult).errorMessage).toMatch(/^self-update not installed: .*; 0\.1\.0 keeps running$/);
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.1.0');
    expect(fs.existsSync(`${exe}.new`)).toBe(false);
    expect(fs.existsSync(`${exe}.previous`)).toBe(false);
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
    expect(restarts).toEqual([]);
  });

  it('needs nothing when the new binary is the running version', async () => {
    const update = selfUpdate('0.1.0');
    const { result } = await install(update, script(path.join(dir, 'artifact'), agentLine('0.1.0')));
    expect(result).toMatchObject({ status: 'success', output: { agentVersion: '0.1.0' } });
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
    expect(restarts).toEqual([]);
  });

  it('fails when the new binary cannot be written beside the executable, and keeps running', async () => {
    // A directory in the way of `<executable>.new` (root may write anywhere: a read-only directory would not do).
    fs.mkdirSync(path.join(dir, 'bin', 'drover-agent.new', 'in-the-way'), { recursive: true });
    const { result } = await install(selfUpdate('0.1.0'), script(path.join(dir, 'artifact'), agentLine('0.2.0')));
    expect((result as JobResult).errorMessage).toMatch(
      /^self-update not installed: cannot write the new binary beside .*drover-agent \(.*\); 0\.1\.0 keeps running$/,
    );
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.1.0');
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
    expect(restarts).toEqual([]);
  });

  it('says a full disk is a full disk, not a permission of the directory, when the new binary cannot be written', () => {
    // The error the system gives a write on a full device, as the copy to another file system meets it.
    let full: unknown;
    try {
      fs.writeFileSync('/dev/full', 'x');
    } catch (error) {
      full = error;
    }
    expect((full as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(stagingProblem(full, '/opt/drover-agent/drover-agent', 110 * 1024 * 1024 + 1)).toBe(
      'cannot write the new binary beside /opt/drover-agent/drover-agent: no space left on the device ' +
        '(ENOSPC; free some: `df -h /opt/drover-agent`); it takes 111 MiB there',
    );
    const denied = Object.assign(new Error("EACCES: permission denied, open '/opt/drover-agent/drover-agent.new'"), {
      code: 'EACCES',
    });
    expect(stagingProblem(denied, '/opt/drover-agent/drover-agent')).toBe(
      "cannot write the new binary beside /opt/drover-agent/drover-agent (EACCES: permission denied, open '/opt/drover-agent/drover-agent.new'); " +
        "the agent's user must be allowed to write to that directory",
    );
  });

  it('the new binary on trial is confirmed when it connects: the job succeeds with its agentVersion', () => {
    writeMarker(stateDir, marker());
    const update = selfUpdate('0.2.0');
    expect(update.resume(parts())).toEqual(new Set([JOB]));
    expect(readMarker(stateDir)).toMatchObject({ starts: 1, firstStartAt: expect.any(String) });
    expect(messages()).toContain(
      `self-update: running 0.2.0 on trial (start 1): it must connect to the coordinator within 1m, else 0.1.0 is put back from ${exe}.previous`,
    );
    expect(finished).toEqual([]);
    update.connected();
    update.connected(); // once only
    expect(finished).toEqual([
      {
        jobId: JOB,
        result: expect.objectContaining({
          status: 'success',
          output: { agentVersion: '0.2.0', previousVersion: '0.1.0' },
        }),
      },
    ]);
    expect(store.get(APP).current).toEqual(RELEASE);
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
    expect(messages()).toContain(
      `self-update to 0.2.0 confirmed: connected to the coordinator; 0.1.0 is kept as ${exe}.previous`,
    );
  });

  it('rolls back when the new binary has not connected by the deadline, naming the last error', async () => {
    script(`${exe}.previous`, agentLine('0.1.0'));
    script(exe, agentLine('0.2.0'));
    writeMarker(stateDir, marker({ deadlineMs: 50 }));
    const update = selfUpdate('0.2.0', { lastError: () => 'cannot open the stream: HTTP 401' });
    update.resume(parts());
    await eventually(() => restarts.length > 0, 5000, 'the rollback');
    expect(restarts).toEqual(['rollback to 0.1.0']);
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.1.0');
    const reason = 'it did not connect to the coordinator within 50ms (last error: cannot open the stream: HTTP 401)';
    expect(readMarker(stateDir)).toMatchObject({ phase: 'rolled_back', reason });
    expect(messages()).toContain(
      `self-update to 0.2.0 rolled back: ${reason}; putting 0.1.0 back from ${exe}.previous and restarting`,
    );
    update.connected(); // too late: nothing is confirmed
    expect(finished).toEqual([]);
  });

  it('a rollback whose marker cannot be written (a full disk) still restarts into the previous binary, never confirming the new one', async () => {
    script(`${exe}.previous`, agentLine('0.1.0'));
    script(exe, agentLine('0.2.0'));
    writeMarker(stateDir, marker({ deadlineMs: 50 }));
    const update = selfUpdate('0.2.0');
    update.resume(parts());
    // The marker can no longer be written: a directory where its rename goes (ENOSPC on a device).
    fs.rmSync(markerPath(stateDir));
    fs.mkdirSync(markerPath(stateDir));
    fs.writeFileSync(path.join(markerPath(stateDir), 'x'), '');
    await eventually(() => restarts.length > 0, 5000, 'the rollback');
    expect(restarts).toEqual(['rollback to 0.1.0']);
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.1.0');
    expect(messages()).toContainEqual(
      expect.stringMatching(
        /^self-update: 0\.1\.0 is back, but the rollback's reason cannot be recorded \(Cannot write /,
      ),
    );
    // It said the previous binary could not be put back, stayed, and was confirmed when it connected:
    // the job `success` and `installed` reported, with 0.1.0 on disk for every start to come.
    update.connected();
    expect(finished).toEqual([]);
    expect(reports).toEqual([]);
  });

  it('the previous binary, started with the marker of a trial it could not record, fails the job saying it was put back', () => {
    writeMarker(stateDir, marker({ firstStartAt: new Date().toISOString(), starts: 2 }));
    selfUpdate('0.1.0').resume(parts());
    expect(finished[0]?.result.errorMessage).toBe(
      'self-update to 0.2.0 failed: the agent started as 0.1.0 again after 0.2.0 had started 2 times: it was put back ' +
        '(rolled back without its reason recorded, a full disk say, or by hand)',
    );
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
  });

  it('a new binary that keeps crashing is rolled back at the start after the deadline, counted from its first start', () => {
    script(`${exe}.previous`, agentLine('0.1.0'));
    script(exe, agentLine('0.2.0'));
    const firstStartAt = new Date(Date.now() - 61_000).toISOString();
    writeMarker(stateDir, marker({ firstStartAt, starts: 4 }));
    const update = selfUpdate('0.2.0');
    expect(update.resume(parts())).toEqual(new Set([JOB]));
    expect(restarts).toEqual(['rollback to 0.1.0']);
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.1.0');
    expect(readMarker(stateDir)).toMatchObject({
      phase: 'rolled_back',
      starts: 5,
      reason: 'it did not connect to the coordinator within 1m of its first start (5 starts)',
    });
  });

  it('the previous binary, back after a rollback, fails the job and records why', () => {
    writeMarker(stateDir, marker({ phase: 'rolled_back', reason: 'it did not connect within 1m' }));
    const update = selfUpdate('0.1.0');
    expect(update.resume(parts())).toEqual(new Set([JOB]));
    const message = 'self-update to 0.2.0 failed: rolled back to 0.1.0: it did not connect within 1m';
    expect(finished).toEqual([
      {
        jobId: JOB,
        result: expect.objectContaining({ status: 'failed', errorMessage: message, output: { agentVersion: '0.1.0' } }),
      },
    ]);
    expect(store.get(APP).lastFailure).toMatchObject({ releaseId: RELEASE.releaseId, state: 'failed', error: message });
    expect(reports).toEqual([expect.objectContaining({ applicationId: APP, state: 'failed', error: message })]);
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
    expect(messages()).toContain(
      'self-update to 0.2.0 failed and was rolled back: it did not connect within 1m; running 0.1.0 again',
    );
    expect(restarts).toEqual([]);
  });

  it('fails the job when the old binary starts again before the swap was done', () => {
    writeMarker(stateDir, marker());
    fs.writeFileSync(`${exe}.new`, 'half');
    selfUpdate('0.1.0').resume(parts());
    expect(finished[0]?.result.errorMessage).toBe(
      'self-update to 0.2.0 failed: the agent started as 0.1.0 again before 0.2.0 was in place (it stopped during the swap)',
    );
    expect(fs.existsSync(`${exe}.new`)).toBe(false);
    expect(fs.existsSync(markerPath(stateDir))).toBe(false);
  });

  it('removes the .new left by an install stopped (kill -9) before the marker, and nothing else', () => {
    // As a kill during the copy or the `--version` check leaves it: no marker, `.new` beside the
    // executable; `.previous` of an earlier update kept for a rollback by hand.
    fs.writeFileSync(`${exe}.new`, 'half a copy');
    script(`${exe}.previous`, agentLine('0.0.9'));
    const update = selfUpdate('0.1.0');
    expect(update.resume(parts())).toEqual(new Set());
    expect(fs.existsSync(`${exe}.new`)).toBe(false);
    expect(fs.readFileSync(exe, 'utf8')).toContain('0.1.0');
    expect(fs.statSync(exe).mode & 0o777).toBe(0o755);
    expect(fs.readFileSync(`${exe}.previous`, 'utf8')).toContain('0.0.9');
    expect(fs.readdirSync(path.join(dir, 'bin')).sort()).toEqual(['drover-agent', 'drover-agent.previous']);
    expect(messages()).toEqual([
      `self-update: removed drover-agent.new, left by a self-update that was stopped before it swapped (${exe}.new); ${exe} was not changed`,
    ]);
    expect(finished).toEqual([]);
    expect(reports).toEqual([]);
    expect(restarts).toEqual([]);
    // The next start has nothing to remove, and says nothing.
    expect(selfUpdate('0.1.0').resume(parts())).toEqual(new Set());
    expect(messages()).toHaveLength(1);
    expect(fs.readdirSync(path.join(dir, 'bin')).sort()).toEqual(['drover-agent', 'drover-agent.previous']);
  });

  it('leaves a directory in the way of .new alone when there is no marker', () => {
    fs.mkdirSync(path.join(dir, 'bin', 'drover-agent.new', 'in-the-way'), { recursive: true });
    expect(selfUpdate('0.1.0').resume(parts())).toEqual(new Set());
    expect(fs.existsSync(path.join(dir, 'bin', 'drover-agent.new', 'in-the-way'))).toBe(true);
    expect(messages()).toEqual([]);
  });

  it('sets a damaged marker aside and leaves the job to the journal', () => {
    fs.writeFileSync(markerPath(stateDir), '{"version": 1, "phase": "swapped"');
    expect(selfUpdate('0.1.0').resume(parts())).toEqual(new Set());
    expect(fs.existsSync(`${markerPath(stateDir)}.damaged`)).toBe(true);
    expect(messages().some((m) => m.startsWith(`skipped a damaged file: ${markerPath(stateDir)} (not JSON`))).toBe(
      true,
    );
  });

  it('skips a damaged marker it cannot set aside, saying so, instead of stopping at every start', () => {
    fs.writeFileSync(markerPath(stateDir), '{"version": 1, "phase": "swapped"');
    // Tests run as root, which writes in a read-only directory: a directory in the way of the rename fails it.
    fs.mkdirSync(path.join(`${markerPath(stateDir)}.damaged`, 'x'), { recursive: true });
    expect(selfUpdate('0.1.0').resume(parts())).toEqual(new Set());
    expect(messages()).toEqual([
      expect.stringMatching(
        /^skipped a damaged file: .*self-update\.json \(not JSON .*; it cannot be renamed self-update\.json\.damaged \(EISDIR\), so it stays, skipped at each start: remove it\)$/,
      ),
    ]);
    // `drover-agent status`, beside a daemon that runs with it there: it could not be set aside.
    const read = peekMarker(stateDir)!;
    expect(describeMarker(read, true)).toMatch(
      /^self-update\.json is damaged \(not JSON .*\); the running agent skips it but could not rename it self-update\.json\.damaged \(its log says why\): remove it$/,
    );
    expect(describeMarker(read, false)).toMatch(
      /; the agent renames it self-update\.json\.damaged at its next start, or/,
    );
  });

  it('sets aside a marker whose trial dates do not parse, instead of stopping at every start', () => {
    writeMarker(stateDir, marker({ firstStartAt: 'yesterday', starts: 1 }));
    expect(selfUpdate('0.2.0').resume(parts())).toEqual(new Set());
    expect(fs.existsSync(`${markerPath(stateDir)}.damaged`)).toBe(true);
    expect(
      messages().some(
        (m) => m === `skipped a damaged file: ${markerPath(stateDir)} (firstStartAt: expected a date or null)`,
      ),
    ).toBe(true);
  });

  it('offers the built-in workflow unless turned off', () => {
    const on = selfUpdate('0.1.0');
    expect(on.workflows.map((w) => w.name)).toEqual([SELF_UPDATE_WORKFLOW]);
    expect(on.workflows[0]).toMatchObject({ timeout: 3_600_000, paramsSchema: null });
    expect(on.handles(SELF_UPDATE_WORKFLOW)).toBe(true);
    expect(on.handles('apply-update')).toBe(false);
    const off = selfUpdate('0.1.0', { enabled: false });
    expect(off.workflows).toEqual([]);
    expect(off.handles(SELF_UPDATE_WORKFLOW)).toBe(false);
  });
});
