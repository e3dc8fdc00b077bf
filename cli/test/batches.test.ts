import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeOfBatch, formatCounts, type BatchDetail, type BatchJob } from '../src/batches/batch.js';
import { batchResultTable } from '../src/batches/format-batch.js';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { signedInHome, writeSignedIn } from './signed-in.js';

const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
const BATCH = '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f';
const A = '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d';
const B = '7a2d3c9f-5e4b-4a6c-8d8e-1f2a3b4c5d6e';
const C = '8b3e4d0a-6f5c-4b7d-9e9f-2a3b4c5d6e7f';

const job = (
  n: number,
  agentId: string,
  agentName: string | null,
  status: BatchJob['status'],
  more: Partial<BatchJob> = {},
): BatchJob => ({
  jobId: `019ac3e2-6b20-7d1${n}-8e0f-1a2b3c4d5e6f`,
  number: 40 + n,
  agentId,
  agentName,
  status,
  exitCode: status === 'success' ? 0 : status === 'failed' ? 1 : null,
  errorMessage: null,
  output: {},
  createdAt: '2026-11-28T09:30:00.000Z',
  startedAt: status === 'pending' || status === 'rejected' ? null : '2026-11-28T09:30:01.000Z',
  finishedAt: status === 'success' || status === 'failed' ? '2026-11-28T09:30:02.500Z' : null,
  ...more,
});
const rejected = job(3, C, 'gw-c', 'rejected', { errorMessage: 'Agent gw-c does not report the workflow `rotate`' });

const detail = (status: BatchDetail['status'], jobs: BatchJob[]): BatchDetail => ({
  id: BATCH,
  number: 7,
  orgId: ORG,
  triggerId: '8c2f1a3b-4d5e-4f60-9a7b-8c9d0e1f2a3b',
  workflowName: 'rotate',
  selector: 'role=gateway,site=berlin',
  maxParallel: null,
  source: 'webhook',
  status,
  counts: { pending: 0, queued: 0, running: 0, success: 0, failed: 0, timed_out: 0, cancelled: 0, rejected: 0 },
  jobCount: jobs.length,
  createdAt: '2026-11-28T09:30:00.000Z',
  endedAt: null,
  jobs,
});

const result = (status: string, jobs: BatchJob[], more: Record<string, unknown> = {}) => ({
  batchId: BATCH,
  status,
  jobs: jobs.map(({ jobId, agentId, agentName, status, exitCode, errorMessage, output }) => ({
    jobId,
    agentId,
    agentName,
    status,
    exitCode,
    errorMessage,
    output,
  })),
  statusUrl: `/api/batches/${BATCH}`,
  ...more,
});

describe('a batch as the command line shows it', () => {
  it('exits 0 only when every job succeeded, 1 otherwise, 6 while it runs', () => {
    expect(exitCodeOfBatch('success')).toBe(0);
    for (const status of ['failed', 'partial', 'cancelled'] as const) expect(exitCodeOfBatch(status)).toBe(1);
    expect(exitCodeOfBatch('running')).toBe(6);
    expect(exitCodeOfBatch('pending')).toBe(6);
  });

  it('counts its jobs by status in the order of the statuses, the empty ones left out', () => {
    expect(formatCounts({ rejected: 1, success: 2, failed: 0, running: 3 })).toBe('3 running, 2 success, 1 rejected');
  });

  it("names each job's agent, telling apart agents of one name, and by id once the agent has no name", () => {
    const table = batchResultTable([
      job(1, A, 'gw', 'success'),
      job(2, B, 'gw', 'failed', { errorMessage: 'step 1 failed\nexit 1' }),
      job(4, C, null, 'pending'),
    ]);
    expect(table.split('\n')).toEqual([
      'AGENT                                 STATUS   EXIT  ERROR',
      'gw (…2a3b4c5d)                        success  0     -',
      'gw (…3b4c5d6e)                        failed   1     step 1 failed exit 1',
      `${C}  pending  -     -`,
      '',
    ]);
  });
});

describe('drover run on a selector trigger', () => {
  let api: FakeCoordinator | undefined;
  let configHome: string | undefined;
  afterEach(async () => {
    await api?.close();
    if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
  });

  const start = async (routes: Parameters<typeof fakeCoordinator>[0]) => {
    api = await fakeCoordinator(routes);
    return { DROVER_URL: api.url, DROVER_TOKEN: 'drv_x' };
  };
  const signIn = () => {
    configHome = signedInHome(api!.url);
    return { DROVER_URL: api!.url, XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG };
  };
  const cli = async (args: string[], env: Record<string, string>) => {
    const rt = testRuntime({ env });
    const code = await runCli(args, rt);
    return { code, stdout: rt.stdout(), stderr: rt.stderr() };
  };
  const accepted = {
    batchId: BATCH,
    jobIds: [job(1, A, 'gw-a', 'pending').jobId, job(2, B, 'gw-b', 'pending').jobId, rejected.jobId],
    jobCount: 3,
    status: 'pending',
    statusUrl: `/api/batches/${BATCH}`,
  };

  it('prints the batch, its job count and its page; with --wait and a token alone says what is possible', async () => {
    const env = await start({ 'POST /v1/triggers/fleet/run': [202, accepted] });
    expect(await cli(['run', 'fleet'], env)).toEqual({
      code: 0,
      stdout: `Batch ${BATCH}: pending, 3 jobs\n${api!.url}/api/batches/${BATCH}\n`,
      stderr: '',
    });
    const json = await cli(['run', 'fleet', '--json'], env);
    expect(JSON.parse(json.stdout)).toEqual(accepted);

    const waited = await cli(['run', 'fleet', '--wait'], env);
    expect(waited.code).toBe(2);
    expect(waited.stdout).toBe(`Batch ${BATCH}: pending, 3 jobs\n${api!.url}/api/batches/${BATCH}\n`);
    expect(waited.stderr).toBe(
      'drover: --wait on an async selector trigger needs a session to follow its batch (drover login), or a sync ' +
        `trigger, whose answer waits for every job; batch ${BATCH} keeps running\n`,
    );
  });

  it("prints a sync trigger's answer as a row per agent, and with --wait exits 0 only when every job succeeded", async () => {
    const partial = result('partial', [job(1, A, 'gw-a', 'success'), job(2, B, 'gw-b', 'failed'), rejected]);
    const success = result('success', [job(1, A, 'gw-a', 'success'), job(2, B, 'gw-b', 'success')], {
      idempotent: true,
    });
    const late = result('running', [job(1, A, 'gw-a', 'success'), job(2, B, 'gw-b', 'running')], { timedOut: true });
    const env = await start({
      'POST /v1/triggers/partial/run': [200, partial],
      'POST /v1/triggers/success/run': [200, success],
      'POST /v1/triggers/late/run': [200, late],
    });
    const page = `${api!.url}/api/batches/${BATCH}`;
    const waited = await cli(['run', 'partial', '--wait'], env);
    expect(waited).toEqual({
      code: 1,
      stderr: '',
      stdout: [
        `Batch ${BATCH}: partial (1 success, 1 failed, 1 rejected)`,
        page,
        'AGENT  STATUS    EXIT  ERROR',
        'gw-a   success   0     -',
        'gw-b   failed    1     -',
        'gw-c   rejected  -     Agent gw-c does not report the workflow `rotate`',
        '',
      ].join('\n'),
    });
    // Without --wait, the batch was accepted: 0.
    expect((await cli(['run', 'partial'], env)).code).toBe(0);
    const ok = await cli(['run', 'success', '--wait'], env);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`^Batch ${BATCH} \\(a repeat\\): success \\(2 success\\)\n`));
    const timedOut = await cli(['run', 'late', '--wait'], env);
    expect(timedOut.code).toBe(6);
    expect(timedOut.stdout).toMatch(
      new RegExp(`^Batch ${BATCH}: running \\(1 running, 1 success\\): the trigger's wait ended before its jobs\n`),
    );
    const json = await cli(['run', 'partial', '--wait', '--json'], env);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual(partial);
  });

  it('follows an async batch with the session: each job as it ends, then a row per agent', async () => {
    let looks = 0;
    const moving = () => {
      looks += 1;
      const second = looks < 2 ? job(2, B, 'gw-b', 'running') : job(2, B, 'gw-b', 'failed', { errorMessage: 'boom' });
      const status = looks < 2 ? 'running' : 'partial';
      return [200, detail(status, [job(1, A, 'gw-a', looks < 2 ? 'running' : 'success'), second, rejected])] as [
        number,
        unknown,
      ];
    };
    await start({
      [`POST /v1/orgs/${ORG}/triggers/fleet/run`]: [202, accepted],
      [`GET /v1/batches/${BATCH}`]: moving,
      'POST /v1/triggers/stuck/run': [202, accepted],
    });
    const env = signIn();
    const res = await cli(['run', 'fleet', '--wait', '--logs'], env);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe(
      [
        `Batch ${BATCH}: pending, 3 jobs`,
        `${api!.url}/api/batches/${BATCH}`,
        `Batch ${BATCH}: partial (1 success, 1 failed, 1 rejected)`,
        'AGENT  STATUS    EXIT  ERROR',
        'gw-a   success   0     -',
        'gw-b   failed    1     boom',
        'gw-c   rejected  -     Agent gw-c does not report the workflow `rotate`',
        '',
      ].join('\n'),
    );
    expect(res.stderr).toBe(
      [
        "drover: --logs follows one job's log; a batch's are one per agent: drover job <job-id> --logs",
        'gw-c (job #43) was rejected: Agent gw-c does not report the workflow `rotate`',
        'gw-a (job #41) succeeded in 1.5s',
        'gw-b (job #42) failed (exit code 1) in 1.5s: boom',
        '',
      ].join('\n'),
    );
    expect(api!.calls.filter((c) => c.startsWith('GET'))).toHaveLength(2);
  });

  it('with a token, follows the batch with the session there is, and exits 6 when --wait-timeout passes first', async () => {
    await start({
      'POST /v1/triggers/fleet/run': [202, accepted],
      [`GET /v1/batches/${BATCH}`]: [200, detail('running', [job(1, A, 'gw-a', 'running'), rejected])],
    });
    const env = { ...signIn(), DROVER_TOKEN: 'drv_x' };
    const res = await cli(['run', 'fleet', '--wait', '--wait-timeout', '0.3s', '--json'], env);
    expect(res.code).toBe(6);
    expect(JSON.parse(res.stdout)).toMatchObject({ id: BATCH, status: 'running' });
    const table = await cli(['run', 'fleet', '--wait', '--wait-timeout', '0.3s'], env);
    expect(table.code).toBe(6);
    expect(table.stdout).toContain(`Batch ${BATCH}: running (1 running, 1 rejected): the wait timed out\nAGENT`);
  });

  it('exits 6 with the batch as it is when the wait is interrupted (Ctrl-C)', async () => {
    const interrupt = new AbortController();
    let looks = 0;
    await start({
      [`POST /v1/orgs/${ORG}/triggers/fleet/run`]: [202, accepted],
      // Interrupted at the second look, once the first one showed the batch.
      [`GET /v1/batches/${BATCH}`]: () => {
        if (++looks === 2) interrupt.abort('SIGINT');
        return [200, detail('running', [job(1, A, 'gw-a', 'running'), rejected])];
      },
    });
    const rt = testRuntime({ env: signIn(), signal: interrupt.signal });
    expect(await runCli(['run', 'fleet', '--wait'], rt)).toBe(6);
    expect(rt.stdout()).toContain(`Batch ${BATCH}: running (1 running, 1 rejected): the wait was interrupted\n`);
  });
});

describe('drover trigger create on a selector, before any call', () => {
  let api: FakeCoordinator | undefined;
  afterEach(() => api?.close());

  it('refuses a bad selector with its position, --agent with --selector, and selector options without one', async () => {
    api = await fakeCoordinator({});
    const refused = async (args: string[]) => {
      const rt = testRuntime({ env: { DROVER_URL: api!.url } });
      const code = await runCli(['trigger', 'create', '--name', 'fleet', '--workflow', 'rotate', ...args], rt);
      return { code, stderr: rt.stderr() };
    };
    expect(await refused(['--selector', 'role=gateway,site in berlin'])).toEqual({
      code: 2,
      stderr:
        "drover: --selector: not a label selector: at position 21: expected '(', found 'berlin'\n" +
        '  role=gateway,site in berlin\n' +
        '                       ^\n',
    });
    // The empty selector, in the coordinator's words (its schema alone says "must not be empty").
    for (const empty of ['', '  ']) {
      expect(await refused(['--selector', empty])).toEqual({
        code: 2,
        stderr:
          'drover: body.agentSelector: must select by at least one label (to reach every agent, select one they ' +
          'all have, such as `os`)\n',
      });
    }
    const one = 'drover: give --agent <id-or-name> or --selector <selector> (one of them)\n';
    expect(await refused(['--selector', 'role=gateway', '--agent', 'gw-1'])).toEqual({ code: 2, stderr: one });
    expect(await refused([])).toEqual({ code: 2, stderr: one });
    expect(await refused(['--agent', 'gw-1', '--max-parallel', '2'])).toEqual({
      code: 2,
      stderr: 'drover: --max-parallel needs --selector\n',
    });
    expect(await refused(['--selector', 'role=gateway', '--max-parallel', '0'])).toEqual({
      code: 2,
      stderr: 'drover: --max-parallel: expected a whole number from 1, got `0`\n',
    });
    expect(await refused(['--selector', 'role=gateway', '--fanout', 'some'])).toEqual({
      code: 2,
      stderr: 'drover: --fanout: expected all or one, got `some`\n',
    });
    expect(await refused(['--selector', 'role=build', '--fanout', 'one', '--max-parallel', '2'])).toEqual({
      code: 2,
      stderr: 'drover: --max-parallel needs --fanout all (a pool runs one job per run)\n',
    });
    expect(api.calls).toEqual([]);
  });

  it('says what a new trigger runs on: a batch of one job per agent, or a pool of one job per run', async () => {
    const trigger = (fanout: 'all' | 'one', maxParallel: number | null) => ({
      id: 'c1a2b3d4-0000-4000-8000-000000000001',
      name: 'builds',
      responseMode: 'async',
      agentId: null,
      agentSelector: 'role=build',
      fanout,
      maxParallel,
    });
    // What the selector matches, counted by the coordinator (revoked agents left out).
    const matches = {
      matching: 2,
      names: ['build-1', 'build-2'],
      lacking: 0,
      lackingNames: [],
      workflowNames: ['compile'],
      versions: [],
    };
    const configHome = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-trigger-'));
    try {
      const created = async (answer: ReturnType<typeof trigger>, args: string[]) => {
        api = await fakeCoordinator({
          [`POST /v1/orgs/${ORG}/triggers`]: [201, answer],
          [`GET /v1/orgs/${ORG}/selector-matches`]: [200, matches],
        });
        writeSignedIn(configHome, api.url);
        const rt = testRuntime({ env: { XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG } });
        const code = await runCli(
          ['trigger', 'create', '--name', 'builds', '--selector', 'role=build', '--workflow', 'compile', ...args],
          rt,
        );
        await api.close();
        return { code, stdout: rt.stdout(), stderr: rt.stderr() };
      };
      expect(await created(trigger('one', null), ['--fanout', 'one'])).toEqual({
        code: 0,
        stdout: 'c1a2b3d4-0000-4000-8000-000000000001\n',
        stderr:
          'Created the async trigger builds on the agents role=build selects (a pool: one job per run, on one of ' +
          'them with room; 2 agents now); run it with: drover run c1a2b3d4-0000-4000-8000-000000000001\n',
      });
      expect((await created(trigger('all', 2), ['--max-parallel', '2'])).stderr).toContain(
        ' on the agents role=build selects (a batch: one job each, 2 at a time; 2 agents now);',
      );
    } finally {
      api = undefined;
      fs.rmSync(configHome, { recursive: true, force: true });
    }
  });
});

describe('drover batch', () => {
  let api: FakeCoordinator | undefined;
  let configHome: string | undefined;
  afterEach(async () => {
    await api?.close();
    if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
  });

  const session = async (routes: Parameters<typeof fakeCoordinator>[0]) => {
    api = await fakeCoordinator(routes);
    configHome = signedInHome(api.url);
    return async (args: string[]) => {
      const rt = testRuntime({ env: { XDG_CONFIG_HOME: configHome!, DROVER_ORG: ORG } });
      const code = await runCli(args, rt);
      return { code, stdout: rt.stdout(), stderr: rt.stderr() };
    };
  };

  it('lists a page of batches and says how to read the next one', async () => {
    const { jobs: _, ...batch } = detail('partial', []);
    const cli = await session({
      [`GET /v1/orgs/${ORG}/batches`]: [200, [{ ...batch, jobCount: 3 }], { 'x-next-cursor': '7' }],
    });
    const res = await cli(['batch', 'list', '--limit', '1']);
    expect(res.code).toBe(0);
    expect(res.stdout.split('\n')[0]).toMatch(/^ID +NUMBER +STATUS +WORKFLOW +SELECTOR +JOBS +CREATED +TOOK$/);
    expect(res.stderr).toBe('More batches follow: drover batch list --limit 1 --cursor 7\n');
    expect(api!.calls).toEqual([`GET /v1/orgs/${ORG}/batches?limit=1`]);
    await cli(['batch', 'list', '--cursor', '7']);
    expect(api!.calls[1]).toBe(`GET /v1/orgs/${ORG}/batches?limit=20&cursor=7`);
  });

  it("lists one trigger's batches with --trigger, kept in the next page's command; a malformed id is refused first", async () => {
    const { jobs: _, ...batch } = detail('partial', []);
    const cli = await session({
      [`GET /v1/orgs/${ORG}/batches`]: [200, [batch], { 'x-next-cursor': '7' }],
    });
    const res = await cli(['batch', 'list', '--trigger', batch.triggerId, '--limit', '1']);
    expect(res.code).toBe(0);
    expect(res.stderr).toBe(
      `More batches follow: drover batch list --trigger ${batch.triggerId} --limit 1 --cursor 7\n`,
    );
    expect(api!.calls).toEqual([`GET /v1/orgs/${ORG}/batches?triggerId=${batch.triggerId}&limit=1`]);
    expect(await cli(['batch', 'list', '--trigger', 'nightly'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: --trigger: expected a trigger id (a UUID), got `nightly`\n',
    });
    expect(api!.calls).toHaveLength(1);
  });

  it('lists the jobs of a batch with drover jobs --batch, with the other filters; a malformed id is refused first', async () => {
    const cli = await session({ [`GET /v1/orgs/${ORG}/jobs`]: [200, []] });
    expect(await cli(['jobs', '--batch', BATCH, '--status', 'failed'])).toEqual({
      code: 0,
      stdout: 'No jobs.\n',
      stderr: '',
    });
    expect(api!.calls).toEqual([`GET /v1/orgs/${ORG}/jobs?status=failed&batchId=${BATCH}&limit=20`]);
    expect(await cli(['jobs', '--batch', '#12'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: --batch: expected a batch id (a UUID), got `#12`\n',
    });
    expect(api!.calls).toHaveLength(1);
  });

  it('cancels nothing in a batch that ended, and says so', async () => {
    const cli = await session({
      [`GET /v1/batches/${BATCH}`]: [200, detail('partial', [job(1, A, 'gw-a', 'success'), rejected])],
    });
    const res = await cli(['batch', 'cancel', BATCH]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^Batch ${BATCH} had ended: nothing to cancel\nBatch ${BATCH}: partial `));
    expect(api!.calls).toEqual([`GET /v1/batches/${BATCH}`]);
  });
});
