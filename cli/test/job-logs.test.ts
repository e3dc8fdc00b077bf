import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { writeSignedIn } from './signed-in.js';

/** `drover job <id> --logs` on a log of several pages (the API answers 5000 lines at most). */

const JOB = '019ac0de-0000-7000-8000-00000000f00d';
const PAGE = 5000;

const line = (seq: number) => ({ seq, at: '2026-11-25T09:58:00.500Z', stream: 'stdout', step: 1, text: `line ${seq}` });
const job = (logs: ReturnType<typeof line>[], logsMore: boolean) => ({
  id: JOB,
  number: 7,
  kind: 'trigger',
  source: 'api',
  status: 'success',
  triggerId: null,
  agentId: null,
  workflowName: 'chatty',
  ref: null,
  params: {},
  output: null,
  exitCode: 0,
  errorMessage: null,
  createdAt: '2026-11-25T09:58:00.000Z',
  startedAt: '2026-11-25T09:58:00.000Z',
  finishedAt: '2026-11-25T09:58:01.000Z',
  cancelRequestedAt: null,
  logs,
  logsMore,
  logsTotal: 2 * PAGE + 1,
  logsDropped: 0,
});

let api: FakeCoordinator | undefined;
let configHome: string | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
  if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
  configHome = undefined;
});

describe('drover job --logs', () => {
  it('prints each page of the log as it is read, not once the last one came', async () => {
    configHome = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-job-logs-'));
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: configHome } });
    // What was printed when each page was asked for.
    const printedBefore: number[] = [];
    let reads = 0;
    api = await fakeCoordinator({
      [`GET /v1/jobs/${JOB}`]: () => {
        reads += 1;
        if (reads === 1) return [200, job([], true)]; // the job, without lines
        printedBefore.push(
          rt
            .stdout()
            .split('\n')
            .filter((l) => l.includes('stdout  line')).length,
        );
        const first = (reads - 2) * PAGE + 1;
        const count = reads === 4 ? 1 : PAGE;
        return [
          200,
          job(
            Array.from({ length: count }, (_, i) => line(first + i)),
            reads < 4,
          ),
        ];
      },
    });
    writeSignedIn(configHome, api.url);

    expect(await runCli(['job', JOB, '--logs'], rt)).toBe(0);
    const printed = rt
      .stdout()
      .split('\n')
      .filter((l) => l.includes('stdout  line'));
    expect(printed).toHaveLength(2 * PAGE + 1);
    expect(printed.at(-1)).toMatch(/ stdout {2}line 10001$/);
    expect(printedBefore).toEqual([0, PAGE, 2 * PAGE]);
    expect(api.calls.slice(1)).toEqual([
      `GET /v1/jobs/${JOB}?logsAfter=0&logsLimit=${PAGE}`,
      `GET /v1/jobs/${JOB}?logsAfter=${PAGE}&logsLimit=${PAGE}`,
      `GET /v1/jobs/${JOB}?logsAfter=${2 * PAGE}&logsLimit=${PAGE}`,
    ]);
  });
});
