import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isAlive as alive,
  processesWithEnv,
  startDaemonRig,
  type AgentStateDir,
  type DaemonProcess,
  type DaemonRig,
} from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';
import type { TestCoordinator } from '../helpers/coordinator.js';
import type { ApiResponse } from '../helpers/http.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * `POST /v1/triggers/:id/run` end to end: a real coordinator, a real `drover-agent run` child
 * process and real workflow files. One coordinator and one agent serve every test here; each
 * test waits for its jobs to end, so the agent's queue is empty when the next one starts.
 */

const SECRET = 's3cr3t-value-8f2a';
/** The coordinator's cap of a job's stored log (DROVER_JOB_LOG_MAX_BYTES): its least. */
const LOG_CAP = 65_536;
const TERMINAL = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'];

let rig: DaemonRig | undefined;
let t: TestCoordinator;
let a: AgentStateDir;
let daemon: DaemonProcess;
let work: string;
let jobIds: string[];

afterAll(() => rig?.close());

const WORKFLOWS: Record<string, string[]> = {
  hello: [
    'name: hello',
    'params:',
    '  - {name: who, type: string, default: world}',
    'steps:',
    '  - name: greet',
    '    run: echo "Hello, $DROVER_PARAM_WHO!"; echo "to stderr" >&2',
    '    shell: true',
    '  - name: report',
    '    run: echo "greeting=Hello, $DROVER_PARAM_WHO!" >> "$DROVER_OUTPUT"; echo "job=$DROVER_JOB_ID" >> "$DROVER_OUTPUT"',
    '    shell: true',
  ],
  fail: [
    'name: fail',
    'steps:',
    '  - name: prepare',
    '    run: echo preparing; echo "partial=yes" >> "$DROVER_OUTPUT"',
    '    shell: true',
    '  - name: build',
    '    run: echo compiling; exit 3',
    '    shell: true',
    '  - name: never',
    '    run: echo this step must not run',
    '    shell: true',
  ],
  hang: [
    'name: hang',
    'timeout: 1m',
    'steps:',
    '  - name: wait',
    // A grandchild in the background and a child in the foreground, both far longer than the limit.
    `    run: sh -c 'echo $$ >> "$DROVER_WORKSPACE/pids"; exec sleep 30' & echo $$ >> "$DROVER_WORKSPACE/pids"; echo waiting; sleep 30`,
    '    shell: true',
    '    timeout: 1s',
  ],
  params: [
    'name: params',
    'params:',
    '  - {name: env, type: enum, options: [staging, prod], required: true}',
    '  - {name: max-count, type: number, min: 1, max: 10, default: 3}',
    '  - {name: dry_run, type: boolean, default: false}',
    "  - {name: who, type: string, default: world, pattern: '^[a-z]+$'}",
    'steps:',
    '  - run: |',
    '      echo "env=$DROVER_PARAM_ENV" >> "$DROVER_OUTPUT"',
    '      echo "maxCount=$DROVER_PARAM_MAX_COUNT" >> "$DROVER_OUTPUT"',
    '      echo "dryRun=$DROVER_PARAM_DRY_RUN" >> "$DROVER_OUTPUT"',
    '      echo "who=$DROVER_PARAM_WHO" >> "$DROVER_OUTPUT"',
    '      echo "file=$(tr -d \'\\n\' < "$DROVER_PARAMS_FILE")" >> "$DROVER_OUTPUT"',
    '    shell: true',
  ],
  // 3,000 short lines (about 40 KB): under the coordinator's cap, below.
  chatty: ['name: chatty', 'steps:', '  - run: seq -f "line %g" 3000', '    shell: true'],
  // 5,000 lines of 100 bytes: past it.
  flood: [
    'name: flood',
    'steps:',
    `  - run: for i in $(seq 5000); do printf 'flood %05d %s\\n' $i ${'.'.repeat(88)}; done`,
    '    shell: true',
  ],
  secretive: [
    'name: secretive',
    'secrets: [DEPLOY_TOKEN]',
    'steps:',
    '  - name: use',
    '    run: echo "using $DEPLOY_TOKEN now"; echo "err $DEPLOY_TOKEN" >&2; echo "token=$DEPLOY_TOKEN" >> "$DROVER_OUTPUT"',
    '    shell: true',
  ],
};

beforeAll(async () => {
  rig = await startDaemonRig({
    workPrefix: 'drover-trigger-run-agent-',
    workflows: (dir) => ({
      ...WORKFLOWS,
      // `slow` runs until the test creates its gate file (at most 30 s).
      slow: [
        'name: slow',
        'steps:',
        `  - run: for i in $(seq 600); do [ -f ${path.join(dir, 'gate')} ] && break; sleep 0.05; done; echo "done=yes" >> "$DROVER_OUTPUT"`,
        '    shell: true',
      ],
      count: [
        'name: count',
        'steps:',
        `  - run: echo "$DROVER_JOB_ID" >> ${path.join(dir, 'runs.log')}`,
        '    shell: true',
      ],
    }),
    prepare: (stateDir) =>
      fs.writeFileSync(path.join(stateDir, 'secrets.yaml'), `DEPLOY_TOKEN: "${SECRET}"\n`, { mode: 0o600 }),
    env: { DROVER_JOB_LOG_MAX_BYTES: String(LOG_CAP) },
  });
  ({ t, a, daemon, work, jobIds } = rig);
}, 60_000);

/** A webhook trigger on the agent's workflow and an API token that may run it. */
const trigger = (workflowName: string, extra: Record<string, unknown> = {}) =>
  runnableTrigger(t, a.agentId, workflowName, extra);

async function run(
  tr: { id: string; token: string },
  body: unknown = {},
  headers?: Record<string, string>,
): Promise<ApiResponse> {
  const res = await t.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body, ...(headers ? { headers } : {}) });
  if (typeof res.body?.jobId === 'string') jobIds.push(res.body.jobId);
  return res;
}

async function job(id: string): Promise<Record<string, any>> {
  const res = await t.owner.get(`/jobs/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

function settled(id: string, timeoutMs = 20_000): Promise<Record<string, any>> {
  return eventually(
    async () => {
      const j = await job(id);
      return TERMINAL.includes(j.status) ? j : undefined;
    },
    timeoutMs,
    `job ${id} to end`,
  );
}

const gateFile = () => path.join(work, 'gate');

const texts = (j: Record<string, any>): string[] => j.logs.map((l: { text: string }) => l.text);

/** Every stored line of a job, page by page as a client follows them (`logsAfter`, `logsMore`). */
async function wholeLog(id: string): Promise<{ seq: number; stream: string; text: string }[]> {
  const lines = [];
  for (let after = 0; ;) {
    const page = (await t.owner.get(`/jobs/${id}?logsAfter=${after}&logsLimit=1000`)).body;
    lines.push(...page.logs);
    if (!page.logsMore) return lines;
    after = page.logs.at(-1).seq;
  }
}

describe("a job's log with a real agent", () => {
  it('arrives whole before the result, every line in order, read page by page', async () => {
    const res = await run(await trigger('chatty'));
    const done = await settled(res.body.jobId);
    expect(done.status).toBe('success');
    const lines = await wholeLog(done.id);
    expect(done.logsTotal).toBe(lines.length);
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i + 1));
    const stdout = lines.filter((l) => l.stream === 'stdout').map((l) => l.text);
    expect(stdout).toEqual(Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`));
    // The job's own last line was sent before its result: none came too late.
    expect(lines.at(-1)!.text).toBe('job finished: success');
  });

  it('is capped past DROVER_JOB_LOG_MAX_BYTES: its first lines, one line counting the dropped ones, its newest', async () => {
    const res = await run(await trigger('flood'));
    const done = await settled(res.body.jobId);
    expect(done.status).toBe('success');
    const lines = await wholeLog(done.id);
    expect(done.logsTotal).toBe(lines.length);
    expect(lines.reduce((sum, l) => sum + Buffer.byteLength(l.text), 0)).toBeLessThanOrEqual(LOG_CAP);
    const gap = lines.findIndex((l) => l.stream === 'system' && l.text.includes('dropped here'));
    expect(lines.filter((l) => l.text.includes('dropped here'))).toHaveLength(1);
    expect(lines[gap]!.text).toBe(
      `[drover] ${done.logsDropped.toLocaleString('en-US')} lines (${lines[gap]!.text.match(/\((.+?)\)/)![1]}) dropped here: ` +
        "this job's log passed its limit of 64 KiB or 4,096 lines (DROVER_JOB_LOG_MAX_BYTES); its first lines and its newest are kept",
    );
    const floods = (part: typeof lines) =>
      part.filter((l) => l.stream === 'stdout').map((l) => Number(l.text.slice(6, 11)));
    const head = floods(lines.slice(0, gap));
    const tail = floods(lines.slice(gap + 1));
    expect(head).toEqual(head.map((_, i) => i + 1));
    expect(tail).toEqual(tail.map((_, i) => 5000 - tail.length + 1 + i));
    expect(head.length + tail.length + done.logsDropped).toBe(5000);
    expect(lines.at(-1)!.text).toBe('job finished: success');
  });
});

describe('an async trigger run with a real agent', () => {
  it('answers 202 at once, and the job ends success with its log lines, output and exit code 0', async () => {
    const tr = await trigger('hello');
    const res = await run(tr, { ref: 'v1.2', params: { who: 'Drover' } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      jobId: expect.any(String),
      status: 'pending',
      statusUrl: `/api/jobs/${res.body.jobId}`,
    });
    const done = await settled(res.body.jobId);
    expect(done).toMatchObject({
      id: res.body.jobId,
      status: 'success',
      triggerId: tr.id,
      agentId: a.agentId,
      workflowName: 'hello',
      ref: 'v1.2',
      params: { who: 'Drover' },
      exitCode: 0,
      errorMessage: null,
      output: { greeting: 'Hello, Drover!', job: res.body.jobId },
    });
    expect(done.logs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ stream: 'stdout', step: 1, text: 'Hello, Drover!' }),
        expect.objectContaining({ stream: 'stderr', step: 1, text: 'to stderr' }),
      ]),
    );
    expect(Date.parse(done.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.startedAt));
  });
});

describe('a sync trigger run with a real agent', () => {
  it('answers 200 with the result of a successful job', async () => {
    const tr = await trigger('hello', { responseMode: 'sync', responseTimeoutMs: 20_000 });
    const res = await run(tr, { params: { who: 'sync' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      jobId: expect.any(String),
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: { greeting: 'Hello, sync!', job: res.body.jobId },
      statusUrl: `/api/jobs/${res.body.jobId}`,
    });
  });

  it('answers a failing step with status failed, its exit code and a message naming it', async () => {
    const tr = await trigger('fail', { responseMode: 'sync', responseTimeoutMs: 20_000 });
    const res = await run(tr);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      status: 'failed',
      exitCode: 3,
      errorMessage: 'step 2 (build) exited with code 3',
      output: { partial: 'yes' },
    });
    expect(res.body.timedOut).toBeUndefined();
    const lines = texts(await job(res.body.jobId));
    expect(lines).toEqual(expect.arrayContaining(['preparing', 'compiling']));
    expect(lines).not.toContain('this step must not run');
  });

  it('answers timedOut with a non-terminal status after responseTimeoutMs, and the job still ends success', async () => {
    const tr = await trigger('slow', { responseMode: 'sync', responseTimeoutMs: 1000 });
    const started = Date.now();
    const res = await run(tr);
    const waited = Date.now() - started;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ jobId: expect.any(String), timedOut: true, exitCode: null, errorMessage: null });
    expect(['pending', 'queued', 'running']).toContain(res.body.status);
    expect(waited).toBeGreaterThanOrEqual(950);
    expect((await job(res.body.jobId)).status).toBe('running');
    fs.writeFileSync(gateFile(), '');
    const done = await settled(res.body.jobId);
    expect(done).toMatchObject({ status: 'success', exitCode: 0, output: { done: 'yes' } });
  });
});

describe('a step timeout', () => {
  it('ends the job timed_out naming the step, and kills the whole process group', async () => {
    const tr = await trigger('hang');
    const res = await run(tr);
    expect(res.status, res.text).toBe(202);
    const jobId: string = res.body.jobId;
    const pidsFile = path.join(a.stateDir, 'jobs', jobId, 'workspace', 'pids');
    const started = Date.now();
    // While the step runs, both processes carry the job's id in their environment.
    await eventually(() => processesWithEnv('DROVER_JOB_ID', jobId).length >= 2, 5000, 'the step processes to run');
    const done = await settled(jobId);
    expect(done).toMatchObject({
      status: 'timed_out',
      exitCode: null,
      errorMessage: expect.stringMatching(/^step 1 \(wait\) timed out after 1s\b/),
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(texts(done)).toContain('waiting');
    // Both the step's shell and the grandchild it put in the background wrote their pids.
    const pids = fs.readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
    expect(pids).toHaveLength(2);
    await eventually(
      () => processesWithEnv('DROVER_JOB_ID', jobId).length === 0,
      5000,
      'the step processes to be gone',
    );
    expect(pids.filter(alive)).toEqual([]);
  });
});

describe('params', () => {
  it('applies the defaults and gives the steps DROVER_PARAM_* variables and the params JSON file', async () => {
    const tr = await trigger('params', { responseMode: 'sync', responseTimeoutMs: 20_000 });
    const res = await run(tr, { params: { env: 'prod' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', exitCode: 0 });
    const { file, ...vars } = res.body.output;
    expect(vars).toEqual({ env: 'prod', maxCount: '3', dryRun: 'false', who: 'world' });
    expect(JSON.parse(file)).toEqual({
      env: 'prod',
      'max-count': 3,
      dry_run: false,
      who: 'world',
    });

    const given = await run(tr, { params: { env: 'staging', 'max-count': 7, dry_run: true, who: 'ada' } });
    expect(given.body.output).toMatchObject({ env: 'staging', maxCount: '7', dryRun: 'true', who: 'ada' });
  });

  it('refuses a bad param with 422 naming it, and creates no job', async () => {
    const tr = await trigger('params');
    const bad = [
      { params: { env: 'qa' } },
      { params: {} },
      { params: { env: 'prod', 'max-count': 11 } },
      { params: { env: 'prod', 'max-count': '3' } },
      { params: { env: 'prod', who: 'Not Lower' } },
      { params: { env: 'prod', dry_run: 'yes' } },
      // Issue 29: `WHO` would have replaced the checked `who` in DROVER_PARAM_WHO on the agent.
      { params: { env: 'prod', who: 'ok', WHO: 'x; touch /tmp/p' } },
      { params: { env: 'prod', whom: 'ada' } },
    ];
    for (const body of bad) {
      const res = await run(tr, body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(422);
      expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', message: expect.any(String) });
      const named = Object.keys(body.params).at(-1) ?? 'env';
      expect(JSON.stringify(res.body)).toContain(named);
    }
    const jobs = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${tr.id}`);
    expect(jobs.status).toBe(200);
    expect(jobs.body).toEqual([]);
  });
});

describe('idempotency with a real agent', () => {
  it('makes exactly one job of 50 concurrent calls with one key, and the agent runs it once', async () => {
    const tr = await trigger('count');
    const key = `deploy-${Date.now()}`;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => run(tr, { ref: 'main' }, { 'idempotency-key': key })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(202));
    const ids = new Set(answers.map((r) => r.body.jobId));
    expect(ids.size).toBe(1);
    const [jobId] = [...ids] as [string];
    expect(answers.filter((r) => r.body.idempotent === true)).toHaveLength(49);

    expect(await settled(jobId)).toMatchObject({ status: 'success' });
    const jobs = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${tr.id}`);
    expect(jobs.body.map((j: { id: string }) => j.id)).toEqual([jobId]);
    // A later repeat answers the same job as the first call did, and nothing runs again.
    const again = await run(tr, { ref: 'main' }, { 'idempotency-key': key });
    expect(again.body).toMatchObject({ jobId, status: 'pending', idempotent: true });
    // A job run after the repeat, once it has run, shows that whatever the repeat set off has
    // run too: the agent gets its jobs in order and runs them one at a time.
    const later = await run(tr, { ref: 'main' });
    expect(await settled(later.body.jobId)).toMatchObject({ status: 'success' });
    const runs = fs.readFileSync(path.join(work, 'runs.log'), 'utf8').trim().split('\n');
    expect(runs.filter((id) => id === jobId)).toEqual([jobId]);
    const starts = daemon.logRecords().filter((r) => r.jobId === jobId && /^step 1 .*started/.test(r.msg));
    expect(starts).toHaveLength(1);
  });
});

describe('secret masking through the whole path', () => {
  it('masks a secret from secrets.yaml in the job log lines, the output and the agent log file', async () => {
    const tr = await trigger('secretive', { responseMode: 'sync', responseTimeoutMs: 20_000 });
    const res = await run(tr);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', output: { token: '***' } });
    expect(res.text).not.toContain(SECRET);
    const done = await job(res.body.jobId);
    expect(texts(done)).toEqual(expect.arrayContaining(['using *** now', 'err ***']));
    expect(JSON.stringify(done)).not.toContain(SECRET);
    await daemon.waitForLog((r) => r.jobId === res.body.jobId && /job finished/.test(r.msg ?? ''));
    const agentLog = fs.readFileSync(path.join(a.stateDir, 'logs', 'agent.log'), 'utf8');
    expect(agentLog).toContain('using *** now');
    expect(agentLog).not.toContain(SECRET);
  });
});
