import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob } from '../helpers/jobs.js';
import { storageClient } from '../helpers/storage.js';

/**
 * Secret values never leave the machine (docs/agent.md, "How a job runs"): a real `drover-agent run`
 * whose secret is planted in a workflow file, in a step's long output line, in output keys and in
 * an output file's name. Nothing the coordinator stores, and nothing in the agent's own log,
 * holds the value or a piece of it.
 */

/** Usable in a workflow name, an environment variable name, an output key and a file name. */
const SECRET = 'Xq7_s3cr3t_Zk9_w0rd';
/** The pieces a cut through the secret would leave (4 characters or more). */
const FRAGMENTS = Array.from({ length: SECRET.length - 3 }, (_, i) => [
  SECRET.slice(0, i + 4),
  SECRET.slice(-(i + 4)),
]).flat();
const LONG_LINE = `process.stdout.write('a'.repeat(65530) + process.env.TOKEN + 'b'.repeat(20000) + '\\n')`;

let t: TestCoordinator;
let a: AgentStateDir;
let daemon: DaemonProcess | undefined;

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  a = await enrollAgentStateDir(t);
  fs.writeFileSync(path.join(a.stateDir, 'secrets.yaml'), `TOKEN: "${SECRET}"\n`, { mode: 0o600 });
  writeWorkflowFile(
    a.stateDir,
    'planted',
    [
      'name: planted',
      `description: "pasted ${SECRET} by mistake"`,
      `version: "1-${SECRET}"`,
      'params:',
      `  - {name: env, type: string, description: "not ${SECRET}"}`,
      'secrets: [TOKEN]',
      'steps:',
      `  - name: "long line with ${SECRET}"`,
      `    run: ${JSON.stringify(process.execPath)}`,
      `    args: ["-e", ${JSON.stringify(LONG_LINE)}]`,
      `    env: {V_${SECRET}: "${SECRET}"}`,
      '  - name: outputs',
      '    run: |',
      '      echo "key_$TOKEN=x" >> "$DROVER_OUTPUT"',
      '      printf data > "out_$TOKEN.txt"',
      '      echo "report=file:out_$TOKEN.txt" >> "$DROVER_OUTPUT"',
      '    shell: true',
      '',
    ].join('\n'),
  );
  writeWorkflowFile(a.stateDir, `ship-${SECRET}`, `name: ship-${SECRET}\nsteps: [{run: "true"}]\n`);
  // Invalid: its problem repeats the value it found (`got \`...\``).
  writeWorkflowFile(a.stateDir, 'broken', `name: broken\ntimeout: "${SECRET}"\nsteps: [{run: "true"}]\n`);
  daemon = startDaemonProcess(a.stateDir);
  await eventually(
    async () => {
      const res = await t.owner.get(`/orgs/${t.orgId}/workflows`);
      return res.body.some((w: { agentId: string; name: string }) => w.agentId === a.agentId && w.name === 'planted');
    },
    30_000,
    'the agent to connect and report its workflows',
  );
});
afterAll(async () => {
  await stopDaemonProcess(daemon);
  await t?.close();
  if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
});

const agentLog = () => fs.readFileSync(path.join(a.stateDir, 'logs', 'agent.log'), 'utf8');

describe('an agent with a secret', () => {
  it('keeps it out of status.json, which `drover-agent status` prints, as out of its log', async () => {
    const statusFile = path.join(a.stateDir, 'status.json');
    const status = await eventually(
      () => {
        const text = fs.readFileSync(statusFile, 'utf8');
        return text.includes('broken.yaml') ? text : null;
      },
      10_000,
      'the broken workflow file in status.json',
    );
    expect(status).not.toContain(SECRET);
    expect(JSON.parse(status).workflows.invalid).toEqual([
      {
        file: 'broken.yaml',
        message: 'line 2: timeout: expected a duration like 30s, 5m or a number of seconds, got `***`',
      },
    ]);
    expect(agentLog()).not.toContain(SECRET);
  });

  it('reports its workflow definitions with the value masked in every text, and leaves out one named after it', async () => {
    const listed = await t.owner.get(`/orgs/${t.orgId}/workflows`);
    expect(listed.body.map((w: { name: string }) => w.name)).toEqual(['planted']);
    expect(listed.text).not.toContain(SECRET);
    expect(listed.body[0]).toMatchObject({
      description: 'pasted *** by mistake',
      version: '1-***',
      paramsSchema: [{ name: 'env', description: 'not ***' }],
    });
    // The steps are kept for the agent's jobs and are not in the API: read from the database.
    const stored = await t.coordinator.ctx.repos.workflows.findActiveByAgentAndName(a.agentId, 'planted');
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(stored!.steps[0]).toMatchObject({ name: 'long line with ***', env: { 'V_***': '***' } });
    const refusal = await daemon!.waitForLog((r) => /is not reported to the coordinator/.test(r.msg));
    expect(refusal.msg).toBe(
      'the workflow of ship-***.yaml is not reported to the coordinator: name contains the value of a secret ' +
        'from secrets.yaml, which never leaves this machine',
    );
  });

  it('runs a job whose lines, output keys and output file names hold it: none reaches the coordinator or the log', async () => {
    const created = await createTestJob(t, a.agent, { workflowName: 'planted', params: { env: 'x' } });
    const done = await eventually(
      async () => {
        const res = await t.owner.get(`/jobs/${created.id}`);
        return ['success', 'failed'].includes(res.body.status) ? res.body : undefined;
      },
      30_000,
      'the job to end',
    );
    expect(done).toMatchObject({
      status: 'success',
      output: { 'key_***': 'x', report: { __type: 'FileRef', id: expect.any(String) } },
    });
    // The 85 KiB line was cut at 64 KiB, then at 16 KiB for the coordinator: never through the secret.
    const long = done.logs.filter(
      (l: { step: number | null; stream: string }) => l.step === 1 && l.stream === 'stdout',
    );
    expect(long.length).toBeGreaterThan(2);
    expect(long.map((l: { text: string }) => l.text).join('')).toBe(`${'a'.repeat(65530)}***${'b'.repeat(20000)}`);
    const sent = JSON.stringify(done);
    expect(FRAGMENTS.filter((f) => sent.includes(f))).toEqual([]);
    const reader = await storageClient(t, null, ['read']);
    const file = await reader.get(`/storage/files/${done.output.report.id}`);
    expect(file.body.filename).toBe('out_***.txt');

    await daemon!.waitForLog((r) => r.jobId === created.id && /^job finished/.test(r.msg));
    const log = agentLog();
    expect(log).toContain('"step":1');
    expect(FRAGMENTS.filter((f) => log.includes(f))).toEqual([]);
  });
});
