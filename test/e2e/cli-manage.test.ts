import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { enrollAgentStateDir, type AgentStateDir } from '../helpers/agent-daemon.js';
import {
  buildDrover,
  droverInProcess as drover,
  DROVER,
  signInDrover,
  spawnDrover,
  stopDrover,
  type SignedInDrover,
} from '../helpers/cli-binary.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { finishBody } from '../helpers/jobs.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { eventually } from '../helpers/poll.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * The management commands of a signed-in user (`drover enrollment-token|trigger|api-token|member|
 * invitation|org retention|release|rollout|app device-group|app window|agent label|batch`, `drover agents --selector`), `drover run` on selector
 * triggers (batches, their jobs run by signed test agents), organizations chosen with --org, and
 * shell completion, against a real coordinator: the commands run in this process (`runCli`, what
 * the executable runs: ~0.5 s less a call), the built single executable where a test needs a
 * process (an interrupted wait, completion in bash).
 */

let t: TestCoordinator;
let agent: AgentStateDir;
let owner: SignedInDrover;
let work: string;
let env: Record<string, string>;

beforeAll(async () => {
  t = await startTestCoordinator();
  agent = await enrollAgentStateDir(t);
  await buildDrover();
  owner = await signInDrover(t.url, 'drover-cli-manage-');
  ({ work, env } = owner);
}, 300_000);

afterAll(async () => {
  await t?.close();
  if (agent) fs.rmSync(path.dirname(agent.stateDir), { recursive: true, force: true });
  owner?.remove();
});

const run = (args: string[], extra: Record<string, string> = {}) =>
  drover(args, { env: { ...env, ...extra }, cwd: work });

describe('drover management commands', () => {
  it('creates an enrollment token and says how to enroll with it', async () => {
    const res = await run(['enrollment-token', 'create', '--name', 'rack 4', '--expires-in', '2h']);
    expect(res.code).toBe(0);
    const token = res.stdout.trim();
    expect(token).toMatch(/^drve_\S+$/);
    expect(res.stderr).toContain(`drover-agent enroll --url ${t.url} --token ${token}\n`);
    const json = JSON.parse((await run(['enrollment-token', 'create', '--json'])).stdout);
    expect(Object.keys(json).sort()).toEqual(['expiresAt', 'id', 'name', 'token']);
  });

  it('creates, lists and deletes a trigger, naming the agent by its name', async () => {
    const created = await run([
      'trigger',
      'create',
      '--name',
      'deploy',
      '--agent',
      'daemon-test',
      '--workflow',
      'deploy',
      '--sync',
      '--response-timeout',
      '10s',
      '--allowed-ref',
      'main',
    ]);
    expect(created.code).toBe(0);
    const id = created.stdout.trim();
    expect((await t.owner.get(`/orgs/${t.orgId}/triggers/${id}`)).body).toMatchObject({
      name: 'deploy',
      agentId: agent.agentId,
      workflowName: 'deploy',
      responseMode: 'sync',
      responseTimeoutMs: 10_000,
      allowedRefs: ['main'],
    });
    const table = await run(['trigger', 'list']);
    expect(table.stdout).toMatch(
      new RegExp(`^ID +NAME +TYPE +MODE +WORKFLOW +AGENT\n${id} +deploy +webhook +sync +deploy +daemon-test\n$`),
    );
    const json = JSON.parse((await run(['trigger', 'list', '--json'])).stdout);
    expect(json).toEqual((await t.owner.get(`/orgs/${t.orgId}/triggers`)).body);
    // Narrowed by the coordinator: by type and by a part of the name, in any case.
    expect((await run(['trigger', 'list', '--type', 'webhook', '--name', 'DEP'])).stdout).toBe(table.stdout);
    expect((await run(['trigger', 'list', '--type', 'cron'])).stdout).toBe('No triggers match.\n');
    expect(await run(['trigger', 'list', '--type', 'crn'])).toMatchObject({
      code: 2,
      stderr: 'drover: --type: expected one of webhook, cron, slack, discord, got `crn` (did you mean cron?)\n',
    });
    // By its whole name only: a part of it names no trigger.
    expect((await run(['trigger', 'show', 'deploy', '--json'])).stdout).toContain(`"id": "${id}"`);
    expect(await run(['trigger', 'show', 'dep'])).toMatchObject({
      code: 2,
      stderr: 'drover: no trigger `dep` in the organization\n',
    });
    // A name's 255 characters are code points, as the coordinator counts them: 200 emoji are 400
    // UTF-16 units, and still a name to find and to narrow by.
    const emoji = '😀'.repeat(200);
    const long = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: emoji,
        agentId: agent.agentId,
        scopeType: 'workflow',
        workflowName: 'deploy',
        responseMode: 'async',
      },
    });
    expect(long.status, long.text).toBe(201);
    expect((await run(['trigger', 'show', emoji, '--json'])).stdout).toContain(`"id": "${long.body.id}"`);
    expect((await run(['trigger', 'list', '--name', emoji])).stdout).toContain(long.body.id);
    expect(await run(['trigger', 'list', '--name', '😀'.repeat(256)])).toMatchObject({
      code: 2,
      stderr: "drover: --name: expected 1 to 255 characters of a trigger's name\n",
    });
    expect((await run(['trigger', 'delete', long.body.id])).code).toBe(0);

    // Changed, found by its name: what the flags name, the rest kept.
    const updated = await run([
      'trigger',
      'update',
      'deploy',
      '--name',
      'deploy main',
      '--any-workflow',
      '--async',
      '--allowed-ref',
      'main',
      '--allowed-ref',
      'release',
      '--allow-debug',
    ]);
    expect(updated).toMatchObject({
      code: 0,
      stdout: `Changed the trigger deploy main (${id}): name, scopeType, workflowName, responseMode, allowedRefs, allowDebug\n`,
    });
    const read = async () => (await t.owner.get(`/orgs/${t.orgId}/triggers/${id}`)).body;
    expect(await read()).toMatchObject({
      name: 'deploy main',
      agentId: agent.agentId,
      scopeType: 'agent',
      workflowName: null,
      responseMode: 'async',
      allowedRefs: ['main', 'release'],
      allowDebug: true,
    });
    // Onto a selector (a batch unless --fanout says otherwise), then back onto the agent by its name.
    const onSelector = ['--workflow', 'deploy', '--selector', 'role=gateway', '--max-parallel', '2'];
    expect(await run(['trigger', 'update', id, ...onSelector])).toMatchObject({
      code: 0,
      stdout: `Changed the trigger deploy main (${id}): agentSelector, maxParallel, scopeType, workflowName, fanout\n`,
    });
    expect(await read()).toMatchObject({ agentId: null, agentSelector: 'role=gateway', fanout: 'all', maxParallel: 2 });
    const back = await run([
      'trigger',
      'update',
      id,
      '--agent',
      'daemon-test',
      '--any-ref',
      '--name',
      'deploy',
      '--json',
    ]);
    expect(JSON.parse(back.stdout)).toMatchObject({ agentId: agent.agentId, agentSelector: null, allowedRefs: null });
    // Refused before any call: nothing to change, two flags that contradict; then the coordinator's refusal.
    expect(await run(['trigger', 'update', id])).toMatchObject({
      code: 2,
      stderr: 'drover: nothing to change: give at least one flag (drover trigger update --help lists them)\n',
    });
    expect(await run(['trigger', 'update', id, '--sync', '--async'])).toMatchObject({
      code: 2,
      stderr: 'drover: give --sync or --async, not both\n',
    });
    const refused = await run(['trigger', 'update', id, '--max-parallel', '3']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('maxParallel: is used only with agentSelector');

    const deleted = await run(['trigger', 'delete', id]);
    expect(deleted).toMatchObject({ code: 0, stdout: `Deleted the trigger deploy (${id})\n` });
    const again = await run(['trigger', 'delete', id]);
    expect(again).toMatchObject({ code: 2, stderr: 'drover: Trigger not found\n' });
    const neither = await run(['trigger', 'create', '--name', 'x', '--agent', 'daemon-test']);
    expect(neither).toMatchObject({
      code: 2,
      stderr: 'drover: give --workflow <name> or --any-workflow (one of them)\n',
    });
  });

  it('lists triggers a page at a time, narrowed by the coordinator, with their count and the next page', async () => {
    const ids: string[] = [];
    for (const name of ['paged-a', 'paged-b', 'paged-c', 'paged-d', 'paged-e']) {
      const created = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
        body: { name, agentId: agent.agentId, scopeType: 'workflow', workflowName: 'deploy', responseMode: 'async' },
      });
      expect(created.status, created.text).toBe(201);
      ids.push(created.body.id as string);
    }
    const rowsOf = (stdout: string) =>
      stdout
        .split('\n')
        .slice(1, -1)
        .map((line) => line.split(/ +/)[0]);
    const first = await run(['trigger', 'list', '--name', 'paged-', '--limit', '2']);
    expect(first.code).toBe(0);
    expect(rowsOf(first.stdout)).toEqual(ids.slice(0, 2));
    const next = /^More triggers follow: drover trigger list --name paged- --limit 2 --cursor (\S+)\n$/m.exec(
      first.stderr,
    );
    expect(first.stderr.startsWith('2 of 5 triggers\n'), first.stderr).toBe(true);
    expect(next, first.stderr).not.toBeNull();
    const second = await run(['trigger', 'list', '--name', 'paged-', '--limit', '2', '--cursor', next![1]!]);
    expect(rowsOf(second.stdout)).toEqual(ids.slice(2, 4));
    // --json is one page; with --all, every trigger that matches, one a line.
    const page = JSON.parse((await run(['trigger', 'list', '--name', 'paged-', '--limit', '2', '--json'])).stdout);
    expect(page.map((one: { id: string }) => one.id)).toEqual(ids.slice(0, 2));
    const all = await run([
      'trigger',
      'list',
      '--name',
      'PAGED-',
      '--type',
      'webhook',
      '--limit',
      '2',
      '--all',
      '--json',
    ]);
    expect(all).toMatchObject({ code: 0, stderr: '' });
    expect(
      all.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).toEqual(ids);
    const table = await run(['trigger', 'list', '--name', 'paged-', '--limit', '2', '--all']);
    expect(rowsOf(table.stdout)).toEqual(ids);
    expect(table.stderr).toBe('5 triggers\n');
    expect((await run(['trigger', 'list', '--name', 'paged-', '--type', 'cron', '--all'])).stdout).toBe(
      'No triggers match.\n',
    );
    expect(await run(['trigger', 'list', '--limit', '501'])).toMatchObject({ code: 2 });
    for (const id of ids) expect((await t.owner.delete(`/orgs/${t.orgId}/triggers/${id}`)).status).toBe(200);
  });

  it('issues an API token that works at once, lists it, and revokes it', async () => {
    const issued = await run([
      'api-token',
      'create',
      '--name',
      'ci',
      '--agent',
      'daemon-test',
      '--storage',
      'read,write',
      '--limit-per-minute',
      '10',
      '--expires-in',
      '30d',
    ]);
    expect(issued.code).toBe(0);
    const token = issued.stdout.trim();
    expect(token).toMatch(/^drv_/);
    const meta = await run(['token', '--json'], { DROVER_TOKEN: token });
    expect(JSON.parse(meta.stdout)).toMatchObject({
      name: 'ci',
      scopes: [
        { type: 'agent', agentIds: [agent.agentId] },
        { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
      ],
      rateLimit: { perMinute: 10, perHour: null, perDay: null },
    });
    const shown = await run(['token'], { DROVER_TOKEN: token });
    expect(shown.stdout).toMatch(
      /^Name: +ci\nGrants: +agents [0-9a-f-]{36}; storage read, write in every binding\nJob limits: +10\/minute\nExpires: +20/,
    );

    const tokens = await t.owner.get(`/orgs/${t.orgId}/api-tokens`);
    const id = tokens.body[0].id;
    const list = await run(['api-token', 'list']);
    expect(list.stdout).toMatch(
      new RegExp(`^ID +NAME +HINT +STATE +GRANTS +LIMITS +EXPIRES\n${id} +ci +drv_…\\S+ +active `),
    );
    const revoked = await run(['api-token', 'revoke', id]);
    expect(revoked).toMatchObject({ code: 0, stdout: `Revoked the API token ci (${id})\n` });
    const refused = await run(['token'], { DROVER_TOKEN: token });
    expect(refused).toMatchObject({ code: 2, stderr: 'drover: The API token has been revoked\n' });
  });

  it('invites a member with a first password, who accepts with drover invitation; lists, revokes and removes', async () => {
    const added = await run(['member', 'add', '--email', 'dev@example.test', '--new-account'], {
      DROVER_MEMBER_PASSWORD: 'another long secret',
    });
    expect(added.stdout).toMatch(
      /^Invited dev@example\.test as member until \S+ \(invitation [0-9a-f-]{36}\); they join when they accept it\n$/,
    );
    const twice = await run(['member', 'add', '--email', 'dev@example.test']);
    expect(twice).toMatchObject({
      code: 2,
      stderr: 'drover: This email has a pending invitation to the organization already; revoke it to invite again\n',
    });
    const pending = await run(['member', 'invitations']);
    expect(pending.stdout).toMatch(
      /^ID +EMAIL +ROLE +STATUS +EXPIRES +INVITED BY\n\S+ +dev@example\.test +member +pending /,
    );

    // The invitee, signed in on their own machine (another config directory), accepts it by name.
    const dev = { ...env, XDG_CONFIG_HOME: path.join(work, 'dev-config') };
    const devRun = (args: string[]) => drover(args, { env: dev, cwd: work });
    expect(
      (
        await drover(['login', '--email', 'dev@example.test', '--password-stdin'], {
          env: dev,
          input: 'another long secret\n',
        })
      ).code,
    ).toBe(0);
    expect((await devRun(['invitation', 'list'])).stdout).toMatch(
      /^ID +ORGANIZATION +ROLE +INVITED BY +EXPIRES\n\S+ +acme +member +owner@example\.test /,
    );
    expect(await devRun(['invitation', 'accept', 'acme'])).toMatchObject({
      code: 0,
      stdout: `Joined acme as member (${t.orgId})\n`,
    });
    expect(await devRun(['invitation', 'list'])).toMatchObject({ code: 0, stdout: 'No pending invitations.\n' });
    expect(await devRun(['invitation', 'decline', 'acme'])).toMatchObject({
      code: 2,
      stderr: 'drover: no pending invitation `acme` of yours\n',
    });

    // An invitation revoked by email.
    expect((await run(['member', 'add', '--email', 'late@example.test'])).code).toBe(0);
    expect(await run(['member', 'revoke-invitation', 'LATE@example.test'])).toMatchObject({
      code: 0,
      stdout: 'Revoked the invitation of late@example.test\n',
    });
    expect(await run(['member', 'invitations'])).toMatchObject({ code: 0, stdout: 'No pending invitations.\n' });
    // Roles: each of the four; an unknown one refused before any call.
    expect(await run(['member', 'role', 'dev@example.test', 'viewer'])).toMatchObject({
      code: 0,
      stdout: 'dev@example.test is a viewer of the organization\n',
    });
    const listed = await run(['member', 'list']);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^EMAIL +ROLE +JOINED +SSO GROUP +USER ID$/);
    expect(lines.find((l) => l.startsWith('dev@example.test'))).toMatch(
      /^dev@example\.test +viewer +\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ +- +[0-9a-f-]{36}$/,
    );
    const json = JSON.parse((await run(['member', 'list', '--json'])).stdout) as { email: string; ssoGroup: null }[];
    expect(json.find((m) => m.email === 'dev@example.test')).toMatchObject({ role: 'viewer', ssoGroup: null });
    expect(await devRun(['member', 'role', 'owner@example.test', 'member'])).toMatchObject({
      code: 2,
      stderr: 'drover: Only an owner of the organization can do this\n',
    });
    expect(await run(['member', 'role', 'dev@example.test', 'admin'])).toMatchObject({
      code: 2,
      stderr: 'drover: <role>: expected one of owner, operator, member, viewer, got `admin`\n',
    });
    expect(await run(['member', 'add', '--email', 'x@example.test', '--role', 'root'])).toMatchObject({
      code: 2,
      stderr: 'drover: --role: expected one of owner, operator, member, viewer, got `root`\n',
    });
    const removed = await run(['member', 'remove', 'DEV@example.test']);
    expect(removed).toMatchObject({ code: 0, stdout: 'Removed dev@example.test from the organization\n' });
  });

  it('creates releases from an artifact it uploads or a stored file, publishes and yanks them by version', async () => {
    const app = await t.owner.post(`/orgs/${t.orgId}/apps`, { body: { slug: 'fw', updateWorkflowName: 'update' } });
    expect(app.status, app.text).toBe(201);
    fs.writeFileSync(path.join(work, 'fw-1.0.bin'), 'firmware one');
    const first = await run(['release', 'create', '1.0', '--app', 'fw', '--artifact', 'fw-1.0.bin', '--publish']);
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/^Uploaded the artifact as file [0-9a-f-]{36} \(SHA-256 [0-9a-f]{64}\)\n/);
    expect(first.stderr).toContain('Release 1.0 (#1, optional) on channel stable: published\n');
    const release = (await t.owner.get(`/orgs/${t.orgId}/apps/${app.body.id}/releases/${first.stdout.trim()}`)).body;
    expect(release).toMatchObject({ version: '1.0', status: 'published', size: 12 });

    const second = await run([
      'release',
      'create',
      '1.1',
      '--app',
      'fw',
      '--file',
      release.artifactFileId,
      '--mandatory',
      '--json',
    ]);
    expect(JSON.parse(second.stdout)).toMatchObject({
      version: '1.1',
      sequence: 2,
      status: 'draft',
      updatePolicy: 'mandatory',
    });
    const published = await run(['release', 'publish', '1.1', '--app', 'fw']);
    expect(published).toMatchObject({ code: 0, stdout: 'Release 1.1 (#2, mandatory) on channel stable: published\n' });
    const yanked = await run(['release', 'yank', '1.1', '--app', 'fw']);
    expect(yanked.stdout).toBe('Release 1.1 (#2, mandatory) on channel stable: yanked\n');
    const twice = await run(['release', 'yank', '1.1', '--app', 'fw']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/^drover: [^\n]*yanked[^\n]*\n$/);
    const list = await run(['release', 'list', '--app', 'fw']);
    expect(list.stdout).toMatch(
      /^ID +VERSION +SEQUENCE +CHANNEL +POLICY +STATUS +PUBLISHED\n\S+ +1\.1 +#2 +stable +mandatory +yanked +20/,
    );
    // A create the API refuses leaves no persistent artifact behind, uploaded for nothing.
    const activeFiles = async () =>
      ((await t.owner.get(`/orgs/${t.orgId}/files`)).body as { id: string; status: string }[])
        .filter((f) => f.status === 'active')
        .map((f) => f.id);
    const filesBefore = await activeFiles();
    const refused = await run([
      'release',
      'create',
      '1.2',
      '--app',
      'fw',
      '--artifact',
      'fw-1.0.bin',
      '--sequence',
      '1',
    ]);
    expect(refused.code).toBe(2);
    const uploadedId = /Uploaded the artifact as file ([0-9a-f-]{36})/.exec(refused.stderr)?.[1];
    expect(refused.stderr).toContain(
      `Deleted the artifact uploaded for it (file ${uploadedId}): the release was not created\n`,
    );
    expect(refused.stderr).toMatch(/\ndrover: [^\n]*sequence[^\n]*\n$/);
    expect(await activeFiles()).toEqual(filesBefore);
    const unknown = await run(['release', 'list', '--app', 'nope']);
    expect(unknown).toMatchObject({
      code: 2,
      stderr:
        "drover: no application `nope` in the organization: create it with `drover app create nope --workflow <update-workflow>` or on the dashboard's Updates page (`drover app list` lists the organization's applications)\n",
    });
  });

  it("sets, shows and clears an application's device group", async () => {
    const app = await t.owner.post(`/orgs/${t.orgId}/apps`, { body: { slug: 'kiosk', updateWorkflowName: 'update' } });
    expect(app.status, app.text).toBe(201);
    // The one agent of the organization has no labels: `!role` matches it.
    expect(await run(['app', 'device-group', 'kiosk'])).toMatchObject({
      code: 0,
      stdout: 'kiosk has no device group\n',
    });
    // Previewed first: what it would bind, changing nothing.
    const agentName = (await t.owner.get(`/orgs/${t.orgId}/agents/${agent.agentId}`)).body.name as string;
    expect(await run(['app', 'device-group', 'kiosk', '--selector', '! role', '--dry-run'])).toMatchObject({
      code: 0,
      stdout: `Device group of kiosk: ! role would match 1 agent (${agentName}); 1 to bind, 0 to remove; nothing changed\n`,
    });
    expect((await t.owner.get(`/orgs/${t.orgId}/apps/${app.body.id}/devices`)).body).toEqual([]);
    expect(await run(['app', 'device-group', 'kiosk', '--dry-run'])).toMatchObject({
      code: 2,
      stderr: 'drover: --dry-run previews a --selector\n',
    });
    expect(await run(['app', 'device-group', 'kiosk', '--selector', '! role'])).toMatchObject({
      code: 0,
      stdout: 'Device group of kiosk: !role matches 1 agent; 1 bound, 0 removed\n',
    });
    const bindings = (await t.owner.get(`/orgs/${t.orgId}/apps/${app.body.id}/devices`)).body;
    expect(bindings).toMatchObject([{ agentId: agent.agentId, origin: 'selector' }]);
    expect(await run(['app', 'device-group', 'kiosk'])).toMatchObject({
      code: 0,
      stdout: 'Device group of kiosk: !role (1 agent matches now)\n',
    });
    expect(
      JSON.parse(
        (await run(['app', 'device-group', 'kiosk', '--selector', 'role=printer', '--dry-run', '--json'])).stdout,
      ),
    ).toEqual({ matching: 0, names: [], toBind: 0, toRemove: 1 });
    expect(await run(['app', 'device-group', app.body.id, '--selector', 'role=printer'])).toMatchObject({
      code: 0,
      stdout: 'Device group of kiosk: role=printer matches no agent: nothing is bound; 0 bound, 1 removed\n',
    });
    const json = JSON.parse((await run(['app', 'device-group', 'kiosk', '--clear', '--json'])).stdout);
    expect(json).toMatchObject({
      slug: 'kiosk',
      deviceSelector: null,
      deviceGroup: { matching: 0, bound: 0, unbound: 0 },
    });

    // Refused before any call: a selector that does not parse (a caret under the spot), an empty one, both flags.
    expect(await run(['app', 'device-group', 'kiosk', '--selector', 'role in kiosk'])).toMatchObject({
      code: 2,
      stderr:
        "drover: --selector: not a label selector: at position 8: expected '(', found 'kiosk'\n  role in kiosk\n          ^\n",
    });
    expect(await run(['app', 'device-group', 'kiosk', '--selector', ' '])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^drover: --selector: must select by at least one label/),
    });
    expect(await run(['app', 'device-group', 'kiosk', '--selector', 'x', '--clear'])).toMatchObject({
      code: 2,
      stderr: 'drover: give --selector or --clear, not both\n',
    });
    expect(await run(['app', 'device-group', 'nope', '--clear'])).toMatchObject({
      code: 2,
      stderr:
        "drover: no application `nope` in the organization: create it with `drover app create nope --workflow <update-workflow>` or on the dashboard's Updates page (`drover app list` lists the organization's applications)\n",
    });
  });

  it("sets, changes, shows and clears an application's maintenance window; refusals name the field", async () => {
    const app = await t.owner.post(`/orgs/${t.orgId}/apps`, {
      body: { slug: 'screens', updateWorkflowName: 'update' },
    });
    expect(app.status, app.text).toBe(201);
    const none = await run(['app', 'window', 'screens']);
    expect(none).toMatchObject({
      code: 0,
      stdout: 'screens has no maintenance window: updates start as soon as a release is published.\n',
    });
    expect(await run(['app', 'window', 'screens', '--timezone', 'Europe/Berlin'])).toMatchObject({
      code: 2,
      stderr: 'drover: screens has no maintenance window yet: give at least --cron and --duration\n',
    });
    const set = await run([
      'app',
      'window',
      'screens',
      '--cron',
      '0 2 * * *',
      '--timezone',
      'Europe/Berlin',
      '--duration',
      '2h',
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      /^Maintenance window of screens: `0 2 \* \* \*` in Europe\/Berlin, open 120 min\n.*\nNext windows:\n( {2}\d{4}-\d\d-\d\d \d\d:00 UTC to .* \(opens \d{4}-\d\d-\d\d 02:00 Europe\/Berlin\)\n){3}$/,
    );
    // One option changes one field; the others stay.
    const longer = await run(['app', 'window', app.body.id, '--duration', '150', '--json']);
    expect(JSON.parse(longer.stdout).maintenanceWindow).toEqual({
      cron: '0 2 * * *',
      timezone: 'Europe/Berlin',
      durationMinutes: 150,
    });
    expect(await run(['app', 'window', 'screens', '--timezone', 'Mars/Olympus'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^drover: body\.maintenanceWindow\.timezone: must be an IANA time zone name/),
    });
    expect(await run(['app', 'window', 'screens', '--duration', '90s'])).toMatchObject({
      code: 2,
      stderr: 'drover: --duration: expected whole minutes, got `90s`\n',
    });
    expect(await run(['app', 'window', 'screens', '--clear', '--cron', '* * * * *'])).toMatchObject({ code: 2 });
    const cleared = await run(['app', 'window', 'screens', '--clear']);
    expect(cleared.stdout).toBe(
      'screens has no maintenance window: updates start as soon as a release is published.\n',
    );
    expect((await t.owner.get(`/orgs/${t.orgId}/apps/${app.body.id}`)).body.maintenanceWindow).toBeNull();
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=app.update`);
    expect(audit.body.filter((e: { targetId: string }) => e.targetId === app.body.id)).toHaveLength(3);
  });

  it("works in the user's only organization, and asks for --org once there are several", async () => {
    const other = await t.owner.post('/orgs', { body: { name: 'lab' } });
    expect(other.status).toBe(201);
    const ambiguous = await run(['trigger', 'list']);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toBe(
      `drover: you belong to 2 organizations (acme: ${t.orgId}, lab: ${other.body.id}); choose one with --org or DROVER_ORG\n`,
    );
    expect((await run(['trigger', 'list', '--org', 'lab'])).stdout).toBe('No triggers.\n');
    expect((await run(['agents', '--json'], { DROVER_ORG: 'acme' })).stdout).toContain(agent.agentId);
  });

  it("shows the organization's retention and changes it (`default`: the coordinator's value again); refusals name the option or the field", async () => {
    const shown = await run(['org', 'retention', '--org', 'acme']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(
        [
          '^KEPT +FOR +SET BY',
          'ended jobs +90 days +coordinator default',
          'failed jobs +180 days +coordinator default',
          'audit entries +365 days +coordinator default',
          'cron occurrences +30 days +coordinator default',
          '',
          t.coordinator.database === 'sqlite'
            ? 'Database: +SQLite, [\\d.]+ [KMG]?B on disk, [\\d.]+ [KMG]?B of it free inside the file \\(VACUUM gives that back to the disk\\)'
            : 'Database: +PostgreSQL, [\\d.]+ [KMG]?B on disk',
          'Last sweep: +',
        ].join('\n'),
      ),
    );

    const changed = await run(['org', 'retention', '--org', 'acme', '--jobs-days', '30', '--audit-days', '730']);
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout).toMatch(
      new RegExp(
        [
          '^Changed the retention of acme; the next sweep deletes what is older.',
          'KEPT +FOR +SET BY',
          'ended jobs +30 days +organization \\(coordinator default 90 days\\)',
          'failed jobs +180 days +coordinator default',
          'audit entries +730 days +organization \\(coordinator default 365 days\\)',
          'cron occurrences +30 days +coordinator default\n$',
        ].join('\n'),
      ),
    );
    const json = JSON.parse((await run(['org', 'retention', '--org', t.orgId, '--json'])).stdout);
    const view = (await t.owner.get(`/orgs/${t.orgId}/retention`)).body;
    expect(json).toMatchObject({ retention: view.retention, overrides: view.overrides, defaults: view.defaults });
    expect(view.overrides).toEqual({ jobsDays: 30, failedJobsDays: null, auditDays: 730, occurrencesDays: null });

    const reset = await run(['org', 'retention', '--org', 'acme', '--jobs-days', 'default', '--json']);
    expect(JSON.parse(reset.stdout)).toMatchObject({
      id: t.orgId,
      name: 'acme',
      retention: { jobsDays: 90, failedJobsDays: 180, auditDays: 730, occurrencesDays: 30 },
    });

    // Refused: what is no whole number before any call, the rest by the coordinator naming the field.
    expect(await run(['org', 'retention', '--org', 'acme', '--failed-jobs-days', '2.5'])).toMatchObject({
      code: 2,
      stderr: 'drover: --failed-jobs-days: expected a whole number of days or `default`, got `2.5`\n',
    });
    expect(await run(['org', 'retention', '--org', 'acme', '--occurrences-days', '0'])).toMatchObject({
      code: 2,
      stderr:
        "drover: body.retention.occurrencesDays: expected a whole number of days from 1 to 3650, or null for the coordinator's setting; got 0\n",
    });

    // A member reads it, and may not change it.
    await addUser(t.owner, t.orgId, 'reader@example.test');
    const reader = { ...env, XDG_CONFIG_HOME: path.join(work, 'reader-config') };
    const login = await drover(['login', '--email', 'reader@example.test', '--password-stdin'], {
      env: reader,
      input: `${MEMBER_PASSWORD}\n`,
    });
    expect(login.code, login.stderr).toBe(0);
    const read = await drover(['org', 'retention'], { env: reader, cwd: work });
    expect(read.stdout).toMatch(/\naudit entries +730 days +organization \(coordinator default 365 days\)\n/);
    expect(await drover(['org', 'retention', '--audit-days', 'default'], { env: reader, cwd: work })).toMatchObject({
      code: 2,
      stderr: 'drover: Only an owner of the organization can do this\n',
    });
    expect((await run(['org', 'retention', '--org', 'acme', '--audit-days', 'default'])).code).toBe(0);
  });
});

describe('drover agents --selector and drover agent label', () => {
  let gateway: string;
  let kiosk: string;
  beforeAll(async () => {
    const gw = await enrollTestAgent(t.owner, t.orgId, { hostname: 'gw-berlin-1' });
    const ki = await enrollTestAgent(t.owner, t.orgId, { hostname: 'kiosk-munich-1' });
    gateway = gw.agentId;
    kiosk = ki.agentId;
    for (const [a, labels] of [
      [gw, { site: 'berlin', role: 'gateway', os: 'linux', arch: 'arm64' }],
      [ki, { site: 'munich', role: 'kiosk', os: 'linux', arch: 'x64' }],
    ] as const) {
      const res = await a.request('PUT', '/v1/agent/labels', { labels });
      if (res.status !== 200) throw new Error(`labels: ${res.status} ${res.text}`);
    }
  });
  // The organization made by a test above is a second one of the owner's.
  const inAcme = (args: string[]) => run(args, { DROVER_ORG: 'acme' });
  const operatorLabels = async (id: string) =>
    (await t.owner.get(`/orgs/${t.orgId}/agents/${id}`)).body.operatorLabels as Record<string, string>;

  it('lists the agents a selector matches, with their labels, and the API answer with --json', async () => {
    const table = await inAcme(['agents', '--selector', 'site in (berlin,hamburg),role=gateway']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(
      new RegExp(
        `^ID +NAME +STATUS +LAST SEEN +HOSTNAME +OS +VERSION +LABELS\n` +
          `${gateway} +gw-berlin-1 +pending .+ +arch=arm64,os=linux,role=gateway,site=berlin\n$`,
      ),
    );
    const selector = 'role notin (gateway)';
    const json = await inAcme(['agents', '--selector', selector, '--json']);
    const api = await t.owner.get(`/orgs/${t.orgId}/agents?selector=${encodeURIComponent(selector)}`);
    expect(JSON.parse(json.stdout)).toEqual(api.body);
    // notin matches the agent without a role too (daemon-test reported no labels).
    expect(api.body.map((a: { id: string }) => a.id)).toEqual([kiosk, agent.agentId]);
    expect(await inAcme(['agents', '--selector', 'site=paris'])).toMatchObject({
      code: 0,
      stdout: 'No agent matches.\n',
    });
  });

  it('pages the agents with --limit, narrowed by --status and --name, saying the command for the next page', async () => {
    const selector = 'role in (gateway,kiosk)';
    const ids = (stdout: string) => (JSON.parse(stdout) as { id: string }[]).map((a) => a.id);
    const first = await inAcme(['agents', '--selector', selector, '--limit', '1', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(ids(first.stdout)).toEqual([kiosk]);
    // The selector quoted for a shell, as the command is to be pasted.
    const next =
      /^More agents follow: drover agents --selector 'role in \(gateway,kiosk\)' --limit 1 --cursor (\d+)\n$/.exec(
        first.stderr,
      );
    expect(next, first.stderr).not.toBeNull();
    const second = await inAcme(['agents', '--selector', selector, '--limit', '1', '--cursor', next![1]!, '--json']);
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(ids(second.stdout)).toEqual([gateway]);
    expect(ids((await inAcme(['agents', '--name', 'GW-berlin', '--status', 'pending', '--json'])).stdout)).toEqual([
      gateway,
    ]);
    expect(await inAcme(['agents', '--name', 'gw', '--status', 'connected'])).toEqual({
      code: 0,
      stdout: 'No agent matches.\n',
      stderr: '',
    });
    expect(await inAcme(['agents', '--status', 'online'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: --status: expected one of pending, connected, disconnected, revoked, got `online`\n',
    });
    expect((await inAcme(['agents', '--limit', '501'])).stderr).toBe(
      'drover: --limit: expected an integer from 1 to 500, got `501`\n',
    );
  });

  it("prints the coordinator's refusal of a bad selector with a caret under the position, and exits 2", async () => {
    expect(await inAcme(['agents', '--selector', 'site in berlin'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "drover: querystring.selector: not a label selector: at position 8: expected '(', found 'berlin'\n" +
        '  site in berlin\n' +
        '          ^\n',
    });
    const bad = await inAcme(['agents', '--selector', 'role=gateway,Site']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'drover: querystring.selector: not a label selector: at position 13: "Site" is not a label key: 1 to 63 ' +
        "lowercase letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit\n" +
        '  role=gateway,Site\n' +
        '               ^\n',
    );
  });

  it("shows an agent's labels, sets and removes operators' labels (audited), and clears them", async () => {
    expect(await inAcme(['agent', 'label', 'gw-berlin-1'])).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'KEY   VALUE    SOURCE\narch  arm64    reported\nos    linux    reported\nrole  gateway  reported\nsite  berlin   reported\n',
    });

    const set = await inAcme(['agent', 'label', 'gw-berlin-1', 'site=hamburg', 'tier=gold', 'rack=r4']);
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toBe(
      [
        'KEY   VALUE    SOURCE',
        'arch  arm64    reported',
        'os    linux    reported',
        'rack  r4       operator',
        'role  gateway  reported',
        'site  hamburg  operator (reported: berlin)',
        'tier  gold     operator',
        '',
      ].join('\n'),
    );
    expect(await operatorLabels(gateway)).toEqual({ rack: 'r4', site: 'hamburg', tier: 'gold' });
    // The new selection sees it at once.
    expect((await inAcme(['agents', '--selector', 'site=hamburg'])).stdout).toContain(gateway);

    // By id; key- removes, a key it does not have is said and skipped, one the agent reports stays.
    const removed = await inAcme([
      'agent',
      'label',
      gateway,
      'site-',
      'rack-',
      'zone-',
      'os-',
      'tier=silver',
      '--json',
    ]);
    expect(removed.code).toBe(0);
    expect(removed.stderr).toBe(
      'drover: the agent has no label zone to remove\n' +
        "drover: the agent reports os itself: an operator's label can override it, not remove it\n",
    );
    expect(JSON.parse(removed.stdout)).toEqual((await t.owner.get(`/orgs/${t.orgId}/agents/${gateway}`)).body);
    expect(await operatorLabels(gateway)).toEqual({ tier: 'silver' });

    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.labels`);
    expect(audit.body.map((e: { metadata: unknown }) => e.metadata)).toEqual([
      { from: { rack: 'r4', site: 'hamburg', tier: 'gold' }, to: { tier: 'silver' } },
      { from: {}, to: { rack: 'r4', site: 'hamburg', tier: 'gold' } },
    ]);

    const cleared = await inAcme(['agent', 'label', 'gw-berlin-1', '--clear', 'zone=a']);
    expect(cleared.code).toBe(0);
    expect(await operatorLabels(gateway)).toEqual({ zone: 'a' });
    expect((await inAcme(['agent', 'label', 'gw-berlin-1', '--clear'])).stdout).not.toContain('operator');
    expect(await operatorLabels(gateway)).toEqual({});
  });

  it('refuses bad items before any call, an unknown agent, and what the coordinator refuses (422)', async () => {
    const auditCount = async () => (await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.labels`)).body.length;
    const before = await auditCount();
    expect(await inAcme(['agent', 'label', 'gw-berlin-1', 'site=a b'])).toEqual({
      code: 2,
      stdout: '',
      stderr: `drover: "a b" is not a label value: up to 63 letters, digits, '.', '_' or '-'\n`,
    });
    expect(await inAcme(['agent', 'label', 'gw-berlin-1', 'site'])).toMatchObject({
      code: 2,
      stderr: 'drover: "site" is not a label change: expected key=value to set a label, or key- to remove one\n',
    });
    expect(await inAcme(['agent', 'label', 'nope', 'site=x'])).toMatchObject({
      code: 2,
      stderr: 'drover: no agent `nope` in the organization\n',
    });
    expect(await inAcme(['agent', 'label', '00000000-0000-4000-8000-000000000000'])).toMatchObject({
      code: 2,
      stderr: 'drover: Agent not found\n',
    });
    const tooMany = Array.from({ length: 33 }, (_, i) => `k${i}=v`);
    expect(await inAcme(['agent', 'label', 'kiosk-munich-1', ...tooMany])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'drover: body.labels: at most 32 labels, got 33\n',
    });
    expect(await operatorLabels(kiosk)).toEqual({});
    expect(await auditCount()).toBe(before);
  });

  it('labels every agent a selector matches, says what would change with --dry-run, and skips those that have them', async () => {
    const selector = 'role in (gateway,kiosk)';
    const dry = await inAcme(['agents', 'label', selector, 'ring=canary', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.split('\n').map((line) => line.split(/ {2,}/))).toEqual([
      ['AGENT', "OPERATORS' LABELS BEFORE", 'AFTER'],
      ['kiosk-munich-1', '-', 'ring=canary'],
      ['gw-berlin-1', '-', 'ring=canary'],
      [''],
    ]);
    expect(dry.stderr).toBe(`Would change 2 of 2 agents matching ${selector}; nothing was changed\n`);
    expect(await operatorLabels(gateway)).toEqual({});

    expect((await inAcme(['agent', 'label', 'kiosk-munich-1', 'ring=canary'])).code).toBe(0);
    const done = await inAcme(['agents', 'label', selector, 'ring=canary']);
    expect(done).toEqual({
      code: 0,
      stdout: "AGENT        OPERATORS' LABELS BEFORE  AFTER\ngw-berlin-1  -                         ring=canary\n",
      stderr: `Labelled 1 of 2 agents matching ${selector} (1 has the labels already)\n`,
    });
    expect(await operatorLabels(gateway)).toEqual({ ring: 'canary' });

    const removed = await inAcme(['agents', 'label', 'ring=canary', 'ring-', '--json']);
    expect(removed.stderr).toBe('Labelled 2 of 2 agents matching ring=canary\n');
    expect(JSON.parse(removed.stdout)).toMatchObject({ matching: 2, changed: 2, dryRun: false });
    expect(JSON.parse(removed.stdout).agents.map((a: { id: string }) => a.id)).toEqual([kiosk, gateway]);
    expect([await operatorLabels(kiosk), await operatorLabels(gateway)]).toEqual([{}, {}]);
    expect(await inAcme(['agents', 'label', 'ring=canary', 'ring-'])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'Labelled 0 of 0 agents matching ring=canary\n',
    });

    // Refused before any change: a selector that does not parse, or selects nothing, the list's options.
    expect(await inAcme(['agents', 'label', 'site in berlin', 'x=y'])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringContaining("expected '('"),
    });
    expect(await inAcme(['agents', 'label', '', 'x=y'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^drover: selector: expected at least one label requirement/),
    });
    expect(await inAcme(['agents', 'label', 'role=kiosk', '--status', 'pending', 'x=y'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: --status is an option of `drover agents`, not of `drover agents label`\n',
    });
    expect(await operatorLabels(kiosk)).toEqual({});
  });
});

const MATCH_EDGE =
  'Selector:   role=edge\n' +
  'Matches:    3 agents: edge-1, edge-2, edge-3\n' +
  'Workflow:   rotate: 1 of them do not report it (their jobs would be rejected): edge-3\n' +
  'Version:    v1 (no params)\n' +
  'Workflows:  other, rotate\n';

describe('drover batches: selector triggers, drover run on them, drover batch', () => {
  const edges: Record<string, TestAgent> = {};
  const triggers: Record<string, string> = {};
  let token: string;
  const inAcme = (args: string[], extra: Record<string, string> = {}) => run(args, { DROVER_ORG: 'acme', ...extra });
  const detail = async (batchId: string) => (await t.owner.get(`/batches/${batchId}`)).body;
  const move = (agent: TestAgent, jobId: string, step: string, body?: unknown) =>
    agent.request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);
  /** Runs the batch's jobs as their agents would, each ending as `ends` says (by agent name). */
  const runJobs = async (batchId: string, ends: Record<string, 'success' | 'failed'>) => {
    const batch = await detail(batchId);
    for (const [name, status] of Object.entries(ends)) {
      const { jobId } = batch.jobs.find((j: { agentName: string }) => j.agentName === name);
      expect((await move(edges[name]!, jobId, 'accept')).status).toBe(200);
      expect((await move(edges[name]!, jobId, 'start')).status).toBe(200);
      const finished = finishBody({ status, exitCode: status === 'success' ? 0 : 1, errorMessage: null });
      expect((await move(edges[name]!, jobId, 'finish', finished)).status).toBe(200);
    }
  };
  const newestBatch = (triggerId: string) =>
    eventually(async () => {
      const [newest] = (await t.owner.get(`/orgs/${t.orgId}/batches?limit=1`)).body;
      return newest?.triggerId === triggerId ? (newest.id as string) : null;
    });

  beforeAll(async () => {
    for (const [name, labels, workflowName] of [
      ['edge-1', { role: 'edge' }, 'rotate'],
      ['edge-2', { role: 'edge' }, 'rotate'],
      ['edge-3', { role: 'edge', hw: 'old' }, 'other'],
    ] as const) {
      const a = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      expect(
        (await a.request('PUT', '/v1/agent/labels', { labels: { os: 'linux', arch: 'x64', ...labels } })).status,
      ).toBe(200);
      expect((await a.putWorkflows([workflow(workflowName)])).status).toBe(200);
      edges[name] = a;
    }
  });

  it('creates selector triggers, the selector checked before any call, and lists them with it', async () => {
    const created = await inAcme([
      'trigger',
      'create',
      '--name',
      'fleet',
      '--selector',
      'role=edge',
      '--workflow',
      'rotate',
    ]);
    expect(created.code).toBe(0);
    triggers.fleet = created.stdout.trim();
    expect(created.stderr).toBe(
      'Created the async trigger fleet on the agents role=edge selects (a batch: one job each; 3 agents now); ' +
        `run it with: drover run ${triggers.fleet}\n`,
    );
    expect((await t.owner.get(`/orgs/${t.orgId}/triggers/${triggers.fleet}`)).body).toMatchObject({
      agentId: null,
      agentSelector: 'role=edge',
      fanout: 'all',
      maxParallel: null,
      workflowName: 'rotate',
    });
    const sync = await inAcme([
      'trigger',
      'create',
      '--name',
      'fleet-sync',
      '--selector',
      'role=edge, hw!=old',
      '--fanout',
      'all',
      '--max-parallel',
      '2',
      '--workflow',
      'rotate',
      '--sync',
      '--response-timeout',
      '30s',
    ]);
    expect(sync.code).toBe(0);
    triggers.sync = sync.stdout.trim();
    expect(sync.stderr).toContain(
      ' on the agents role=edge,hw!=old selects (a batch: one job each, 2 at a time; 2 agents now)',
    );

    // A pool: each run one job, on one of the agents with room.
    const pool = await inAcme([
      'trigger',
      'create',
      '--name',
      'pool',
      '--selector',
      'role=edge',
      '--fanout',
      'one',
      '--workflow',
      'rotate',
    ]);
    expect(pool.code).toBe(0);
    const poolId = pool.stdout.trim();
    expect(pool.stderr).toBe(
      'Created the async trigger pool on the agents role=edge selects (a pool: one job per run, on one of them ' +
        `with room; 3 agents now); run it with: drover run ${poolId}\n`,
    );
    expect((await t.owner.get(`/orgs/${t.orgId}/triggers/${poolId}`)).body).toMatchObject({
      agentSelector: 'role=edge',
      fanout: 'one',
      maxParallel: null,
    });

    const list = await inAcme(['trigger', 'list']);
    expect(list.stdout).toMatch(
      new RegExp(`\n${triggers.fleet} +fleet +webhook +async +rotate +role=edge \\(all\\)\n`),
    );
    expect(list.stdout).toMatch(new RegExp(`\n${poolId} +pool +webhook +async +rotate +role=edge \\(one\\)\n`));
    expect(list.stdout).toMatch(
      new RegExp(`\n${triggers.sync} +fleet-sync +webhook +sync +rotate +role=edge,hw!=old \\(all, 2 at a time\\)\n`),
    );
    expect((await inAcme(['trigger', 'delete', poolId])).code).toBe(0);

    // A selector that does not parse: refused here, nothing sent. One that parses is the coordinator's to judge.
    const before = (await t.owner.get(`/orgs/${t.orgId}/triggers`)).body.length;
    expect(
      await inAcme(['trigger', 'create', '--name', 'x', '--selector', 'role in edge', '--workflow', 'rotate']),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "drover: --selector: not a label selector: at position 8: expected '(', found 'edge'\n" +
        '  role in edge\n' +
        '          ^\n',
    });
    expect(await inAcme(['trigger', 'create', '--name', 'x', '--selector', ' ', '--workflow', 'rotate'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: body.agentSelector: must select by at least one label (to reach every agent, select one they all ' +
        'have, such as `os`)\n',
    });
    expect(
      await inAcme(['trigger', 'create', '--name', 'x', '--selector', 'role=edge', '--any-workflow']),
    ).toMatchObject({ code: 2, stderr: expect.stringMatching(/^drover: body\.scopeType: must be "workflow" /) });
    expect((await t.owner.get(`/orgs/${t.orgId}/triggers`)).body).toHaveLength(before);

    token = (await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [triggers.fleet, triggers.sync] }]))
      .token;
  });

  it('says what a selector matches now, and what a selector trigger would reach, without running it', async () => {
    const matched = await inAcme(['agents', 'match', 'role=edge', '--workflow', 'rotate']);
    expect(matched).toEqual({
      code: 0,
      stdout: MATCH_EDGE,
      stderr: '',
    });
    const json = await inAcme(['agents', 'match', 'role=edge', '--workflow', 'rotate', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(
      (await t.owner.get(`/orgs/${t.orgId}/selector-matches?selector=role%3Dedge&workflowName=rotate`)).body,
    );
    expect(JSON.parse(json.stdout)).toMatchObject({ matching: 3, lacking: 1, lackingNames: ['edge-3'] });
    expect((await inAcme(['agents', 'match', 'role=edge', '--workflow', 'rotat'])).stdout).toContain(
      'Workflow:   rotat: none of them reports it (their jobs would be rejected) (did you mean rotate?)\n',
    );
    expect(await inAcme(['agents', 'match', 'role=edge,hw!=old'])).toEqual({
      code: 0,
      stdout: 'Selector:   role=edge,hw!=old\nMatches:    2 agents: edge-1, edge-2\nWorkflows:  rotate\n',
      stderr: '',
    });
    expect(await inAcme(['agents', 'match', 'role=nothing'])).toEqual({
      code: 0,
      stdout: 'Selector:  role=nothing\nMatches:   no agent now\n',
      stderr: '',
    });

    // A selector trigger's page says what a run would reach now.
    const shown = await inAcme(['trigger', 'show', 'fleet']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      /\nA run now:\n {2}Matches: +3 agents: edge-1, edge-2, edge-3\n {2}Workflow: +rotate: 1 of them/,
    );

    // Refused before any call (no coordinator listens there); an API token has no such read.
    const offline = { DROVER_ORG: 'acme', DROVER_URL: 'http://127.0.0.1:9' };
    expect(await run(['agents', 'match', 'role in edge'], offline)).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "drover: selector: not a label selector: at position 8: expected '(', found 'edge'\n  role in edge\n          ^\n",
    });
    expect(await run(['agents', 'match', ' '], offline)).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "drover: selector: expected at least one label requirement, e.g. 'role=gateway', got nothing (to reach every " +
        'agent, select a label they all have, such as os)\n',
    });
    // The list's options narrow nothing here: refused rather than ignored.
    expect(await run(['agents', 'match', 'role=edge', '--limit', '5'], offline)).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: --limit is an option of `drover agents`, not of `drover agents match`\n',
    });
    expect(await run(['agents', 'match', 'role=edge', '--workflow', ''], offline)).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'drover: --workflow: expected a workflow name of 1 to 128 characters, got ``\n',
    });
    expect(
      await run(['agents', 'match', 'role=edge'], { DROVER_TOKEN: token, XDG_CONFIG_HOME: '/nonexistent' }),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: this command needs a session: sign in with `drover login --email <email>` or `drover login --browser`\n',
    });
  });

  it('follows an async batch with the session to its end, each job as it ends, and exits 1 when one failed', async () => {
    const waiting = spawnDrover(['run', triggers.fleet!, '--wait'], { env: { ...env, DROVER_ORG: 'acme' } });
    try {
      const batchId = await eventually(
        () => /^Batch ([0-9a-f-]{36}): pending, 3 jobs\n/.exec(waiting.output().stdout)?.[1],
        20_000,
        'the batch',
      );
      await runJobs(batchId, { 'edge-1': 'success', 'edge-2': 'failed' });
      const res = await waiting.exited;
      expect(res.code).toBe(1);
      expect(res.stdout).toBe(
        [
          `Batch ${batchId}: pending, 3 jobs`,
          `${t.url}/api/batches/${batchId}`,
          `Batch ${batchId}: partial (1 success, 1 failed, 1 rejected)`,
          'AGENT   STATUS    EXIT  ERROR',
          'edge-1  success   0     -',
          'edge-2  failed    1     -',
          'edge-3  rejected  -     Agent edge-3 does not report the workflow `rotate`',
          '',
        ].join('\n'),
      );
      expect(res.stderr).toMatch(
        /^edge-3 \(job #\d+\) was rejected: Agent edge-3 does not report the workflow `rotate`$/m,
      );
      expect(res.stderr).toMatch(/^edge-1 \(job #\d+\) succeeded in [\d.]+s$/m);
      expect(res.stderr).toMatch(/^edge-2 \(job #\d+\) failed \(exit code 1\) in [\d.]+s$/m);
    } finally {
      await stopDrover(waiting);
    }
  });

  it("prints a sync selector trigger's answer with an API token, exit 0 when every job succeeded", async () => {
    const call = run(['run', triggers.sync!, '--wait'], { DROVER_TOKEN: token });
    const batchId = await newestBatch(triggers.sync!);
    await runJobs(batchId, { 'edge-1': 'success', 'edge-2': 'success' });
    const res = await call;
    expect(res).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        `Batch ${batchId}: success (2 success)`,
        `${t.url}/api/batches/${batchId}`,
        'AGENT   STATUS   EXIT  ERROR',
        'edge-1  success  0     -',
        'edge-2  success  0     -',
        '',
      ].join('\n'),
    });
  });

  it('says plainly that an API token alone cannot follow an async batch, which runs on', async () => {
    const res = await run(['run', triggers.fleet!, '--wait'], {
      DROVER_TOKEN: token,
      XDG_CONFIG_HOME: path.join(work, 'no-session'),
    });
    expect(res.code).toBe(2);
    const batchId = /^Batch ([0-9a-f-]{36}): pending, 3 jobs\n/.exec(res.stdout)![1]!;
    expect(res.stderr).toBe(
      'drover: --wait on an async selector trigger needs a session to follow its batch (drover login), or a sync ' +
        `trigger, whose answer waits for every job; batch ${batchId} keeps running\n`,
    );
    expect((await detail(batchId)).status).toBe('pending');
  });

  it('lists the batches newest first page by page, shows one, and cancels one', async () => {
    const api = (await t.owner.get(`/orgs/${t.orgId}/batches`)).body;
    expect(api.map((b: { status: string }) => b.status)).toEqual(['pending', 'success', 'partial']);
    const [open, done, partial] = api.map((b: { id: string }) => b.id);

    const page = await inAcme(['batch', 'list', '--limit', '2']);
    expect(page.code).toBe(0);
    const lines = page.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID +NUMBER +STATUS +WORKFLOW +SELECTOR +JOBS +CREATED +TOOK$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${open} +#3 +pending +rotate +role=edge +3: 2 pending, 1 rejected +\\S+ ago +-$`),
    );
    expect(lines[2]).toMatch(
      new RegExp(`^${done} +#2 +success +rotate +role=edge,hw!=old +2: 2 success +\\S+ ago +[\\d.]+s$`),
    );
    expect(lines).toHaveLength(4);
    expect(page.stderr).toBe('More batches follow: drover batch list --limit 2 --cursor 2\n');
    const next = await inAcme(['batch', 'list', '--limit', '2', '--cursor', '2', '--json']);
    expect(next).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(next.stdout)).toEqual(api.slice(2));
    // One trigger's batches; the jobs of one batch.
    const ofFleet = await inAcme(['batch', 'list', '--trigger', triggers.fleet!, '--json']);
    expect(ofFleet).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(ofFleet.stdout).map((b: { id: string }) => b.id)).toEqual([open, partial]);
    const jobs = await inAcme(['jobs', '--batch', partial, '--json']);
    expect(jobs).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(jobs.stdout)).toEqual((await t.owner.get(`/orgs/${t.orgId}/jobs?batchId=${partial}`)).body);
    expect(JSON.parse(jobs.stdout)).toHaveLength(3);

    const shown = await run(['batch', 'show', partial]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^Batch: +${partial} \\(#1\\)\nStatus: +partial \\(1 success, 1 failed, 1 rejected\\)\nWorkflow: +rotate\n` +
          `Selector: +role=edge\nMax parallel: +all at once\nTrigger: +${triggers.fleet}\nSource: +manual\n`,
      ),
    );
    expect(shown.stdout).toMatch(
      /\n\nAGENT +JOB +STATUS +EXIT +TOOK +ERROR\nedge-1 +[0-9a-f-]{36} +success +0 +[\d.]+s +-\n/,
    );
    expect(JSON.parse((await run(['batch', 'show', partial, '--json'])).stdout)).toEqual(await detail(partial));

    const cancelled = await run(['batch', 'cancel', open]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toMatch(
      new RegExp(`^Cancelled 2 jobs of batch ${open}\nBatch ${open}: failed \\(2 cancelled, 1 rejected\\)\nAGENT `),
    );
    expect((await t.owner.get(`/orgs/${t.orgId}/audit?action=batch.cancel`)).body[0]).toMatchObject({ targetId: open });
    expect(await run(['batch', 'cancel', open])).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(new RegExp(`^Batch ${open} had ended: nothing to cancel\n`)),
    });
    // Waiting for a batch that ended answers at once, with its outcome.
    expect((await run(['batch', 'show', open, '--wait'])).code).toBe(1);
    expect((await run(['batch', 'show', done, '--wait'])).code).toBe(0);
    expect(await run(['batch', 'show', '00000000-0000-4000-8000-000000000000'])).toMatchObject({
      code: 2,
      stderr: 'drover: Batch not found\n',
    });
  });
});

describe('drover release publish --waves and drover rollout', () => {
  const inAcme = (args: string[]) => run(args, { DROVER_ORG: 'acme' });

  it('publishes wave by wave (a bad plan refused naming the options), shows the rollout, and moves it', async () => {
    const app = await t.owner.post(`/orgs/${t.orgId}/apps`, { body: { slug: 'gw', updateWorkflowName: 'update' } });
    expect(app.status, app.text).toBe(201);
    // Two devices that never report: each wave's device stays pending, so only moves change the rollout.
    const devices = [
      await enrollTestAgent(t.owner, t.orgId, { hostname: 'rollout-1' }),
      await enrollTestAgent(t.owner, t.orgId, { hostname: 'rollout-2' }),
    ];
    const bound = await t.owner.post(`/orgs/${t.orgId}/apps/${app.body.id}/devices`, {
      body: { agentIds: devices.map((d) => d.agentId) },
    });
    expect(bound.status, bound.text).toBe(201);
    fs.writeFileSync(path.join(work, 'gw-2.0.bin'), 'gateway two');
    const created = await inAcme(['release', 'create', '2.0', '--app', 'gw', '--artifact', 'gw-2.0.bin']);
    expect(created.code, created.stderr).toBe(0);

    const refused = await inAcme([
      'release',
      'publish',
      '2.0',
      '--app',
      'gw',
      '--waves',
      '50,10',
      '--soak',
      '0',
      '--max-failure-rate',
      '2',
    ]);
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: --waves: wave 2: expected waves in increasing order, got 10 after 50; ' +
        '--waves: expected the last wave to be 100 (every device), got 10; ' +
        '--max-failure-rate: expected a rate from 0 to 1, got 2\n',
    });
    const notNumbers = await inAcme(['release', 'publish', '2.0', '--app', 'gw', '--waves', '1,10', '--soak', '0']);
    expect(notNumbers).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^drover: --waves needs --max-failure-rate/),
    });
    expect(JSON.parse((await inAcme(['release', 'list', '--app', 'gw', '--json'])).stdout)[0].status).toBe('draft');

    const published = await inAcme([
      'release',
      'publish',
      '2.0',
      '--app',
      'gw',
      '--waves',
      '50,100',
      '--soak',
      '1h',
      '--max-failure-rate',
      '0.25',
      '--min-attempts',
      '2',
    ]);
    expect(published).toEqual({
      code: 0,
      stdout:
        'Release 2.0 (#1, optional) on channel stable: published\n' +
        'Rollout of 2.0 on channel stable: running, wave 1 of 2 (50%): 1 of 2 devices\n',
      stderr: 'Follow it with: drover rollout status 2.0 --app gw\n',
    });
    const json = JSON.parse((await inAcme(['rollout', 'status', '2.0', '--app', 'gw', '--json'])).stdout);
    expect(json).toMatchObject({
      status: 'running',
      deviceCount: 2,
      soakSeconds: 3600,
      maxFailureRate: 0.25,
      minAttempts: 2,
      waves: [
        { percent: 50, devices: 1, pending: 1 },
        { percent: 100, devices: 2, pending: 1, startedAt: null },
      ],
    });
    const status = await inAcme(['rollout', 'status', json.releaseId, '--app', 'gw']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('Status:     running, wave 1 of 2 (50%)\n');
    expect(status.stdout).toContain('Soak:       1h after each wave but the last\n');
    expect(status.stdout).toMatch(
      /\nWAVE +PERCENT +DEVICES +NEW +SUCCEEDED +FAILED +PENDING +STARTED +ENDED\n1 +50% +1 +1 +0 +0 +1 +20\S+ \S+ +-\n2 +100% +2 +1 +0 +0 +1 +- +-\n/,
    );
    expect(status.stdout).toMatch(
      /\nHistory:\nAT +EVENT +BY +DETAIL\n\S+ \S+ +start +owner@example\.test +2 devices in waves of 50, 100 %\n$/,
    );

    expect(await inAcme(['rollout', 'pause', '2.0', '--app', 'gw'])).toEqual({
      code: 0,
      stdout: 'Rollout of 2.0 on channel stable: paused by an operator in wave 1 of 2 (50%): 1 of 2 devices\n',
      stderr: '',
    });
    expect(await inAcme(['rollout', 'pause', '2.0', '--app', 'gw'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: Cannot pause a rollout that is paused; pause applies to a rollout that is running\n',
    });
    expect((await inAcme(['rollout', 'resume', '2.0', '--app', 'gw'])).stdout).toBe(
      'Rollout of 2.0 on channel stable: running, wave 1 of 2 (50%): 1 of 2 devices\n',
    );
    // The organization at a glance shows it in progress; --json is the API's answer.
    const glance = await inAcme(['overview']);
    expect(glance.code, glance.stderr).toBe(0);
    expect(glance.stdout).toMatch(/^Agents: {2}\d+ connected, \d+ disconnected, \d+ never connected, \d+ revoked\n/);
    expect(glance.stdout).toMatch(
      /\nJobs, last 24 h: {2}\d+ \(\d+ succeeded, \d+ failed, \d+ timed out, \d+ cancelled, \d+ rejected\); \d+ running now\n/,
    );
    expect(glance.stdout).toMatch(
      /\nRollouts in progress:\n {2}APP +VERSION +CHANNEL +STATUS +WAVE\n {2}gw +2\.0 +stable +running +1 of 2\n/,
    );
    const atGlance = JSON.parse((await inAcme(['overview', '--hours', '2', '--json'])).stdout);
    expect(atGlance.jobs.buckets).toHaveLength(2);
    expect(
      atGlance.rollouts.map((r: { applicationSlug: string; version: string }) => `${r.applicationSlug} ${r.version}`),
    ).toEqual(['gw 2.0']);
    expect(await inAcme(['overview', '--hours', '169'])).toMatchObject({
      code: 2,
      stderr: 'drover: --hours: expected an integer from 1 to 168, got `169`\n',
    });
    expect((await inAcme(['rollout', 'advance', '2.0', '--app', 'gw', '--wave', '1'])).stdout).toBe(
      'Rollout of 2.0 on channel stable: running, wave 2 of 2 (100%): 2 of 2 devices\n',
    );
    // The same advance again (a retry after a timeout): refused, nothing moves.
    expect(await inAcme(['rollout', 'advance', '2.0', '--app', 'gw', '--wave', '1'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: The rollout is at wave 2 of 2 now, not wave 1: read it again before you advance it\n',
    });
    const aborted = JSON.parse(
      (await inAcme(['rollout', 'abort', '2.0', '--app', 'gw', '--wave', '2', '--json'])).stdout,
    );
    expect(aborted).toMatchObject({ status: 'aborted', currentWave: 1 });
    expect(aborted.history.map((h: { event: string }) => h.event)).toEqual([
      'start',
      'pause',
      'resume',
      'advance',
      'abort',
    ]);
    expect(await inAcme(['rollout', 'advance', '2.0', '--app', 'gw'])).toMatchObject({
      code: 2,
      stderr:
        'drover: Cannot advance a rollout that is aborted; advance applies to a rollout that is running or paused\n',
    });
    // A release published at once has no rollout: the API's 404, in its words.
    expect(await inAcme(['rollout', 'status', '1.0', '--app', 'fw'])).toMatchObject({
      code: 2,
      stderr: 'drover: The release has no rollout (it was published at once, or is a draft)\n',
    });
  });
});

describe('drover completion', () => {
  const complete = (line: string) => {
    const words = line.split(' ');
    const script = [
      'source <(drover completion bash)',
      `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
      `COMP_CWORD=${words.length - 1}`,
      '_drover_complete',
      'printf "%s\\n" "${COMPREPLY[@]}"',
    ].join('\n');
    const bin = path.dirname(DROVER);
    return execFileSync('bash', ['-c', script], {
      encoding: 'utf8',
      env: { PATH: `${bin}:${process.env.PATH}`, HOME: work },
    }).trim();
  };

  it('completes commands, subcommands and options in bash', () => {
    expect(complete('drover fi')).toBe('files');
    expect(complete('drover files ')).toBe('upload\ndownload\nlist');
    expect(complete('drover run x --wa')).toBe('--wait\n--wait-timeout');
    expect(complete('drover --url http://x release p')).toBe('publish');
    expect(complete('drover run x --params-file ')).toBe('');
  });

  it('prints a zsh script and refuses other shells', async () => {
    const zsh = await run(['completion', 'zsh']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef drover\n/);
    expect(zsh.stdout).toContain('drover __complete -- ');
    expect(await run(['completion', 'fish'])).toMatchObject({
      code: 2,
      stderr: 'drover: expected the shell bash or zsh, got `fish`\n',
    });
  });
});

// Last in the file: these end the owner's sessions.
describe('drover password and drover logout --everywhere', () => {
  const NEW_PASSWORD = 'a new long passphrase';
  const sessionFile = () => path.join(work, 'config', 'drover', 'session.json');
  const storedToken = () => (JSON.parse(fs.readFileSync(sessionFile(), 'utf8')) as { token: string }).token;

  it('changes the password from standard input, never argv: the other sessions end, this one is renewed', async () => {
    expect(await run(['password'])).toMatchObject({
      code: 2,
      stderr:
        'drover: no terminal to ask the password on: pass --password-stdin (the current password, then the new one, one a line)\n',
    });
    expect(await drover(['password', '--password-stdin'], { env, input: `${OWNER_PASSWORD}\n` })).toMatchObject({
      code: 2,
      stderr: 'drover: --password-stdin: expected two lines (the current password, then the new one), got 1\n',
    });
    const wrong = await drover(['password', '--password-stdin'], { env, input: `not it\n${NEW_PASSWORD}\n` });
    expect(wrong).toMatchObject({ code: 2, stderr: 'drover: body.currentPassword: is not your current password\n' });

    const before = storedToken();
    const changed = await drover(['password', '--password-stdin'], {
      env,
      input: `${OWNER_PASSWORD}\n${NEW_PASSWORD}\n`,
    });
    expect(changed).toMatchObject({
      code: 0,
      stdout: `Changed the password of ${OWNER_EMAIL}; your other sessions are signed out\n`,
    });
    expect(storedToken()).not.toBe(before);
    expect((await t.owner.get('/orgs')).status).toBe(401); // another session of the owner
    expect((await t.api.get('/orgs', { token: before })).status).toBe(401);
    expect((await run(['trigger', 'list', '--org', 'acme'])).code).toBe(0); // the renewed one
  });

  it('signs out everywhere: every session of the user ends, and the file is deleted', async () => {
    const other = await t.api.login(OWNER_EMAIL, NEW_PASSWORD);
    const token = storedToken();
    const res = await run(['logout', '--everywhere']);
    expect(res).toMatchObject({ code: 0, stdout: `Signed out of every session of ${OWNER_EMAIL} on ${t.url}\n` });
    expect(fs.existsSync(sessionFile())).toBe(false);
    for (const ended of [token, other.token]) expect((await t.api.get('/orgs', { token: ended })).status).toBe(401);
    expect(await run(['logout', '--everywhere'])).toMatchObject({
      code: 2,
      stderr: 'drover: not signed in: sign in with `drover login` to sign out everywhere\n',
    });
  });
});
