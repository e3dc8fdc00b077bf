import path from 'node:path';
import { generateEd25519KeyPair } from '@drover/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import {
  buildDrover,
  drover as droverExecutable,
  droverInProcess,
  signInDrover,
  type SignedInDrover,
} from '../helpers/cli-binary.js';
import { OWNER_EMAIL, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';

/**
 * What an operator scripts against the fleet, against a real coordinator: `drover audit` (the
 * audit log as a table with names, its filters, pages, every page as JSON lines for a SIEM),
 * `drover agent show|rename|revoke` (one agent by name or id, as a ticket needs it, and a machine
 * retired), `drover trigger show|pause|resume` (a cron trigger held during maintenance),
 * `drover workflow limits` and `drover enrollment-token list|revoke` (a leaked token found and
 * revoked before it enrolls a machine).
 */

let t: TestCoordinator;
let owner: SignedInDrover;
let agent: TestAgent;
let till: TestAgent;
let token: string;

const run = (args: string[], extra: Record<string, string> = {}) => owner.run(args, extra);

beforeAll(async () => {
  t = await startTestCoordinator();
  owner = await signInDrover(t.url, 'drover-cli-operations-');
  agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-01' });
  const issued = await run(['api-token', 'create', '--name', 'ci-audit', '--agent', 'edge-01']);
  if (issued.code !== 0) throw new Error(`api-token create: ${issued.stderr}`);
  token = issued.stdout.trim();
  // Two discoveries by the token: `api_token.discover` entries with the token as actor.
  for (let i = 0; i < 2; i++) expect((await run(['agents'], { DROVER_TOKEN: token })).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await t?.close();
  owner?.remove();
});

describe('drover audit', () => {
  it('shows the newest entries with who acted and on what by name, and the rest of each entry', async () => {
    const shown = await run(['audit']);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    const lines = shown.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TIME +ACTION +ACTOR +TARGET +DETAILS$/);
    expect(lines[1]).toMatch(
      /^20\d\d-\d\d-\d\d \d\d:\d\d:\d\dZ +api_token\.discover +token ci-audit +- +resource=agents count=1$/,
    );
    expect(shown.stdout).toMatch(
      new RegExp(`api_token\\.issue +user ${OWNER_EMAIL.replace('.', '\\.')} +api_token ci-audit +`),
    );
    expect(shown.stdout).toMatch(/agent\.enroll +agent edge-01 +agent edge-01 +hostname=edge-01 os="linux /);
    expect(shown.stdout).toMatch(
      /enrollment_token\.create +user \S+ +enrollment_token …[0-9a-f]{8} +expiresAt=20\S+\n/,
    );
  });

  it('filters by an actor named by email, or by name with its kind, and by action', async () => {
    const byToken = await run(['audit', '--actor-type', 'api_token', '--actor', 'ci-audit', '--json']);
    expect(byToken.code).toBe(0);
    const entries = JSON.parse(byToken.stdout) as { action: string; actorId: string }[];
    expect(entries.map((e) => e.action)).toEqual(['api_token.discover', 'api_token.discover']);

    const byOwner = await run(['audit', '--actor', OWNER_EMAIL.toUpperCase(), '--action', 'api_token.issue', '--json']);
    expect(JSON.parse(byOwner.stdout)).toMatchObject([{ action: 'api_token.issue', actorType: 'user' }]);

    const byAgent = await run(['audit', '--target-type', 'agent', '--target', agent.agentId, '--json']);
    expect(JSON.parse(byAgent.stdout)).toMatchObject([{ action: 'agent.enroll', targetId: agent.agentId }]);
  });

  it('refuses what no entry can match before any call, naming the option', async () => {
    expect(await run(['audit', '--action', 'api_token.revok'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        '--action: no action `api_token.revok` is recorded (did you mean api_token.revoke?)',
      ) as unknown,
    });
    expect(await run(['audit', '--actor-type', 'robot'])).toMatchObject({
      code: 2,
      stderr: 'drover: --actor-type: expected one of user, api_token, agent, system, got `robot`\n',
    });
    // A target type no entry has (a typo) would list nothing, silently, in an export for a SIEM.
    expect(await run(['audit', '--target-type', 'agnt'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        '--target-type: no target type `agnt` is recorded (did you mean agent?)',
      ) as unknown,
    });
    expect(await run(['audit', '--actor', 'ci-audit'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--actor: expected an id') as unknown,
    });
    expect(await run(['audit', '--actor', 'nobody@example.test'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--actor: no member `nobody@example.test`') as unknown,
    });
    expect(await run(['audit', '--since', '1h', '--until', '2h'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('is not before --until') as unknown,
    });
    expect(await run(['audit', '--limit', '201'])).toMatchObject({ code: 2 });
  });

  it('takes a time range: a duration ago or a time', async () => {
    const recent = await run(['audit', '--since', '1h', '--json']);
    expect((JSON.parse(recent.stdout) as unknown[]).length).toBeGreaterThanOrEqual(4);
    expect(await run(['audit', '--until', '2000-01-01'])).toMatchObject({ code: 0, stdout: 'No entries.\n' });
  });

  it('says the command for the next page, and with --all --json prints every entry, one a line', async () => {
    const every = JSON.parse((await run(['audit', '--limit', '200', '--json'])).stdout) as { id: number }[];
    const first = await run(['audit', '--limit', '1', '--actor-type', 'api_token']);
    const next = /^More entries follow: (drover audit --actor-type api_token --limit 1 --cursor \d+)\n$/.exec(
      first.stderr,
    );
    expect(next).not.toBeNull();
    const second = await run(next![1]!.split(' ').slice(1));
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(second.stdout.split('\n')[1]).toMatch(/api_token\.discover +token ci-audit/);

    const lines = await run(['audit', '--all', '--json', '--limit', '1']);
    expect(lines.code).toBe(0);
    const ids = lines.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id: number }).id);
    expect(ids).toEqual(every.map((e) => e.id));
    expect(lines.stderr).toBe('');
  });
});

describe('drover agent show, rename and revoke', () => {
  beforeAll(async () => {
    till = await enrollTestAgent(t.owner, t.orgId, { hostname: 'till-07' });
    expect((await till.putWorkflows([workflow('deploy', { version: '3' }), workflow('backup')])).status).toBe(200);
    const labelled = await t.owner.patch(`/orgs/${t.orgId}/agents/${till.agentId}`, {
      body: { labels: { site: 'berlin' } },
    });
    expect(labelled.status).toBe(200);
  });

  it('shows an agent by name: status, machine, version, workflows and labels', async () => {
    const shown = await run(['agent', 'show', 'till-07']);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toContain(`ID:         ${till.agentId}\nName:       till-07\nStatus:     `);
    expect(shown.stdout).toMatch(/\nHostname: +till-07\n/);
    expect(shown.stdout).toMatch(/\nWorkflows: +backup \(v1\), deploy \(v3\)\n/);
    expect(shown.stdout).toMatch(/\nKEY +VALUE +SOURCE\nsite +berlin +operator\n/);
    const json = await run(['agent', 'show', till.agentId, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: till.agentId,
      name: 'till-07',
      operatorLabels: { site: 'berlin' },
    });
  });

  it('renames an agent; a name the coordinator refuses is its 422', async () => {
    expect(await run(['agent', 'rename', 'till-07', 'till-07-berlin'])).toMatchObject({
      code: 0,
      stdout: `Renamed the agent till-07 to till-07-berlin (${till.agentId})\n`,
    });
    expect(await run(['agent', 'show', 'till-07'])).toMatchObject({
      code: 2,
      stderr: 'drover: no agent `till-07` in the organization\n',
    });
    const refused = await run(['agent', 'rename', 'till-07-berlin', 'x'.repeat(256)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe('drover: body.name must be at most 255 characters long\n');
  });

  it('revokes an agent: it can no longer sign, and it is no longer found by name', async () => {
    expect(await run(['agent', 'revoke', 'till-07-berlin'])).toMatchObject({
      code: 0,
      stdout: `Revoked the agent till-07-berlin (${till.agentId}): the machine must enroll again, with a new enrollment token, to run jobs\n`,
    });
    expect((await till.request('GET', '/v1/agent/me')).status).toBe(401);
    // Revoking it again by name (a script run twice) says the name is a revoked agent's.
    expect(await run(['agent', 'revoke', 'till-07-berlin'])).toMatchObject({
      code: 2,
      stderr: `drover: no agent \`till-07-berlin\` in the organization but a revoked one (${till.agentId}): a revoked agent is named by its id\n`,
    });
    const byId = await run(['agent', 'show', till.agentId, '--json']);
    expect(JSON.parse(byId.stdout)).toMatchObject({ status: 'revoked' });
  });
});

describe('drover trigger show, pause and resume', () => {
  let cronId: string;
  let webhookId: string;
  beforeAll(async () => {
    const base = { agentId: agent.agentId, scopeType: 'workflow', workflowName: 'nightly' };
    expect((await agent.putWorkflows([workflow('nightly')])).status).toBe(200);
    const cron = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: {
        ...base,
        name: 'nightly-berlin',
        type: 'cron',
        cronExpression: '0 2 * * *',
        cronTimezone: 'Europe/Berlin',
      },
    });
    expect(cron.status).toBe(201);
    cronId = cron.body.id;
    const webhook = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: { ...base, name: 'deploy-hook', responseMode: 'async' },
    });
    expect(webhook.status).toBe(201);
    webhookId = webhook.body.id;
  });

  it("shows a cron trigger by name: where and what it runs, its schedule and next runs in UTC and its zone's time", async () => {
    const shown = await run(['trigger', 'show', 'nightly-berlin']);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toContain(
      `ID:           ${cronId}\nName:         nightly-berlin\nType:         cron\nRuns on:      edge-01\n`,
    );
    expect(shown.stdout).toMatch(/\nSchedule: +0 2 \* \* \* \(Europe\/Berlin\)\n/);
    expect(shown.stdout).toMatch(/\nNext runs:\nUTC +LOCAL\n20\d\d-\d\d-\d\d 01:00:00Z +/);
    const json = await run(['trigger', 'show', webhookId, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: webhookId, name: 'deploy-hook', type: 'webhook' });
  });

  it('pauses and resumes a cron trigger, says when it already was, and refuses another kind', async () => {
    const paused = await run(['trigger', 'pause', 'nightly-berlin']);
    expect(paused).toMatchObject({ code: 0, stdout: `Paused the trigger nightly-berlin (${cronId})\n` });
    expect((await t.owner.get<{ cronEnabled: boolean }>(`/orgs/${t.orgId}/triggers/${cronId}`)).body.cronEnabled).toBe(
      false,
    );
    expect(await run(['trigger', 'pause', cronId])).toMatchObject({
      code: 0,
      stdout: 'The trigger nightly-berlin was paused already\n',
    });
    expect((await run(['trigger', 'show', 'nightly-berlin'])).stdout).toMatch(
      /\nSchedule: +0 2 \* \* \* \(Europe\/Berlin\), paused\n/,
    );
    const resumed = await run(['trigger', 'resume', 'nightly-berlin']);
    expect(resumed).toMatchObject({ code: 0 });
    expect(resumed.stdout).toMatch(
      new RegExp(`^Resumed the trigger nightly-berlin \\(${cronId}\\); next run 20\\S+ 01:00:00Z\\n$`),
    );
    expect(await run(['trigger', 'pause', 'deploy-hook'])).toMatchObject({
      code: 2,
      stderr: 'drover: the trigger deploy-hook is a webhook trigger: only a cron trigger pauses\n',
    });
    expect(await run(['trigger', 'show', 'nope'])).toMatchObject({
      code: 2,
      stderr: 'drover: no trigger `nope` in the organization\n',
    });
    const audited = await run(['audit', '--action', 'trigger.update', '--target', cronId, '--json']);
    expect((JSON.parse(audited.stdout) as unknown[]).length).toBe(2);
  });
});

describe('drover workflow limits', () => {
  it("shows a workflow's limits, changes some (none: no limit) and leaves the others, refusing a bad value first", async () => {
    expect(await run(['workflow', 'limits', 'edge-01', 'nightly'])).toMatchObject({
      code: 0,
      stdout: 'WINDOW  LIMIT\nminute  none\nhour    none\nday     none\n',
    });
    expect(
      await run(['workflow', 'limits', 'edge-01', 'nightly', '--per-hour', '20', '--per-day', '100']),
    ).toMatchObject({
      code: 0,
      stdout:
        'Changed the limits of nightly on edge-01.\nWINDOW  LIMIT\nminute  none\nhour    20 runs\nday     100 runs\n',
    });
    const json = await run(['workflow', 'limits', agent.agentId, 'nightly', '--per-day', 'none', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      rateLimitPerMinute: null,
      rateLimitPerHour: 20,
      rateLimitPerDay: null,
    });
    expect(await run(['workflow', 'limits', 'edge-01', 'nightly', '--per-minute', '0'])).toMatchObject({
      code: 2,
      stderr: 'drover: --per-minute: expected a whole number from 1 to 1000000000, or none, got `0`\n',
    });
    expect(await run(['workflow', 'limits', 'edge-01', 'nope'])).toMatchObject({
      code: 2,
      stderr: 'drover: edge-01 reports no workflow `nope` (drover workflows --agent edge-01 lists them)\n',
    });
    // An id of no agent (a typo) is the API's 404, not an agent that reports nothing.
    const unknown = '0190f3c2-0000-4000-8000-000000000000';
    expect(await run(['workflow', 'limits', unknown, 'nightly'])).toMatchObject({
      code: 2,
      stderr: 'drover: Agent not found\n',
    });
    expect(await run(['workflows', '--agent', unknown])).toMatchObject({
      code: 2,
      stderr: 'drover: Agent not found\n',
    });
  });
});

describe('drover enrollment-token list and revoke', () => {
  interface Issued {
    id: string;
    token: string;
  }
  const issue = async (name: string): Promise<Issued> => {
    const created = await run(['enrollment-token', 'create', '--name', name, '--json']);
    if (created.code !== 0) throw new Error(`enrollment-token create: ${created.stderr}`);
    return JSON.parse(created.stdout) as Issued;
  };
  const enroll = (enrollmentToken: string) =>
    enrollTestAgent(t.owner, t.orgId, { hostname: 'rack-4-01', enrollmentToken });
  /** A coordinator that cannot be reached: a refusal with it was made before any call. */
  const nowhere = { DROVER_URL: 'http://127.0.0.1:9' };
  let used: Issued;
  let usedAgent: TestAgent;
  let leaked: Issued;
  let spare: Issued;

  /** The built executable, signed in as the owner: what a script runs. */
  const executable = (args: string[]) => droverExecutable(args, { env: owner.env, cwd: owner.work });

  beforeAll(async () => {
    await buildDrover();
    used = await issue('rack-4');
    usedAgent = await enroll(used.token);
    leaked = await issue('leaked');
    spare = await issue('spare');
  }, 300_000);

  it('revokes an unspent token, which then enrolls nothing; a used one is the API’s 409', async () => {
    // Through the built executable: the output and exit codes a script sees.
    expect(await executable(['enrollment-token', 'revoke', leaked.id])).toMatchObject({
      code: 0,
      stdout: `Revoked the enrollment token leaked (${leaked.id}): it enrolls no machine from now on\n`,
      stderr: '',
    });
    await expect(enroll(leaked.token)).rejects.toThrow(/^enroll: 401 .*The enrollment token was revoked/);
    expect(await executable(['enrollment-token', 'revoke', used.id])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'drover: The enrollment token was already used to enroll an agent: revoke that agent instead\n',
    });
    const json = await run(['enrollment-token', 'revoke', leaked.id, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: leaked.id, name: 'leaked', state: 'revoked' });
  });

  it('refuses an unknown token (404), a secret given for the id before any call, and another member’s token (403)', async () => {
    expect(await run(['enrollment-token', 'revoke', '00000000-0000-4000-8000-000000000000'])).toMatchObject({
      code: 2,
      stderr: 'drover: Enrollment token not found\n',
    });
    expect(await run(['enrollment-token', 'revoke', spare.token], nowhere)).toMatchObject({
      code: 2,
      stderr:
        "drover: expected the enrollment token's id, got its secret: `drover enrollment-token list` shows the ids\n",
    });
    expect(await run(['enrollment-token', 'revoke', 'rack-4'], nowhere)).toMatchObject({
      code: 2,
      stderr: 'drover: expected an enrollment token id (a UUID), got `rack-4`\n',
    });

    await addUser(t.owner, t.orgId, 'tokens-member@example.test', 'member');
    const member = { ...owner.env, XDG_CONFIG_HOME: path.join(owner.work, 'member-config') };
    const login = await droverInProcess(['login', '--email', 'tokens-member@example.test', '--password-stdin'], {
      env: member,
      cwd: owner.work,
      input: `${MEMBER_PASSWORD}\n`,
    });
    expect(login.code).toBe(0);
    const refused = await droverInProcess(['enrollment-token', 'revoke', spare.id], { env: member, cwd: owner.work });
    expect(refused).toMatchObject({
      code: 2,
      stderr: 'drover: Only an owner or an operator of the organization can do this; you are a member\n',
    });
    expect(JSON.parse((await run(['enrollment-token', 'list', '--state', 'open', '--json'])).stdout)).toContainEqual(
      expect.objectContaining({ id: spare.id, state: 'open' }),
    );
  });

  it('lists the tokens newest first: who made each, and the name of the agent a used one enrolled', async () => {
    const listed = await run(['enrollment-token', 'list']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +STATE +CREATED BY +EXPIRES +USED BY$/);
    const email = OWNER_EMAIL.replace('.', '\\.');
    const when = '20\\d\\d-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ';
    expect(lines.slice(1, 4)).toEqual([
      expect.stringMatching(new RegExp(`^${spare.id} +spare +open +${email} +${when} +-$`)),
      expect.stringMatching(new RegExp(`^${leaked.id} +leaked +revoked +${email} +${when} +-$`)),
      expect.stringMatching(new RegExp(`^${used.id} +rack-4 +used +${email} +${when} +rack-4-01$`)),
    ]);
    const json = JSON.parse((await run(['enrollment-token', 'list', '--state', 'used', '--json'])).stdout);
    expect(json).toContainEqual({
      id: used.id,
      name: 'rack-4',
      state: 'used',
      createdBy: expect.any(String) as unknown,
      createdByEmail: OWNER_EMAIL,
      createdAt: expect.any(String) as unknown,
      expiresAt: expect.any(String) as unknown,
      usedAt: expect.any(String) as unknown,
      usedByAgentId: usedAgent.agentId,
      revokedAt: null,
      revokedBy: null,
    });
  });

  it('filters by state, and refuses an unknown state or limit before any call, with a suggestion', async () => {
    const open = await run(['enrollment-token', 'list', '--state', 'open', '--json']);
    expect(open.code).toBe(0);
    const states = (JSON.parse(open.stdout) as { state: string }[]).map((token) => token.state);
    expect(states.length).toBeGreaterThan(0);
    expect(new Set(states)).toEqual(new Set(['open']));
    const usedOnes = await run(['enrollment-token', 'list', '--state', 'used']);
    expect(usedOnes.stdout).toContain(used.id);
    expect(usedOnes.stdout).not.toContain(spare.id);

    // Refused before any call: the coordinator of `nowhere` could not be reached.
    expect(await run(['enrollment-token', 'list', '--state', 'revokd'], nowhere)).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'drover: --state: expected one of open, used, revoked, expired, got `revokd` (did you mean revoked?)\n',
    });
    expect(await run(['enrollment-token', 'list', '--state', 'all'], nowhere)).toMatchObject({
      code: 2,
      stderr: 'drover: --state: expected one of open, used, revoked, expired, got `all`\n',
    });
    expect(await run(['enrollment-token', 'list', '--limit', '501'], nowhere)).toMatchObject({
      code: 2,
      stderr: 'drover: --limit: expected an integer from 1 to 500, got `501`\n',
    });
  });

  it('says the command for the next page, and with --all --json prints every token, one a line', async () => {
    const every = JSON.parse((await run(['enrollment-token', 'list', '--json'])).stdout) as { id: string }[];
    expect(every.length).toBeGreaterThan(2);
    const first = await run(['enrollment-token', 'list', '--limit', '1']);
    expect(first.stdout).toContain(every[0]!.id);
    const next = /^More tokens follow: (drover enrollment-token list --limit 1 --cursor \S+)\n$/.exec(first.stderr);
    expect(next).not.toBeNull();
    const second = await run(next![1]!.split(' ').slice(1));
    expect(second).toMatchObject({ code: 0 });
    expect(second.stdout.split('\n')[1]).toMatch(new RegExp(`^${every[1]!.id} `));

    const lines = await run(['enrollment-token', 'list', '--all', '--json', '--limit', '1']);
    expect(lines).toMatchObject({ code: 0, stderr: '' });
    const ids = lines.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id: string }).id);
    expect(ids).toEqual(every.map((token) => token.id));
    const table = await run(['enrollment-token', 'list', '--all', '--limit', '1', '--state', 'revoked']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(new RegExp(`\\n${leaked.id} +leaked +revoked `));
  });
});

describe('the agents a table names', () => {
  it('tells apart two agents of one name by the end of their ids in a table that names the agents it shows', async () => {
    const twins: TestAgent[] = [];
    for (let i = 0; i < 2; i++) {
      const made = await run(['enrollment-token', 'create', '--name', `twin ${i}`, '--json']);
      const { token: secret } = JSON.parse(made.stdout) as { token: string };
      const enrolled = await t.api.post<{ agentId: string }>('/agent/enroll', {
        body: {
          enrollmentToken: secret,
          publicKey: generateEd25519KeyPair().publicKey,
          hostname: 'twin',
          os: 'linux',
          agentVersion: '1.0.0',
        },
      });
      expect(enrolled.status, enrolled.text).toBe(201);
      twins.push({ agentId: enrolled.body.agentId } as TestAgent);
    }
    const named = twins.map((twin) => `twin \\(…${twin.agentId.slice(-8)}\\)`);
    const tokens = await run(['enrollment-token', 'list', '--state', 'used']);
    for (const name of named) expect(tokens.stdout).toMatch(new RegExp(`twin \\d +used .* ${name}\n`));
  });
});
