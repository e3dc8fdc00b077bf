import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { buildDrover, drover, signInDrover, type SignedInDrover } from '../helpers/cli-binary.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { bindDevices, type AppBody, type BindingBody, type ReleaseBody } from '../helpers/ota.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * `drover app create|list|devices` with the built single executable against a real coordinator:
 * an application made from the command line, the release pipeline that needs it, and the devices
 * bound to it with what each runs, its state and its error (which devices failed, after a rollout
 * paused), for a signed-in user; and what is said when the application is missing.
 */

let t: TestCoordinator;
let owner: SignedInDrover;

beforeAll(async () => {
  t = await startTestCoordinator();
  await buildDrover();
  owner = await signInDrover(t.url, 'drover-cli-apps-', drover);
}, 300_000);

afterAll(async () => {
  await t?.close();
  owner?.remove();
});

const run = (args: string[], extra: Record<string, string> = {}) => owner.run(args, extra);
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const apps = async () => (await t.owner.get<AppBody[]>(`/orgs/${t.orgId}/apps`)).body;

describe('drover app create and drover app list', () => {
  it('says how to create the application a release needs, creates it, and then the release pipeline works', async () => {
    expect(await run(['app', 'list'])).toEqual({
      code: 0,
      stdout: 'No applications: create one with drover app create <slug> --workflow <update-workflow>\n',
      stderr: '',
    });
    fs.writeFileSync(path.join(owner.work, 'fw-1.0.bin'), 'firmware one');
    const missing = await run(['release', 'create', '1.0', '--app', 'firmware', '--artifact', 'fw-1.0.bin']);
    expect(missing).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: no application `firmware` in the organization: create it with ' +
        "`drover app create firmware --workflow <update-workflow>` or on the dashboard's Updates page " +
        "(`drover app list` lists the organization's applications)\n",
    });
    // A name that is no slug is not offered as one.
    expect((await run(['app', 'window', 'Fire Ware'])).stderr).toContain(
      '`drover app create <slug> --workflow <update-workflow>`',
    );

    const created = await run(['app', 'create', 'firmware', '--workflow', 'install-firmware']);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(new RegExp(`^${UUID}\n$`));
    const id = created.stdout.trim();
    expect(created.stderr).toBe(
      'Created the application firmware (update workflow install-firmware, channel stable). Bind devices with ' +
        '`drover app device-group firmware --selector <selector>`, then publish a release with ' +
        '`drover release create <version> --app firmware --artifact <file> --publish`\n',
    );
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${id}`)).body).toMatchObject({
      slug: 'firmware',
      updateWorkflowName: 'install-firmware',
      defaultChannel: 'stable',
      deviceSelector: null,
    });
    const audit = (await t.owner.get<{ targetId: string }[]>(`/orgs/${t.orgId}/audit?action=app.create`)).body;
    expect(audit.map((e) => e.targetId)).toContain(id);

    const published = await run([
      'release',
      'create',
      '1.0',
      '--app',
      'firmware',
      '--artifact',
      'fw-1.0.bin',
      '--publish',
    ]);
    expect(published.code).toBe(0);
    expect(published.stderr).toContain('Release 1.0 (#1, optional) on channel stable: published\n');
  });

  it('creates one with its channel and release keys, prints the API answer with --json, and lists them', async () => {
    const keygen = await run(['release', 'keygen', '--out', 'kiosk.key']);
    expect(keygen.code).toBe(0);
    const publicKey = keygen.stdout.trim();
    const created = await run([
      'app',
      'create',
      'kiosk',
      '--workflow',
      'install-kiosk',
      '--channel',
      'beta',
      '--release-key',
      publicKey,
      '--json',
    ]);
    expect(created.code).toBe(0);
    const body = JSON.parse(created.stdout) as AppBody & { releaseKeys: string[] };
    expect(body).toMatchObject({ slug: 'kiosk', defaultChannel: 'beta', releaseKeys: [publicKey] });
    expect(body).toEqual((await t.owner.get(`/orgs/${t.orgId}/apps/${body.id}`)).body);

    const table = await run(['app', 'list']);
    expect(table.code).toBe(0);
    const lines = table.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID +SLUG +WORKFLOW +CHANNEL +DEVICE GROUP +WINDOW +SIGNED +CREATED$/);
    expect(lines[1]).toMatch(new RegExp(`^${UUID} +firmware +install-firmware +stable +- +- +no +20\\d\\d-`));
    expect(lines[2]).toMatch(new RegExp(`^${body.id} +kiosk +install-kiosk +beta +- +- +yes +20\\d\\d-`));
    expect(lines).toHaveLength(4);
    expect(JSON.parse((await run(['app', 'list', '--json'])).stdout)).toEqual(await apps());
  });

  it('prints what the coordinator refuses, in its words, and creates nothing', async () => {
    const before = (await apps()).length;
    const twice = await run(['app', 'create', 'firmware', '--workflow', 'install-firmware']);
    expect(twice.code).toBe(2);
    expect(twice.stdout).toBe('');
    expect(twice.stderr).toBe('drover: An application with the slug `firmware` already exists\n');
    const bad = await run(['app', 'create', 'Fire Ware', '--workflow', 'install']);
    expect(bad).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: `Fire Ware` is not a slug: 1 to 63 lowercase letters, digits and -, starting with a letter or digit ' +
        '(firmware, kiosk-2)\n',
    });
    const noWorkflow = await run(['app', 'create', 'screens']);
    expect(noWorkflow.code).toBe(2);
    expect(noWorkflow.stderr).toMatch(/^drover: required option '--workflow <name>' not specified\n/);
    expect(await apps()).toHaveLength(before);
  });

  it('needs a session: an API token alone is refused before any call', async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, []);
    for (const args of [
      ['app', 'list'],
      ['app', 'create', 'x', '--workflow', 'w'],
      ['app', 'devices', 'firmware'],
    ]) {
      expect(await run(args, { DROVER_TOKEN: token, XDG_CONFIG_HOME: path.join(owner.work, 'no-session') })).toEqual({
        code: 2,
        stdout: '',
        stderr:
          'drover: this command needs a session: sign in with `drover login --email <email>` or `drover login --browser`\n',
      });
    }
  });
});

describe('drover app devices', () => {
  let appId: string;
  let release: ReleaseBody;
  const agents: TestAgent[] = [];
  beforeAll(async () => {
    appId = (await apps()).find((a) => a.slug === 'firmware')!.id;
    release = (await t.owner.get<ReleaseBody[]>(`/orgs/${t.orgId}/apps/${appId}/releases`)).body[0]!;
    for (const hostname of ['gw-1', 'gw-2', 'gw-3']) agents.push(await enrollTestAgent(t.owner, t.orgId, { hostname }));
  });
  const report = async (agent: TestAgent, body: Record<string, unknown>) => {
    const res = await agent.request('POST', '/v1/agent/deploy/report', { applicationId: appId, ...body });
    if (res.status !== 200) throw new Error(`report: ${res.status} ${res.text}`);
  };

  it('says so when no device is bound, and how to bind some', async () => {
    expect(await run(['app', 'devices', 'firmware'])).toEqual({
      code: 0,
      stdout:
        'firmware has no devices: bind agents with `drover app bind firmware <agent>...`, or by their labels with ' +
        '`drover app device-group firmware --selector <selector>`, or on its page in the dashboard\n',
      stderr: '',
    });
  });

  it('shows each device with the release it runs and should run, its state, update job and error', async () => {
    const bound = await bindDevices(
      t.owner,
      t.orgId,
      appId,
      agents.map((a) => a.agentId),
    );
    const [installed, failed] = agents;
    await report(installed!, {
      currentReleaseId: release.id,
      currentVersion: '1.0',
      currentSequence: 1,
      state: 'installed',
    });
    await report(failed!, { currentVersion: '0.9', state: 'failed', error: 'step 1 (install) exited with 3' });

    const table = await run(['app', 'devices', 'firmware']);
    expect(table).toMatchObject({ code: 0, stderr: '3 devices\n' });
    const lines = table.stdout.split('\n');
    expect(lines[0]).toMatch(/^AGENT +CHANNEL +ORIGIN +INSTALLED +DESIRED +STATE +REPORTED +UPDATE JOB +ERROR$/);
    expect(lines[1]).toMatch(/^gw-1 +stable +manual +1\.0 \(#1\) +1\.0 \(#1\) +installed +\d+s ago +- +-$/);
    const job = (b: BindingBody | undefined) => b!.activeJobId ?? 'no job';
    const binding = (await t.owner.get<BindingBody[]>(`/orgs/${t.orgId}/apps/${appId}/devices`)).body;
    expect(lines[2]).toMatch(
      new RegExp(
        `^gw-2 +stable +manual +0\\.9 \\(#0\\) +1\\.0 \\(#1\\) +failed +\\d+s ago +${job(binding[1])} in progress +step 1 \\(install\\) exited with 3$`,
      ),
    );
    expect(lines[3]).toMatch(
      new RegExp(
        `^gw-3 +stable +manual +unknown +1\\.0 \\(#1\\) +no report yet +never +${job(binding[2])} in progress +-$`,
      ),
    );
    expect(lines).toHaveLength(5);
    expect(bound.map((b) => b.agentId)).toEqual(binding.map((b) => b.agentId));

    // After a rollout paused: which devices failed, and why.
    const failures = await run(['app', 'devices', 'firmware', '--state', 'failed']);
    expect(failures.stdout.split('\n')).toHaveLength(3);
    expect(failures.stderr).toBe('1 device\n');
    expect(failures.stdout).toContain('gw-2 ');
    expect(failures.stdout).toContain('step 1 (install) exited with 3');
    expect((await run(['app', 'devices', appId, '--state', 'none'])).stdout).toMatch(/\ngw-3 [^\n]*\n$/);
    expect(await run(['app', 'devices', 'firmware', '--state', 'refused'])).toEqual({
      code: 0,
      stdout: 'No device of firmware is in the state refused.\n',
      stderr: '',
    });

    const json = JSON.parse((await run(['app', 'devices', 'firmware', '--json'])).stdout) as BindingBody[];
    const settled = (list: BindingBody[]) => list.map((b) => ({ ...b, lastReportAt: b.lastReportAt === null }));
    expect(settled(json)).toEqual(settled(binding));
    const failedJson = JSON.parse((await run(['app', 'devices', 'firmware', '--state', 'failed', '--json'])).stdout);
    expect(failedJson).toMatchObject([{ agentId: failed!.agentId, state: 'failed' }]);
  });

  it('reads a page at a time, says how many match and the command of the next page, and --all reads them all', async () => {
    const binding = (await t.owner.get<BindingBody[]>(`/orgs/${t.orgId}/apps/${appId}/devices`)).body;
    const rowsOf = (stdout: string) =>
      stdout
        .split('\n')
        .slice(1, -1)
        .map((line) => line.split(/ +/)[0]);

    const first = await run(['app', 'devices', 'firmware', '--limit', '2']);
    expect(first.code).toBe(0);
    expect(rowsOf(first.stdout)).toEqual(['gw-1', 'gw-2']);
    const next = /^2 of 3 devices\nMore devices follow: drover app devices firmware --limit 2 --cursor (\d+)\n$/.exec(
      first.stderr,
    );
    expect(next, first.stderr).not.toBeNull();
    const second = await run(['app', 'devices', 'firmware', '--limit', '2', '--cursor', next![1]!]);
    expect(second).toMatchObject({ code: 0, stderr: '1 of 3 devices\n' });
    expect(rowsOf(second.stdout)).toEqual(['gw-3']);

    // --json prints the page as the API answers it; the count and the next page stay on standard error.
    const page = await run(['app', 'devices', 'firmware', '--limit', '1', '--json']);
    expect((JSON.parse(page.stdout) as BindingBody[]).map((b) => b.agentId)).toEqual([binding[0]!.agentId]);
    expect(page.stderr).toMatch(
      /^1 of 3 devices\nMore devices follow: drover app devices firmware --limit 1 --cursor \d+\n$/,
    );

    const all = await run(['app', 'devices', 'firmware', '--limit', '1', '--all']);
    expect(all).toMatchObject({ code: 0, stderr: '3 devices\n' });
    expect(rowsOf(all.stdout)).toEqual(['gw-1', 'gw-2', 'gw-3']);
    const lines = await run(['app', 'devices', 'firmware', '--limit', '1', '--all', '--json']);
    expect(lines).toMatchObject({ code: 0, stderr: '' });
    const devices = lines.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as BindingBody);
    expect(devices.map((b) => b.agentId)).toEqual(binding.map((b) => b.agentId));
  });

  it('narrows the list on the coordinator by channel, state, name and agent, the filters repeated in the next page', async () => {
    const rowsOf = (stdout: string) =>
      stdout
        .split('\n')
        .slice(1, -1)
        .map((line) => line.split(/ +/)[0]);
    const byName = await run(['app', 'devices', 'firmware', '--name', 'GW-2']);
    expect(byName).toMatchObject({ code: 0, stderr: '1 device\n' });
    expect(rowsOf(byName.stdout)).toEqual(['gw-2']);
    const byAgents = await run(['app', 'devices', 'firmware', '--agent', 'gw-3', '--agent', agents[0]!.agentId]);
    expect(rowsOf(byAgents.stdout)).toEqual(['gw-1', 'gw-3']);
    const paged = await run(['app', 'devices', 'firmware', '--agent', 'gw-3', '--agent', 'gw-1', '--limit', '1']);
    expect(paged.stderr).toMatch(
      /^1 of 2 devices\nMore devices follow: drover app devices firmware --agent gw-3 --agent gw-1 --limit 1 --cursor \d+\n$/,
    );
    // `none` (no report yet) is narrowed by the coordinator too: the count is the API's.
    const none = await run(['app', 'devices', 'firmware', '--state', 'none', '--channel', 'stable']);
    expect(none).toMatchObject({ code: 0, stderr: '1 device\n' });
    expect(rowsOf(none.stdout)).toEqual(['gw-3']);
    expect(await run(['app', 'devices', 'firmware', '--channel', 'beta'])).toEqual({
      code: 0,
      stdout: 'No device of firmware matches.\n',
      stderr: '',
    });
    expect(await run(['app', 'devices', 'firmware', '--agent', 'gw-9'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: no agent `gw-9` in the organization\n',
    });
  });

  it('refuses a bad flag value before any call', async () => {
    // No coordinator listens there: a refusal is said before any call is tried.
    const offline = { DROVER_URL: 'http://127.0.0.1:9' };
    const refusals: [string[], string][] = [
      [['--limit', '0'], '--limit: expected an integer from 1 to 500, got `0`'],
      [['--limit', '501'], '--limit: expected an integer from 1 to 500, got `501`'],
      [['--limit', '-5'], '--limit: expected an integer from 1 to 500, got `-5`'],
      [['--limit', '1e2'], '--limit: expected an integer from 1 to 500, got `1e2`'],
      [['--limit', 'ten'], '--limit: expected an integer from 1 to 500, got `ten`'],
      [
        ['--state', 'faild'],
        '--state: expected one of idle, downloading, verifying, installing, installed, failed, refused, postponed, none, got `faild` (did you mean failed?)',
      ],
      [
        ['--channel', ''],
        '--channel: expected a channel name (1 to 63 lowercase letters, digits, ., _ and -, such as stable), got ``',
      ],
      [
        ['--channel', 'Beta'],
        '--channel: expected a channel name (1 to 63 lowercase letters, digits, ., _ and -, such as stable), got `Beta`',
      ],
      [['--name', ''], '--name: expected the text to look for, got nothing'],
      [['--name', 'x'.repeat(256)], '--name: at most 255 characters, got 256'],
      [['--agent', ' '], '--agent: expected an agent name or id, got nothing'],
      [['--cursor', ''], '--cursor: expected the cursor a previous page printed, got nothing'],
    ];
    for (const [flags, message] of refusals) {
      expect(await run(['app', 'devices', 'firmware', ...flags], offline)).toEqual({
        code: 2,
        stdout: '',
        stderr: `drover: ${message}\n`,
      });
    }
  });

  it('refuses an unknown state before any call, and names a missing application', async () => {
    expect(await run(['app', 'devices', 'firmware', '--state', 'broken'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: --state: expected one of idle, downloading, verifying, installing, installed, failed, refused, ' +
        'postponed, none, got `broken`\n',
    });
    expect(await run(['app', 'devices', 'nope'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^drover: no application `nope` in the organization: create it with /),
    });
  });
});

describe('drover app bind, channel, reconcile and unbind', () => {
  let appId: string;
  const kiosks: TestAgent[] = [];
  beforeAll(async () => {
    appId = (await apps()).find((a) => a.slug === 'firmware')!.id;
    for (const hostname of ['kiosk-a', 'kiosk-b', 'kiosk-c']) {
      kiosks.push(await enrollTestAgent(t.owner, t.orgId, { hostname }));
    }
  });
  const bindings = async () =>
    (await t.owner.get<BindingBody[]>(`/orgs/${t.orgId}/apps/${appId}/devices`)).body.filter((b) =>
      kiosks.some((k) => k.agentId === b.agentId),
    );
  const channelOf = async (agent: TestAgent) => (await bindings()).find((b) => b.agentId === agent.agentId)?.channel;

  it('binds agents by name or id on a channel, and shows the devices made', async () => {
    const bound = await run(['app', 'bind', 'firmware', 'kiosk-a', kiosks[1]!.agentId, '--channel', 'beta']);
    expect(bound).toMatchObject({ code: 0, stderr: 'Bound 2 devices to firmware on beta\n' });
    const lines = bound.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^AGENT +CHANNEL +ORIGIN +INSTALLED +DESIRED/);
    expect(lines.slice(1).map((line) => line.split(/ +/).slice(0, 3))).toEqual([
      ['kiosk-a', 'beta', 'manual'],
      ['kiosk-b', 'beta', 'manual'],
    ]);
    expect((await bindings()).map((b) => [b.channel, b.origin])).toEqual([
      ['beta', 'manual'],
      ['beta', 'manual'],
    ]);
    // Bound already: the coordinator's refusal, in its words; an agent named twice, before any change.
    expect(await run(['app', 'bind', 'firmware', 'kiosk-a', 'kiosk-c'])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/^drover: Already bound to this application: /),
    });
    expect(await run(['app', 'bind', 'firmware', 'kiosk-c', 'kiosk-c'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: the agent kiosk-c is given twice\n',
    });
    expect(await run(['app', 'bind', 'firmware', 'kiosk-c', kiosks[2]!.agentId])).toEqual({
      code: 2,
      stdout: '',
      stderr: `drover: kiosk-c and ${kiosks[2]!.agentId} are the same agent\n`,
    });
    expect(await bindings()).toHaveLength(2);
    const json = await run(['app', 'bind', 'firmware', 'kiosk-c', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ agentId: kiosks[2]!.agentId, channel: 'stable', origin: 'manual' }),
    ]);
  });

  it('moves devices to another channel, and retries their updates', async () => {
    const moved = await run(['app', 'channel', 'firmware', 'stable', 'kiosk-a']);
    expect(moved).toMatchObject({ code: 0, stderr: 'Moved 1 device of firmware to stable\n' });
    expect(moved.stdout.split('\n')[1]!.split(/ +/).slice(0, 2)).toEqual(['kiosk-a', 'stable']);
    expect(await channelOf(kiosks[0]!)).toBe('stable');
    expect(
      await run(['app', 'channel', 'firmware', 'Stable', 'kiosk-a'], { DROVER_URL: 'http://127.0.0.1:9' }),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: <channel>: expected a channel name (1 to 63 lowercase letters, digits, ., _ and -, such as stable), got `Stable`\n',
    });
    const reconciled = await run(['app', 'reconcile', 'firmware', 'kiosk-a', 'kiosk-b', '--json']);
    expect(reconciled.code, reconciled.stderr).toBe(0);
    expect(JSON.parse(reconciled.stdout).map((b: BindingBody) => b.agentId)).toEqual([
      kiosks[0]!.agentId,
      kiosks[1]!.agentId,
    ]);
  });

  it('removes devices, all found first: one not bound changes nothing, a refusal says what was done', async () => {
    await enrollTestAgent(t.owner, t.orgId, { hostname: 'kiosk-d' });
    expect(await run(['app', 'unbind', 'firmware', 'kiosk-a', 'kiosk-d'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: kiosk-d is not bound to firmware (`drover app devices firmware` lists its devices); nothing was changed\n',
    });
    expect(await bindings()).toHaveLength(3);
    expect(await run(['app', 'unbind', 'firmware', 'kiosk-a'])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'Removed 1 device from firmware\n',
    });
    expect((await bindings()).map((b) => b.agentId)).toEqual([kiosks[1]!.agentId, kiosks[2]!.agentId]);

    // kiosk-c is held by the application's device group: removing it is refused, kiosk-b goes.
    const labelled = await kiosks[2]!.request('PUT', '/v1/agent/labels', {
      labels: { os: 'linux', arch: 'x64', role: 'kiosk' },
    });
    expect(labelled.status, labelled.text).toBe(200);
    const grouped = await t.owner.patch(`/orgs/${t.orgId}/apps/${appId}`, {
      body: { deviceSelector: 'role=kiosk' },
    });
    expect(grouped.status, grouped.text).toBe(200);
    const refused = await run(['app', 'unbind', 'firmware', 'kiosk-b', 'kiosk-c']);
    expect(refused.code).toBe(2);
    expect(refused.stderr.split('\n')).toEqual([
      'drover: removed from firmware: kiosk-b',
      expect.stringMatching(/^drover: kiosk-c: .*device selector/),
      '',
    ]);
    expect((await bindings()).map((b) => b.agentId)).toEqual([kiosks[2]!.agentId]);
  });
});
