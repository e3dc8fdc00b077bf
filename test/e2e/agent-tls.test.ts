import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { hasOpenssl, startTlsProxy, type TlsProxy } from '../helpers/tls-proxy.js';

/**
 * The real `drover-agent run` against a coordinator reached over HTTPS: a TLS-terminating proxy
 * whose certificate a private CA signed, which the agent trusts through NODE_EXTRA_CA_CERTS
 * (docs/agent.md, "Single binary and systemd").
 */

let t: TestCoordinator;
let proxy: TlsProxy;
const daemons: DaemonProcess[] = [];
const stateDirs: string[] = [];
beforeAll(async () => {
  if (!hasOpenssl()) return;
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  proxy = await startTlsProxy(t.url);
});
afterAll(async () => {
  await proxy?.close();
  await t?.close();
  for (const dir of stateDirs) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await stopDaemonProcess(daemon);
});

/** A state directory enrolled with the coordinator, that reaches it through the HTTPS proxy. */
async function enrolledBehindProxy(): Promise<AgentStateDir> {
  const a = await enrollAgentStateDir(t);
  stateDirs.push(a.stateDir);
  const file = path.join(a.stateDir, 'agent.json');
  fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), url: proxy.url }), {
    mode: 0o600,
  });
  writeWorkflowFile(
    a.stateDir,
    'hello',
    ['name: hello', 'steps:', '  - run: echo', '    args: ["hello over TLS"]', ''].join('\n'),
  );
  return a;
}

function start(stateDir: string, env: Record<string, string> = {}): DaemonProcess {
  const daemon = startDaemonProcess(stateDir, [], env);
  daemons.push(daemon);
  return daemon;
}

describe.skipIf(!hasOpenssl())('an HTTPS coordinator', () => {
  it('runs jobs over TLS when the private CA is trusted (NODE_EXTRA_CA_CERTS)', async () => {
    const a = await enrolledBehindProxy();
    const daemon = start(a.stateDir, { NODE_EXTRA_CA_CERTS: proxy.caFile });
    await eventually(() => daemon.status()?.connection === 'connected', 20_000, 'the daemon to connect');
    expect(daemon.logRecords().some((r) => r.msg === `connected to the coordinator at ${proxy.url}`)).toBe(true);

    const created = await createTestJob(t, a.agent, { workflowName: 'hello', params: {} });
    const done = await eventually(
      async () => {
        const res = await t.owner.get(`/jobs/${created.id}`);
        return res.body.status === 'success' ? res.body : undefined;
      },
      20_000,
      'the job to succeed',
    );
    expect(done.logs.map((l: { text: string }) => l.text)).toContain('hello over TLS');
  });

  it('refuses a certificate it cannot verify, and says so in the line of each attempt', async () => {
    const a = await enrolledBehindProxy();
    const daemon = start(a.stateDir);
    const line = await daemon.waitForLog((r) => /^cannot open the stream: /.test(r.msg));
    expect(line.msg).toMatch(
      /^cannot open the stream: cannot reach https:\/\/127\.0\.0\.1:\d+: the server certificate could not be verified; trust its CA with --ca-file or NODE_EXTRA_CA_CERTS; reconnecting in \d+m?s$/,
    );
    expect(daemon.status()?.connection).not.toBe('connected');
  });
});
