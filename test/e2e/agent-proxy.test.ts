import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { runAgentCli } from '../helpers/agent-cli.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { startForwardProxy, type ForwardProxy } from '../helpers/forward-proxy.js';
import { eventually } from '../helpers/poll.js';
import { defaultBindingId, sha256, uploadFile } from '../helpers/storage.js';
import { hasOpenssl, startTlsProxy, type TlsProxy } from '../helpers/tls-proxy.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * The real `drover-agent` behind a site's HTTP forward proxy (docs/agent.md, "Proxies and private
 * CAs"): enrollment, the stream, signed calls and file downloads all go through it (CONNECT for
 * an https:// coordinator, absolute-URI requests for an http:// one), with Basic proxy auth from
 * the proxy URL; NO_PROXY sends a host around it; `--ca-file` trusts a coordinator's private CA.
 */

/** A coordinator host name only the proxy resolves: the agent cannot reach it but through the proxy. */
const HIDDEN_HOST = 'drover-coordinator.invalid';
const USER = 'drover';
const PASSWORD = 'pr0xy-s3cret';

let t: TestCoordinator;
let proxy: ForwardProxy;
let tlsFront: TlsProxy | undefined;
const dirs: string[] = [];
const daemons: DaemonProcess[] = [];

/** The environment of an agent behind the proxy: only the variables given, none of the test runner's. */
const proxyEnv = (vars: Record<string, string>): Record<string, string> => ({
  HTTPS_PROXY: '',
  https_proxy: '',
  HTTP_PROXY: '',
  http_proxy: '',
  NO_PROXY: '',
  no_proxy: '',
  ...vars,
});

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  proxy = await startForwardProxy({
    auth: { user: USER, password: PASSWORD },
    hosts: { [HIDDEN_HOST]: '127.0.0.1' },
  });
  if (hasOpenssl()) tlsFront = await startTlsProxy(t.url);
});
afterAll(async () => {
  await tlsFront?.close();
  await proxy?.close();
  await t?.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await stopDaemonProcess(daemon);
});

function start(stateDir: string, env: Record<string, string>, args: string[] = []): DaemonProcess {
  const daemon = startDaemonProcess(stateDir, args, env);
  daemons.push(daemon);
  return daemon;
}

async function enrollmentToken(): Promise<string> {
  const created = await t.owner.post<{ token: string }>(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} });
  expect(created.status, created.text).toBe(201);
  return created.body.token;
}

/** `drover-agent enroll` (the CLI) into a fresh state directory; its agent id. */
async function enrollWithCli(url: string, env: Record<string, string>, extra: string[] = []) {
  const root = makeTempDir('drover-agent-proxy-');
  dirs.push(root);
  const stateDir = path.join(root, 'state');
  const token = await enrollmentToken();
  const run = await runAgentCli(['enroll', '--url', url, '--token', token, '--state-dir', stateDir, ...extra], env);
  return { run, stateDir, agentId: /Enrolled as agent (\S+)/.exec(run.stdout)?.[1] };
}

const since = (mark: number) => proxy.forwarded.slice(mark).map((r) => `${r.method} ${r.target}`);

describe('an agent behind an HTTP forward proxy', () => {
  it('enrolls, holds its stream, runs a job and downloads its input file, all through the proxy', async () => {
    const coordinator = `http://${HIDDEN_HOST}:${new URL(t.url).port}`;
    const env = proxyEnv({ http_proxy: proxy.urlWith(USER, PASSWORD) });
    const mark = proxy.forwarded.length;
    const { run, stateDir, agentId } = await enrollWithCli(coordinator, env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `Proxy:        http://${USER}:***@127.0.0.1:${new URL(proxy.url).port} (from http_proxy)`,
    );
    expect(run.stdout).not.toContain(PASSWORD);
    expect(since(mark)).toEqual([`POST ${coordinator}/v1/agent/enroll`, `GET ${coordinator}/v1/agent/me`]);

    writeWorkflowFile(
      stateDir,
      'checksum',
      [
        'name: checksum',
        'params:',
        '  - {name: bundle, type: file, required: true}',
        'steps:',
        '  - run: echo "sum=$(sha256sum "$DROVER_PARAM_BUNDLE" | cut -d" " -f1)" >> "$DROVER_OUTPUT"',
        '    shell: true',
        '',
      ].join('\n'),
    );
    const daemon = start(stateDir, env);
    const shownProxy = `http://${USER}:***@127.0.0.1:${new URL(proxy.url).port} (from http_proxy)`;
    await daemon.waitForLog((r) => r.msg === `reaching the coordinator through the proxy ${shownProxy}`);
    await eventually(() => daemon.status()?.connection === 'connected', 20_000, 'the daemon to connect');
    expect(daemon.status()?.proxy).toBe(shownProxy);
    const status = await runAgentCli(['status', '--state-dir', stateDir], env);
    expect(status.stdout).toContain(`Proxy:         ${shownProxy}\n`);

    // A job with an input file, run through a trigger: the agent fetches its file's URL and
    // downloads it through the proxy.
    const bindingId = await defaultBindingId(t);
    const trigger = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'checksum-behind-proxy',
        agentId,
        scopeType: 'workflow',
        workflowName: 'checksum',
        responseMode: 'sync',
        responseTimeoutMs: 30_000,
      },
    });
    expect(trigger.status, trigger.text).toBe(201);
    const { token } = await issueApiToken(t.owner, t.orgId, [
      { type: 'trigger', triggerIds: [trigger.body.id] },
      { type: 'storage', bindingIds: [bindingId], permissions: ['read', 'write'] },
    ]);
    const data = `behind the proxy ${Date.now()}`;
    const { fileId } = await uploadFile(t.api.withToken(token), data, { cleanupRule: 'ttl', ttlSeconds: 3600 });
    await eventually(
      async () =>
        (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.some((w: { agentId: string }) => w.agentId === agentId),
      20_000,
      'the workflows to be reported',
    );
    const res = await t.api.post(`/triggers/${trigger.body.id}/run`, {
      token,
      body: { params: { bundle: { __type: 'FileRef', id: fileId } } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', output: { sum: sha256(data) } });

    const seen = since(mark);
    expect(seen).toContain(`GET ${coordinator}/v1/agent/stream?capacity=4`);
    expect(seen.some((r) => r.startsWith(`POST ${coordinator}/v1/agent/jobs/${res.body.jobId}/`))).toBe(true);
    // The presigned download URL names the coordinator's public URL (127.0.0.1): proxied too.
    expect(seen.some((r) => r.startsWith(`GET ${t.url}/`) && r.includes(fileId))).toBe(true);
    expect(proxy.refused).toBe(0);
  });

  it('says plainly that the proxy refused its credentials, at enroll and in each attempt of the stream', async () => {
    const wrong = proxyEnv({ HTTP_PROXY: proxy.urlWith(USER, 'wrong-password') });
    const shown = `http://${USER}:***@127.0.0.1:${new URL(proxy.url).port}`;
    const refusal = `the proxy ${shown} refused the credentials (HTTP 407; check the user and password in HTTP_PROXY)`;
    const { run } = await enrollWithCli(t.url, wrong);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`drover-agent: error: Cannot reach the coordinator at ${t.url}: ${refusal}\n`);

    const a = await enrollAgentStateDir(t);
    dirs.push(path.dirname(a.stateDir));
    const daemon = start(a.stateDir, wrong);
    const line = await daemon.waitForLog((r) => /^cannot open the stream: /.test(r.msg));
    expect(line.msg).toMatch(
      new RegExp(
        `^cannot open the stream: cannot reach ${escape(t.url)}: ${escape(refusal)}; reconnecting in \\d+m?s$`,
      ),
    );
    expect(JSON.stringify(daemon.logRecords())).not.toContain('wrong-password');
  });

  it('goes around the proxy for a host NO_PROXY names (loopback is proxied otherwise)', async () => {
    const a = await enrollAgentStateDir(t);
    dirs.push(path.dirname(a.stateDir));
    const mark = proxy.forwarded.length;
    // A proxy that is not there: the agent connects only because it does not use it.
    const daemon = start(a.stateDir, proxyEnv({ HTTP_PROXY: 'http://127.0.0.1:9', NO_PROXY: 'localhost,127.0.0.1' }));
    await daemon.waitForLog(
      (r) => r.msg === 'reaching the coordinator directly: no proxy (NO_PROXY matches `127.0.0.1`)',
    );
    await eventually(() => daemon.status()?.connection === 'connected', 20_000, 'the daemon to connect');
    expect(since(mark)).toEqual([]);
  });

  it('refuses a --ca-file it cannot use before anything else', async () => {
    const a = await enrollAgentStateDir(t);
    dirs.push(path.dirname(a.stateDir));
    const notPem = path.join(path.dirname(a.stateDir), 'ca.pem');
    fs.writeFileSync(notPem, 'not a certificate\n');
    const run = await runAgentCli(['run', '--state-dir', a.stateDir, '--ca-file', notPem], proxyEnv({}));
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `drover-agent: error: --ca-file: ${notPem} holds no PEM certificate (expected -----BEGIN CERTIFICATE----- blocks)\n`,
    );
  });
});

describe.skipIf(!hasOpenssl())('an HTTPS coordinator with its own CA behind the proxy', () => {
  it('is enrolled with and run against with --ca-file, through a CONNECT tunnel', async () => {
    const front = tlsFront!;
    const env = proxyEnv({ HTTPS_PROXY: proxy.urlWith(USER, PASSWORD) });
    const mark = proxy.forwarded.length;
    const { run, stateDir, agentId } = await enrollWithCli(front.url, env, ['--ca-file', front.caFile]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    writeWorkflowFile(
      stateDir,
      'hello',
      ['name: hello', 'steps:', '  - run: echo', '    args: ["hello through the tunnel"]', ''].join('\n'),
    );
    const daemon = start(stateDir, env, ['--ca-file', front.caFile]);
    await daemon.waitForLog(
      (r) => r.msg === `trusting the certificates of ${front.caFile} in addition to the default ones`,
    );
    await eventually(() => daemon.status()?.connection === 'connected', 20_000, 'the daemon to connect');
    const tunnel = `CONNECT ${new URL(front.url).host}`;
    expect(since(mark).length).toBeGreaterThanOrEqual(2);
    expect(since(mark).every((r) => r === tunnel)).toBe(true);

    // Signed calls through the tunnel too: the workflows report.
    await eventually(
      async () =>
        (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.some((w: { agentId: string }) => w.agentId === agentId),
      20_000,
      'the workflows to be reported',
    );
  });

  it('without --ca-file, the coordinator certificate is refused through the tunnel', async () => {
    const front = tlsFront!;
    const env = proxyEnv({ HTTPS_PROXY: proxy.urlWith(USER, PASSWORD) });
    const { run } = await enrollWithCli(front.url, env);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `drover-agent: error: Cannot reach the coordinator at ${front.url}: the server certificate could not be verified; ` +
        'trust its CA with --ca-file or NODE_EXTRA_CA_CERTS ' +
        `(through the proxy http://${USER}:***@127.0.0.1:${new URL(proxy.url).port}, from HTTPS_PROXY)\n`,
    );
  });
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
