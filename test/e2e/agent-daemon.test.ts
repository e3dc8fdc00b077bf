import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  isAlive as alive,
  sparesOf,
  startCuttableProxy,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { eventually, sleep } from '../helpers/poll.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob } from '../helpers/jobs.js';

/** The real `drover-agent run` against a real coordinator (docs/agent.md, "The agent daemon"). */

let t: TestCoordinator;
const daemons: DaemonProcess[] = [];
const stateDirs: string[] = [];
beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
});
afterAll(async () => {
  await t?.close();
  for (const dir of stateDirs) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await stopDaemonProcess(daemon);
});

async function enrolled(url?: string): Promise<AgentStateDir> {
  const a = await enrollAgentStateDir(t, url);
  stateDirs.push(a.stateDir);
  return a;
}

function start(stateDir: string, args: string[] = [], env: Record<string, string> = {}): DaemonProcess {
  const daemon = startDaemonProcess(stateDir, args, env);
  daemons.push(daemon);
  return daemon;
}

async function job(id: string): Promise<Record<string, any>> {
  const res = await t.owner.get(`/jobs/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function settled(id: string, timeoutMs = 20_000): Promise<Record<string, any>> {
  return eventually(
    async () => {
      const j = await job(id);
      return ['success', 'failed', 'timed_out', 'cancelled', 'rejected'].includes(j.status) ? j : undefined;
    },
    timeoutMs,
    `job ${id} to settle`,
  );
}

async function connected(daemon: DaemonProcess, agentId: string): Promise<void> {
  await eventually(() => daemon.status()?.connection === 'connected', 20_000, 'the daemon to connect');
  await eventually(
    async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${agentId}`)).body.status === 'connected',
    10_000,
    'the agent to be connected',
  );
}

describe('drover-agent run', () => {
  let a: AgentStateDir;
  beforeAll(async () => {
    a = await enrolled();
    writeWorkflowFile(
      a.stateDir,
      'build',
      [
        'name: build',
        'description: builds things',
        'version: "2"',
        'secrets: [API_KEY]',
        'timeout: 1m',
        'params:',
        '  - {name: env, type: string}',
        'steps:',
        '  - name: greet',
        '    run: echo "building for $DROVER_PARAM_ENV on $DROVER_REF with key $API_KEY"; echo "partial" >&2',
        '    shell: true',
        '  - name: output',
        '    run: echo "version=1.2.3" >> "$DROVER_OUTPUT"; echo "key=$API_KEY" >> "$DROVER_OUTPUT"; pwd',
        '    shell: true',
        // A secret value written into the file itself (a mistake): never sent as it is.
        '    env: {PASTED: "k-123-secret"}',
        '',
      ].join('\n'),
    );
    fs.writeFileSync(path.join(a.stateDir, 'secrets.yaml'), 'API_KEY: "k-123-secret"\n', { mode: 0o600 });
  });

  it('reports its workflows, runs a job end to end with its log lines and output, and masks secrets', async () => {
    const daemon = start(a.stateDir);
    await connected(daemon, a.agentId);
    const workflows = await t.owner.get(`/orgs/${t.orgId}/workflows`);
    expect(workflows.body.map((w: { name: string }) => w.name)).toContain('build');
    // The steps are kept for the agent's jobs and are not in the API: read from the database.
    const stored = await t.coordinator.ctx.repos.workflows.findActiveByAgentAndName(a.agentId, 'build');
    expect(stored!.steps[1]!.env).toEqual({ PASTED: '***' });

    const created = await createTestJob(t, a.agent, { workflowName: 'build', params: { env: 'prod' }, ref: 'v1' });
    const done = await settled(created.id);
    expect(done).toMatchObject({
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: { version: '1.2.3', key: '***' },
    });
    const texts = done.logs.map((l: { text: string }) => l.text);
    expect(texts).toContain('building for prod on v1 with key ***');
    expect(texts.join('\n')).not.toContain('k-123-secret');
    // Steps count from 1 alike in the API, in the lines' text and in the agent's own log.
    type Line = { text: string; step: number | null };
    expect(done.logs.find((l: Line) => l.text === 'partial')).toMatchObject({ stream: 'stderr', step: 1 });
    expect(done.logs.find((l: Line) => l.text.startsWith('step 2 (output) of 2 started'))).toMatchObject({
      stream: 'system',
      step: 2,
    });
    expect(done.logs.find((l: Line) => l.text.startsWith('job finished'))).toMatchObject({ step: null });
    const records = daemon.logRecords().filter((r) => r.jobId === created.id);
    expect(records.find((r) => r.msg === 'partial')).toMatchObject({ stream: 'stderr', step: 1 });
    expect(records.find((r) => /^step 2 \(output\) of 2 started/.test(r.msg))).toMatchObject({ step: 2 });
    expect(done.logs.map((l: { seq: number }) => l.seq)).toEqual(done.logs.map((_: unknown, i: number) => i + 1));
    expect(texts.some((text: string) => text.endsWith(`/jobs/${created.id}/workspace`))).toBe(true);
    const journalFile = path.join(a.stateDir, 'jobs', created.id, 'journal.json');
    await eventually(
      () => JSON.parse(fs.readFileSync(journalFile, 'utf8')).finalDelivered === true,
      5000,
      'the journal',
    );
    expect(JSON.parse(fs.readFileSync(journalFile, 'utf8'))).toMatchObject({ state: 'finished' });
    const agentLog = fs.readFileSync(path.join(a.stateDir, 'logs', 'agent.log'), 'utf8');
    expect(agentLog).toContain('building for prod on v1 with key ***');
    expect(agentLog).not.toContain('k-123-secret');
  });

  it('picks up workflow changes without a restart, reports them, and shows invalid files in status.json', async () => {
    const w = await enrolled();
    writeWorkflowFile(w.stateDir, 'one', 'name: one\nsteps:\n  - run: "true"\n');
    const daemon = start(w.stateDir);
    await connected(daemon, w.agentId);
    const names = async () =>
      (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body
        .filter((x: { agentId: string }) => x.agentId === w.agentId)
        .map((x: { name: string }) => x.name)
        .sort();
    expect(await names()).toEqual(['one']);
    writeWorkflowFile(w.stateDir, 'two', 'name: two\nsteps:\n  - run: "true"\n');
    writeWorkflowFile(w.stateDir, 'broken', 'name: broken\nsteps:\n  - run: "true"\n    timeout: soon\n');
    await eventually(async () => (await names()).length === 2, 10_000, 'the new workflow to be reported');
    expect(await names()).toEqual(['one', 'two']);
    const status = await eventually(
      () => {
        const s = daemon.status();
        return s?.workflows.invalid.length ? s : undefined;
      },
      5000,
      'status.json to list the invalid file',
    );
    expect(status.workflows).toEqual({
      loaded: 2,
      invalid: [
        { file: 'broken.yaml', message: expect.stringMatching(/^line 4: steps\[0\]\.timeout: expected a duration/) },
      ],
    });
  });

  it('rejects a job that finds the queue full, and runs the others one at a time', async () => {
    const b = await enrolled();
    writeWorkflowFile(b.stateDir, 'slow', 'name: slow\nsteps:\n  - run: sleep 1.5\n    shell: true\n');
    const daemon = start(b.stateDir, ['--queue-capacity', '2']);
    await connected(daemon, b.agentId);
    const first = await createTestJob(t, b.agent, { workflowName: 'slow', params: {} });
    await eventually(async () => (await job(first.id)).status === 'running', 10_000, 'the first job to run');
    const second = await createTestJob(t, b.agent, { workflowName: 'slow', params: {} });
    await eventually(async () => (await job(second.id)).status === 'queued', 10_000, 'the second job to be queued');
    const third = await createTestJob(t, b.agent, { workflowName: 'slow', params: {} });
    expect(await settled(third.id)).toMatchObject({
      status: 'rejected',
      errorMessage: "the agent's job queue is full: it already holds 2 jobs, its capacity",
    });
    await daemon.waitForLog((r) => r.jobId === third.id && r.msg === 'job queue full; rejecting');
    const [one, two] = [await settled(first.id), await settled(second.id)];
    expect([one.status, two.status]).toEqual(['success', 'success']);
    expect(Date.parse(two.startedAt)).toBeGreaterThanOrEqual(Date.parse(one.finishedAt));
  });

  it('rejects a job whose workflow it does not have', async () => {
    const c = await enrolled();
    const daemon = start(c.stateDir);
    await connected(daemon, c.agentId);
    const unknown = await createTestJob(t, c.agent, { workflowName: 'nope', params: {} });
    const done = await settled(unknown.id);
    expect(done.status).toBe('rejected');
    expect(done.errorMessage).toMatch(/^the agent does not know this workflow: no valid workflow named nope in /);
  });

  it('ends a job interrupted by a crash (kill -9) as failed after the restart, and kills what the step left running', async () => {
    const d = await enrolled();
    const marker = path.join(path.dirname(d.stateDir), 'step.pid');
    writeWorkflowFile(
      d.stateDir,
      'hang',
      `name: hang\nsteps:\n  - run: echo $$ > ${marker}; echo started; sleep 60\n    shell: true\n`,
    );
    const first = start(d.stateDir);
    await connected(first, d.agentId);
    const [spare] = sparesOf(first.child.pid!);
    expect(spare).toBeDefined(); // forked ahead for the first step
    const running = await createTestJob(t, d.agent, { workflowName: 'hang', params: {} });
    await eventually(
      async () => (await job(running.id)).logs.some((l: { text: string }) => l.text === 'started'),
      10_000,
      'the step to start',
    );
    await first.kill9();
    const stepPid = Number(fs.readFileSync(marker, 'utf8'));
    expect(stepPid).toBe(spare); // the step ran in the spare, its own process group
    expect(alive(stepPid)).toBe(true); // the step ran detached: it outlived the agent
    expect((await job(running.id)).status).toBe('running');

    const second = start(d.stateDir);
    const done = await settled(running.id);
    expect(done).toMatchObject({
      status: 'failed',
      exitCode: null,
      errorMessage: 'interrupted: the agent stopped while the job was running (crash or restart)',
    });
    try {
      await eventually(() => !alive(stepPid), 5000, 'the orphaned step to be killed');
    } finally {
      if (alive(stepPid)) process.kill(-stepPid, 'SIGKILL'); // never leave it behind
    }
    await connected(second, d.agentId);
    // The job is not run again: one "step 1 ... started" line in the log of both runs, from the first.
    const starts = second.logRecords().filter((r) => r.jobId === running.id && /^step 1 .*started/.test(r.msg));
    expect(starts.map((r) => r.pid)).toEqual([first.child.pid]);
    // A spare never outlives its agent: its pipe closes and it exits without running anything.
    await eventually(() => sparesOf(second.child.pid!).length === 1, 5000, "the second agent's spare");
    const [secondSpare] = sparesOf(second.child.pid!);
    await second.kill9();
    await eventually(() => !alive(secondSpare!), 5000, 'the spare to exit with its agent');
  });

  it('stops gracefully on SIGTERM: the running job finishes within the grace, waiting jobs are cancelled, exit 0', async () => {
    const e = await enrolled();
    writeWorkflowFile(e.stateDir, 'short', 'name: short\nsteps:\n  - run: sleep 1; echo done\n    shell: true\n');
    const daemon = start(e.stateDir, ['--shutdown-grace', '10s']);
    await connected(daemon, e.agentId);
    const running = await createTestJob(t, e.agent, { workflowName: 'short', params: {} });
    await eventually(async () => (await job(running.id)).status === 'running', 10_000, 'the job to run');
    const waiting = await createTestJob(t, e.agent, { workflowName: 'short', params: {} });
    await eventually(async () => (await job(waiting.id)).status === 'queued', 10_000, 'the second job to wait');
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(await job(running.id)).toMatchObject({ status: 'success' });
    expect(await job(waiting.id)).toMatchObject({
      status: 'cancelled',
      errorMessage: 'cancelled: the agent shut down before the job started',
    });
    expect(daemon.status()).toMatchObject({ connection: 'disconnected', queue: { running: null, waiting: [] } });
    expect(fs.readdirSync(path.join(e.stateDir, 'outbox')).filter((n) => n.endsWith('.json'))).toEqual([]);
    expect(fs.existsSync(path.join(e.stateDir, 'daemon.lock'))).toBe(false);
  });

  it('kills the running job when the grace period ends and reports it cancelled', async () => {
    const f = await enrolled();
    writeWorkflowFile(f.stateDir, 'long', 'name: long\nsteps:\n  - name: wait\n    run: sleep 60\n    shell: true\n');
    const daemon = start(f.stateDir, ['--shutdown-grace', '500ms']);
    await connected(daemon, f.agentId);
    const running = await createTestJob(t, f.agent, { workflowName: 'long', params: {} });
    await eventually(async () => (await job(running.id)).status === 'running', 10_000, 'the job to run');
    const stoppedAt = Date.now();
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - stoppedAt).toBeLessThan(8000);
    expect(await job(running.id)).toMatchObject({
      status: 'cancelled',
      exitCode: null,
      errorMessage:
        'cancelled: the agent shut down and the job did not finish within the 500ms grace period; step 1 (wait) was stopped',
    });
  });
});

describe('labels (docs/agent.md, "Labels")', () => {
  it("reports --label and DROVER_AGENT_LABELS with os and arch at each connect; operators' labels stay", async () => {
    const l = await enrolled();
    const agentPath = `/orgs/${t.orgId}/agents/${l.agentId}`;
    const reportedOnCoordinator = (site: string) =>
      eventually(
        async () => {
          const agent = (await t.owner.get(agentPath)).body;
          return agent.reportedLabels?.site === site ? agent : undefined;
        },
        20_000,
        `the labels with site=${site}`,
      );
    const first = start(l.stateDir, ['--label', 'site=berlin', '--label', 'rack=r1'], {
      DROVER_AGENT_LABELS: 'site=munich,tier=edge',
    });
    const own = { arch: process.arch, os: process.platform };
    // A flag wins over the variable for its key; the agent adds os and arch.
    expect((await reportedOnCoordinator('berlin')).reportedLabels).toEqual({
      ...own,
      rack: 'r1',
      site: 'berlin',
      tier: 'edge',
    });
    const started = await first.waitForLog((r) => /^drover-agent .* started /.test(r.msg));
    expect(started.msg).toContain(`labels: arch=${process.arch},os=${process.platform},rack=r1,site=berlin,tier=edge)`);
    await eventually(() => first.status()?.labels?.state === 'accepted', 5000, 'the labels in status.json');

    const patched = await t.owner.patch(agentPath, { body: { labels: { site: 'hq' } } });
    expect(patched.status).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });

    // Connected again with other labels: they replace the reported ones, the operator's stays and wins.
    const second = start(l.stateDir, ['--label', 'site=paris']);
    const agent = await reportedOnCoordinator('paris');
    expect(agent).toMatchObject({
      reportedLabels: { ...own, site: 'paris' },
      operatorLabels: { site: 'hq' },
      labels: { ...own, site: 'hq' },
    });
    await eventually(() => second.status()?.labels?.effective?.site === 'hq', 5000, 'the merged labels in status.json');
    expect(second.status()!.labels).toEqual({
      reported: { ...own, site: 'paris' },
      state: 'accepted',
      effective: { ...own, site: 'hq' },
      problem: null,
    });
  });

  it('stops at startup with one line naming a bad --label, before connecting', async () => {
    const b = await enrolled();
    const bad = start(b.stateDir, ['--label', 'os=plan9']);
    expect(await bad.exited).toEqual({ code: 2, signal: null });
    expect(bad.output()).toBe(
      `drover-agent: error: --label "os=plan9": the agent sets the label os itself (os=${process.platform} here); remove it\n`,
    );
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${b.agentId}`)).body).toMatchObject({
      status: 'pending',
      reportedLabels: {},
    });
  });
});

describe('when the coordinator cannot be reached', () => {
  it('reconnects claiming its unchanged reports, and reports them again when the coordinator no longer holds them', async () => {
    const proxy = await startCuttableProxy(t.url);
    try {
      const c = await enrolled(proxy.url);
      writeWorkflowFile(c.stateDir, 'claimed', 'name: claimed\nsteps:\n  - run: echo hi\n');
      const daemon = start(c.stateDir);
      await connected(daemon, c.agentId);
      const digests = () =>
        t.sql.get<{ w: string | null; l: string | null }>(
          'SELECT workflows_digest AS w, labels_digest AS l FROM agents WHERE id = ?',
          c.agentId,
        );
      const held = await digests();
      expect(held?.w).toMatch(/^[0-9a-f]{64}$/);
      expect(held?.l).toMatch(/^[0-9a-f]{64}$/);

      // The coordinator loses what the agent reported (a database restored from an older backup):
      // at its next connect the agent claims, is refused, reports both again and connects.
      await t.sql.run('UPDATE agents SET workflows_digest = NULL WHERE id = ?', c.agentId);
      await proxy.cut();
      await eventually(() => daemon.status()?.connection !== 'connected', 10_000, 'the daemon to lose its stream');
      await proxy.restore();
      await daemon.waitForLog(
        (r) => r.msg === 'the coordinator does not hold what this agent last reported: reporting again',
      );
      await connected(daemon, c.agentId);
      expect(await digests()).toEqual(held);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('keeps the results on disk in the outbox and sends them in order after reconnecting', async () => {
    const proxy = await startCuttableProxy(t.url);
    try {
      const g = await enrolled(proxy.url);
      writeWorkflowFile(
        g.stateDir,
        'offline',
        'name: offline\nsteps:\n  - run: echo before; sleep 1; echo after; echo result=ok >> "$DROVER_OUTPUT"\n    shell: true\n',
      );
      const daemon = start(g.stateDir);
      await connected(daemon, g.agentId);
      const created = await createTestJob(t, g.agent, { workflowName: 'offline', params: {} });
      await eventually(async () => (await job(created.id)).status === 'running', 10_000, 'the job to run');
      await proxy.cut();
      const outbox = path.join(g.stateDir, 'outbox');
      const files = await eventually(
        () => {
          const names = fs.readdirSync(outbox).filter((n) => n.endsWith('.json'));
          return names.some((n) => n.includes('-finish-')) ? names.sort() : undefined;
        },
        10_000,
        'the result to be kept in the outbox',
      );
      expect(files.at(-1)).toMatch(/^\d{12}-finish-/);
      expect(daemon.status()?.connection).not.toBe('connected');
      expect((await job(created.id)).status).toBe('running');

      await proxy.restore();
      const done = await settled(created.id, 40_000);
      expect(done).toMatchObject({ status: 'success', output: { result: 'ok' } });
      expect(done.logs.map((l: { text: string }) => l.text)).toEqual(expect.arrayContaining(['before', 'after']));
      await eventually(
        () => fs.readdirSync(outbox).filter((n) => n.endsWith('.json')).length === 0,
        10_000,
        'the outbox to empty',
      );
      await daemon.waitForLog((r) => /the coordinator is reachable again; sent \d+ report/.test(r.msg));
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('says in status when the stream was last open: when it dropped, not when it connected', async () => {
    const proxy = await startCuttableProxy(t.url);
    try {
      const g = await enrolled(proxy.url);
      const daemon = start(g.stateDir);
      await connected(daemon, g.agentId);
      const connectedAt = Date.parse(daemon.status()!.lastConnectedAt!);
      await sleep(1500);
      const cutAt = Date.now();
      await proxy.cut();
      await eventually(() => daemon.status()?.connection !== 'connected', 10_000, 'the agent to see the drop');
      // `drover-agent status` shows "disconnected (last connected: <lastConnectedAt>)": the time
      // of the drop, where it showed the connect, as if the agent had been away since.
      const lastConnectedAt = Date.parse(daemon.status()!.lastConnectedAt!);
      expect(lastConnectedAt).toBeGreaterThan(connectedAt);
      expect(lastConnectedAt).toBeGreaterThanOrEqual(cutAt);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
