import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { showControls } from '@drover/shared';
import { runAgentCli as run } from './run-cli.js';

let stateDir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-logs-cli-'));
  fs.mkdirSync(path.join(stateDir, 'logs'));
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

const JOB = '1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516';
const rec = (level: number, msg: string, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ level, time: '2026-11-22T10:31:02.000Z', pid: 1, ...extra, msg })}\n`;

function writeLogs() {
  fs.writeFileSync(path.join(stateDir, 'logs', 'agent.log.1'), rec(30, 'agent started'));
  fs.writeFileSync(
    path.join(stateDir, 'logs', 'agent.log'),
    rec(30, 'step 1 (test) passed', { jobId: JOB, workflow: 'deploy' }) +
      rec(50, 'step 2 (build) exited with code 3', { jobId: JOB, workflow: 'deploy' }) +
      rec(40, 'job queue full; rejecting'),
  );
}

describe('drover-agent logs', () => {
  it('shows every file, oldest first, one readable line per record', async () => {
    writeLogs();
    const res = await run('logs', '--state-dir', stateDir, '--utc');
    expect(res.code).toBe(0);
    expect(res.out).toBe(
      [
        '2026-11-22 10:31:02  INFO   agent started',
        '2026-11-22 10:31:02  INFO   job …e3f40516 deploy: step 1 (test) passed',
        '2026-11-22 10:31:02  ERROR  job …e3f40516 deploy: step 2 (build) exited with code 3',
        '2026-11-22 10:31:02  WARN   job queue full; rejecting',
        '',
      ].join('\n'),
    );
  });

  it('filters by --job and --level, keeps the last lines with -n, and prints raw lines with --json', async () => {
    writeLogs();
    const job = await run('logs', '--state-dir', stateDir, '--job', '1b2c3d4e');
    expect(job.out.trim().split('\n')).toHaveLength(2);
    const warn = await run('logs', '--state-dir', stateDir, '--level', 'warn');
    expect(warn.out).toMatch(/^.*ERROR .*\n.*WARN .*job queue full; rejecting\n$/);
    const last = await run('logs', '--state-dir', stateDir, '-n', '1');
    expect(last.out).toMatch(/^[^\n]*job queue full; rejecting\n$/);
    const json = await run('logs', '--state-dir', stateDir, '--job', JOB, '--level', 'error', '--json');
    expect(
      json.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['step 2 (build) exited with code 3']);
  });

  it('shows the control characters a job or a workflow put in the log instead of letting the terminal obey them', async () => {
    const clipboard = '\u001b]52;c;cm0gLXJmIH4=\u0007'; // OSC 52: sets the clipboard
    const rewrite = '\u001b[1A\u001b[2K'; // CSI: up one line, erase it
    fs.writeFileSync(
      path.join(stateDir, 'logs', 'agent.log'),
      rec(30, `step output ${clipboard}done${rewrite}`, { jobId: JOB, workflow: `deploy\u009b2J` }) +
        `not json \u001b[31mred\r\n`,
    );
    const res = await run('logs', '--state-dir', stateDir, '--utc');
    expect(res.out).toBe(
      '2026-11-22 10:31:02  INFO   job …e3f40516 deploy\\x9b2J: step output \\x1b]52;c;cm0gLXJmIH4=\\x07done\\x1b[1A\\x1b[2K\n' +
        'not json \\x1b[31mred\\x0d\n',
    );
    // --json: the same JSON (DEL and C1 controls, which JSON leaves raw, as \u escapes).
    const json = await run('logs', '--state-dir', stateDir, '--json', '--job', JOB);
    expect(showControls(json.out)).toBe(json.out);
    expect(JSON.parse(json.out)).toMatchObject({
      msg: `step output ${clipboard}done${rewrite}`,
      workflow: 'deploy\u009b2J',
    });
  });

  it('tells apart jobs created in the same minute, whose ids begin alike, by the end of their ids', async () => {
    // UUIDv7: the first 12 hex digits are the creation time in milliseconds.
    const first = '019ac0de-4a10-7000-8000-00000000aaaa';
    const second = '019ac0de-4a11-7000-8000-00000000bbbb';
    fs.writeFileSync(
      path.join(stateDir, 'logs', 'agent.log'),
      rec(30, 'job finished', { jobId: first, workflow: 'deploy' }) +
        rec(30, 'job finished', { jobId: second, workflow: 'deploy' }),
    );
    const all = await run('logs', '--state-dir', stateDir, '--utc');
    expect(all.out).toContain('job …0000aaaa deploy: job finished\n');
    expect(all.out).toContain('job …0000bbbb deploy: job finished\n');
    for (const given of ['…0000bbbb', '0000bbbb', second, '019ac0de-4a11']) {
      const res = await run('logs', '--state-dir', stateDir, '--utc', '--job', given);
      expect(res.out, given).toBe('2026-11-22 10:31:02  INFO   job …0000bbbb deploy: job finished\n');
    }
  });

  it("fails, saying who may read it, when this user may not read the log (the service's directory)", async () => {
    writeLogs();
    const file = path.join(stateDir, 'logs', 'agent.log');
    const open = fs.openSync;
    const stat = fs.statSync;
    const spies = [
      vi.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, flags: fs.OpenMode = 'r', mode?: fs.Mode) => {
        if (p === file) throw Object.assign(new Error(`EACCES: permission denied, open '${file}'`), { code: 'EACCES' });
        return open(p, flags, mode);
      }) as typeof fs.openSync),
      vi
        .spyOn(fs, 'statSync')
        .mockImplementation(((p: fs.PathLike, o?: never) =>
          p === file ? { ...stat(p), uid: 65534 } : stat(p, o)) as typeof fs.statSync),
    ];
    try {
      const res = await run('logs', '--state-dir', stateDir);
      expect(res).toEqual({
        code: 1,
        out: '',
        err: `drover-agent: error: cannot read ${file}: permission denied (run it with sudo or as nobody)\n`,
      });
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('says so when there is nothing to show', async () => {
    const res = await run('logs', '--state-dir', stateDir);
    expect(res.code).toBe(0);
    expect(res.out).toBe('');
    expect(res.err).toBe(`No log lines yet in ${path.join(stateDir, 'logs', 'agent.log')} (and its rotated files).\n`);
    // No agent's state there at all (a mistyped --state-dir): an error, not "no lines yet".
    const elsewhere = path.join(stateDir, 'no-such-agent');
    expect(await run('logs', '--state-dir', elsewhere)).toEqual({
      code: 1,
      out: '',
      err: `drover-agent: error: no agent state at ${elsewhere}: give the agent's own with --state-dir (or DROVER_AGENT_STATE_DIR)\n`,
    });
  });

  it('refuses an unknown level, a job that is not an id and a bad line count, with exit code 2', async () => {
    for (const [args, message] of [
      [['--level', 'loud'], '--level expects one of trace, debug, info, warn, error, fatal, got `loud`'],
      [['--job', 'deploy!'], '--job expects a job id or a part of it, got `deploy!`'],
      [['-n', 'ten'], '--lines expects a whole number, got `ten`'],
    ] as const) {
      const res = await run('logs', '--state-dir', stateDir, ...args);
      expect(res.code).toBe(2);
      expect(res.err).toBe(`drover-agent: error: ${message}\n`);
    }
  });
});
