import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyFingerprint, privateKeyFromBase64, publicKeyOf } from '@drover/shared';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { insertEnrollmentToken } from '../helpers/agent.js';
import { runAgentCli } from '../helpers/agent-cli.js';

const mode = (file: string) => fs.statSync(file).mode & 0o777;

// Each test runs the CLI up to three times, each bounded at 30 s by execFile: a CLI that hangs is
// killed and its output shows in the failed assertion, instead of the whole test timing out blind.
describe('drover-agent enroll (the real CLI against a real coordinator)', { timeout: 100_000 }, () => {
  let t: TestCoordinator;
  let scratch: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    scratch = makeTempDir('drover-agent-cli-');
  });
  afterAll(async () => {
    await t?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('enrolls, keeps the key and enrollment private, and the agent is listed', async () => {
    const stateDir = path.join(scratch, 'ok', 'state');
    const token = await insertEnrollmentToken(t);
    const run = await runAgentCli([
      'enroll',
      '--url',
      `${t.baseUrl}/`,
      '--token',
      token,
      '--name',
      'cli-box',
      '--state-dir',
      stateDir,
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Enrolled as agent [0-9a-f-]{36} \("cli-box"\)/);
    expect(run.stdout).not.toContain(token);

    expect(mode(stateDir)).toBe(0o700);
    const enrollment = JSON.parse(fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8'));
    expect(mode(path.join(stateDir, 'agent.json'))).toBe(0o600);
    expect(mode(path.join(stateDir, 'agent-ed25519.key'))).toBe(0o600);
    expect(Object.keys(enrollment).sort()).toEqual(['agentId', 'enrolledAt', 'orgId', 'serverPublicKey', 'url']);
    expect(enrollment).toMatchObject({
      url: t.url,
      orgId: t.orgId,
      serverPublicKey: t.coordinator.ctx.serverKey.publicKey,
    });
    expect(fs.readdirSync(stateDir).sort()).toEqual(['agent-ed25519.key', 'agent.json']); // no temp files left

    // The stored key is the one the coordinator knows (agents' keys are not in the API).
    const seed = fs.readFileSync(path.join(stateDir, 'agent-ed25519.key'), 'utf8').trim();
    const agent = await t.coordinator.ctx.repos.agents.findById(enrollment.agentId);
    expect(agent?.publicKey).toBe(publicKeyOf(privateKeyFromBase64(seed)));
    const listed = await t.owner.get(`/orgs/${t.orgId}/agents`);
    expect(listed.body.map((a: { id: string; name: string }) => [a.id, a.name])).toContainEqual([
      enrollment.agentId,
      'cli-box',
    ]);

    const status = await runAgentCli(['status', '--state-dir', stateDir]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(enrollment.agentId);
    expect(status.stdout).toContain(t.orgId);
    expect(status.stdout).toContain(t.url);
    expect(status.stdout).toContain(keyFingerprint(t.coordinator.ctx.serverKey.publicKey));
    expect(status.stdout).toMatch(/not running/);
  });

  it('refuses to enroll over an existing enrollment unless --force is given', async () => {
    const stateDir = path.join(scratch, 'again');
    const first = await runAgentCli([
      'enroll',
      '--url',
      t.url,
      '--token',
      await insertEnrollmentToken(t),
      '--state-dir',
      stateDir,
    ]);
    expect(first, first.stderr).toMatchObject({ code: 0 });
    const before = fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8');
    const keyBefore = fs.readFileSync(path.join(stateDir, 'agent-ed25519.key'), 'utf8');

    const unused = await insertEnrollmentToken(t);
    const again = await runAgentCli(['enroll', '--url', t.url, '--token', unused, '--state-dir', stateDir]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/already enrolled as agent .* --force/);
    expect(fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8')).toBe(before);
    expect(fs.readFileSync(path.join(stateDir, 'agent-ed25519.key'), 'utf8')).toBe(keyBefore);

    // Not under a running agent: it would go on as the old one (this test process stands in for it).
    fs.writeFileSync(path.join(stateDir, 'daemon.lock'), `${process.pid}\n`);
    const underDaemon = await runAgentCli([
      'enroll',
      '--url',
      t.url,
      '--token',
      unused,
      '--state-dir',
      stateDir,
      '--force',
    ]);
    expect(underDaemon.code).not.toBe(0);
    expect(underDaemon.stderr).toMatch(new RegExp(`Another drover-agent \\(pid ${process.pid}\\) is already running`));
    expect(fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8')).toBe(before);
    fs.rmSync(path.join(stateDir, 'daemon.lock'));

    const forced = await runAgentCli(['enroll', '--url', t.url, '--token', unused, '--state-dir', stateDir, '--force']);
    expect(forced, forced.stderr).toMatchObject({ code: 0 });
    expect(forced.stdout).toMatch(/previous enrollment .* was replaced/);
    expect(JSON.parse(fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8')).agentId).not.toBe(
      JSON.parse(before).agentId,
    );
    expect(fs.readFileSync(path.join(stateDir, 'agent-ed25519.key'), 'utf8')).not.toBe(keyBefore);
  });

  it('fails with a clear message and no enrollment for a refused token', async () => {
    const stateDir = path.join(scratch, 'bad-token');
    const used = await insertEnrollmentToken(t);
    expect(
      (await runAgentCli(['enroll', '--url', t.url, '--token', used, '--state-dir', path.join(scratch, 'spend')])).code,
    ).toBe(0);
    for (const [token, message] of [
      [
        'drve_unknownunknownunknownunknownunknownunknown',
        /refused the enrollment token: The enrollment token is not valid/,
      ],
      [used, /refused the enrollment token: The enrollment token has already been used/],
      ['drv_thisisanapitoken', /An enrollment token starts with `drve_`/],
    ] as const) {
      const run = await runAgentCli(['enroll', '--url', t.url, '--token', token, '--state-dir', stateDir]);
      expect(run.code, token).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/at .*\.ts:\d+/); // a message, not a stack trace
      expect(fs.existsSync(path.join(stateDir, 'agent.json'))).toBe(false);
      // The state directory the command made is not left behind, empty.
      expect(fs.existsSync(stateDir), token).toBe(false);
    }
    const status = await runAgentCli(['status', '--state-dir', stateDir]);
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/Enrolled: +no/);
  });

  it('fails with a clear message for an unreachable coordinator or a bad URL', async () => {
    const stateDir = path.join(scratch, 'unreachable');
    const token = await insertEnrollmentToken(t);
    // A port that was just free: bind, read the number, close.
    const deadUrl = await new Promise<string>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(`http://127.0.0.1:${port}`));
      });
    });
    const unreachable = await runAgentCli(['enroll', '--url', deadUrl, '--token', token, '--state-dir', stateDir]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/Cannot reach the coordinator at .*connection refused/);

    for (const [url, message] of [
      ['not a url', /is not a URL/],
      ['ftp://example.com', /must start with http:\/\/ or https:\/\//],
      [`${t.url}/api`, /server root or its \/v1 base URL/],
      [`${t.url}/v1?x=1`, /must not have a query/],
    ] as const) {
      const run = await runAgentCli(['enroll', '--url', url, '--token', token, '--state-dir', stateDir]);
      expect(run.code, url).toBe(1);
      expect(run.stderr).toMatch(message);
    }
    // The token was never spent: it still enrolls.
    expect(
      (await runAgentCli(['enroll', '--url', `${t.url}/v1`, '--token', token, '--state-dir', stateDir])).code,
    ).toBe(0);
  });

  it('reports a usage error for missing options', async () => {
    const run = await runAgentCli(['enroll', '--url', t.url]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/required option '--token <token>'/);
  });
});
