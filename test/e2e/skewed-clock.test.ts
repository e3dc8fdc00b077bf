import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FAKETIME_LIBRARY, runAgentCli, skewedClockEnv } from '../helpers/agent-cli.js';
import {
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * Agents whose clock is wrong (docs/agent.md, "Clocks"): the real CLI and daemon run under
 * libfaketime with their wall clock a day behind, a day ahead, or six minutes off. They learn
 * the coordinator's time from its answers, sign with it, enroll, connect and run jobs, report
 * their job's times in the coordinator's clock, and say how far off the machine is.
 */

// CI installs libfaketime (scripts/setup.sh); elsewhere the test is skipped when it is missing.
if (!FAKETIME_LIBRARY && process.env.CI) throw new Error('libfaketime is missing: run scripts/setup.sh');

const daemons: DaemonProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const daemon of daemons.splice(0)) await stopDaemonProcess(daemon);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(!FAKETIME_LIBRARY)('an agent whose clock is off', { timeout: 120_000 }, () => {
  let t: TestCoordinator;
  const coordinator = async () => {
    t ??= await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
    return t;
  };
  afterAll(() => t?.close());

  for (const [offset, words, warned] of [
    ['-1d', /24\.0 h behind/, true],
    ['+1d', /24\.0 h ahead of/, true],
    ['-6m', /6 min behind/, true],
  ] as const) {
    it(`enrolls, connects and runs a job with its clock at ${offset}`, async () => {
      const t = await coordinator();
      const env = skewedClockEnv(offset);
      const root = makeTempDir('drover-skew-');
      cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
      const stateDir = path.join(root, 'state');
      const token = (await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} })).body.token as string;

      const enrolled = await runAgentCli(['enroll', '--url', t.url, '--token', token, '--state-dir', stateDir], env);
      expect(enrolled.code, enrolled.stderr).toBe(0);
      expect(enrolled.stdout).toContain('signed self-check passed');
      if (warned) expect(enrolled.stdout).toMatch(words);
      const agentId = JSON.parse(fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8')).agentId as string;

      const runs = path.join(root, 'runs');
      writeWorkflowFile(
        stateDir,
        'tick',
        `name: tick\nsteps:\n  - run: echo tock >> ${runs}; echo tock\n    shell: true\n`,
      );
      const daemon = startDaemonProcess(stateDir, [], env);
      daemons.push(daemon);
      await eventually(() => daemon.status()?.connection === 'connected', 30_000, 'the daemon to connect');
      await eventually(
        async () => (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.some((w: any) => w.agentId === agentId),
        15_000,
        'the workflow report',
      );
      const trigger = await runnableTrigger(t, agentId, 'tick', { responseMode: 'sync' });
      const started = Date.now();
      const run = await t.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
      expect(run.status, run.text).toBe(200);
      expect(run.body.status).toBe('success');

      // The job's times are in the coordinator's clock, not the machine's.
      const job = await eventually(async () => {
        const j = (await t.owner.get(`/jobs/${run.body.jobId}`)).body;
        return j.logs?.length > 0 ? j : undefined;
      });
      expect(Math.abs(Date.parse(job.finishedAt) - started)).toBeLessThan(30_000);
      expect(Math.abs(Date.parse(job.logs[0].at) - started)).toBeLessThan(30_000);

      // It says so: in status.json, in `drover-agent status` and in its log.
      expect(Math.abs(daemon.status()!.clockOffsetMs!)).toBeGreaterThan(5 * 60_000 - 5_000);
      const status = await runAgentCli(['status', '--state-dir', stateDir], env);
      expect(status.stdout).toMatch(new RegExp(`Clock: +${words.source}`));
      await daemon.waitForLog((r) => r.level === 40 && /the coordinator's: signing with/.test(r.msg));
      await stopDaemonProcess(daemon);
    });
  }
});
