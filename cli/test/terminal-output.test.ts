import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { showControls } from '@drover/shared';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { signedInHome } from './signed-in.js';

/**
 * What a coordinator answers (a job's log, output and error, an API's message) is shown by the
 * command line, never obeyed by the terminal: no control character but tab and line break
 * reaches it raw, and `--json` prints the same JSON.
 */

const OSC52 = '\u001b]52;c;cm0gLXJmIH4vKgo=\u0007'; // sets the clipboard
const CSI = '\u001b[1A\u001b[2K'; // up one line, erase it
const C1 = '\u009b31m'; // CSI in its 8-bit form

const JOB = '019ac0de-0000-7000-8000-00000000beef';
const job = {
  id: JOB,
  number: 7,
  kind: 'trigger',
  source: 'api',
  status: 'failed',
  triggerId: null,
  agentId: '3f0c1d52-0000-4000-8000-000000000001',
  workflowName: `deploy${C1}`,
  ref: null,
  params: {},
  output: { note: `ok${OSC52}` },
  exitCode: 1,
  errorMessage: `step 1 failed${CSI}`,
  createdAt: '2026-11-25T09:58:00.000Z',
  startedAt: '2026-11-25T09:58:00.000Z',
  finishedAt: '2026-11-25T09:58:01.000Z',
  cancelRequestedAt: null,
  logs: [{ seq: 1, at: '2026-11-25T09:58:00.500Z', stream: 'stdout', step: 1, text: `copying${OSC52}\r50%\u007f` }],
};
const run = {
  jobId: JOB,
  status: 'failed',
  statusUrl: `/api/jobs/${JOB}`,
  exitCode: 1,
  errorMessage: `exit 1${CSI}`,
  output: { note: `ok${OSC52}` },
};

let api: FakeCoordinator;
let configHome: string;
beforeAll(async () => {
  api = await fakeCoordinator({
    'POST /v1/triggers/sync/run': [200, run],
    'POST /v1/triggers/refused/run': [422, { statusCode: 422, code: 'validation_failed', message: `no${OSC52}` }],
    [`GET /v1/jobs/${JOB}`]: [200, job],
  });
  configHome = signedInHome(api.url);
});
afterAll(async () => {
  await api?.close();
  if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
});

const cli = async (args: string[], env: Record<string, string> = {}) => {
  const rt = testRuntime({ env: { DROVER_URL: api.url, XDG_CONFIG_HOME: configHome, ...env } });
  const code = await runCli(args, rt);
  return { code, out: rt.stdout(), err: rt.stderr() };
};

describe('text from the coordinator on a terminal', () => {
  it("shows the escape sequences of a job's error and output as text", async () => {
    const res = await cli(['run', 'sync', '--wait'], { DROVER_TOKEN: 'drv_x' });
    expect(res.code).toBe(1);
    expect(showControls(res.out)).toBe(res.out);
    expect(res.out).toContain('failed (exit code 1): exit 1\\x1b[1A\\x1b[2K\n');
    expect(res.out).toContain('  note: ok\\x1b]52;c;cm0gLXJmIH4vKgo=\\x07\n');
  });

  it('prints the same JSON with --json', async () => {
    const res = await cli(['run', 'sync', '--wait', '--json'], { DROVER_TOKEN: 'drv_x' });
    expect(showControls(res.out)).toBe(res.out);
    expect(JSON.parse(res.out)).toEqual(run);
    const detail = await cli(['job', JOB, '--json']);
    expect(detail.out).toContain('"workflowName": "deploy\\u009b31m"');
    expect(JSON.parse(detail.out)).toEqual(job);
  });

  it("shows them in a job's log lines, fields and error", async () => {
    const res = await cli(['job', JOB, '--logs']);
    expect(res.code).toBe(0);
    expect(showControls(res.out)).toBe(res.out);
    expect(res.out).toContain('Workflow:   deploy\\x9b31m\n');
    expect(res.out).toContain('Error:      step 1 failed\\x1b[1A\\x1b[2K\n');
    expect(res.out).toContain('09:58:00 stdout  copying\\x1b]52;c;cm0gLXJmIH4vKgo=\\x07\\x0d50%\\x7f\n');
  });

  it("shows them in an API's refusal", async () => {
    const res = await cli(['run', 'refused'], { DROVER_TOKEN: 'drv_x' });
    expect(res).toMatchObject({ code: 2, out: '', err: 'drover: no\\x1b]52;c;cm0gLXJmIH4vKgo=\\x07\n' });
  });
});
