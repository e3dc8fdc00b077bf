import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { droverInProcess as drover } from '../helpers/cli-binary.js';
import {
  makeTempDir,
  OWNER_EMAIL,
  OWNER_PASSWORD,
  startTestCoordinator,
  type TestCoordinator,
} from '../helpers/coordinator.js';

/**
 * `drover agent show|rename|revoke` against a real coordinator: one agent by name or id, what a
 * field technician's ticket needs of it, and the steps of retiring a machine from a script.
 */

let t: TestCoordinator;
let agent: TestAgent;
let work: string;
let env: Record<string, string>;

const run = (args: string[]) => drover(args, { env, cwd: work });

beforeAll(async () => {
  t = await startTestCoordinator();
  work = makeTempDir('drover-cli-agent-');
  env = { DROVER_URL: t.url, XDG_CONFIG_HOME: path.join(work, 'config') };
  const login = await drover(['login', '--email', OWNER_EMAIL, '--password-stdin'], {
    env,
    cwd: work,
    input: `${OWNER_PASSWORD}\n`,
  });
  if (login.code !== 0) throw new Error(`login: ${login.stderr}`);
  agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'till-07' });
  expect((await agent.putWorkflows([workflow('deploy', { version: '3' }), workflow('backup')])).status).toBe(200);
  const labelled = await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, {
    body: { labels: { site: 'berlin' } },
  });
  expect(labelled.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('drover agent show, rename and revoke', () => {
  it('shows an agent by name: status, machine, version, workflows and labels', async () => {
    const shown = await run(['agent', 'show', 'till-07']);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toContain(`ID:         ${agent.agentId}\nName:       till-07\nStatus:     `);
    expect(shown.stdout).toMatch(/\nHostname: +till-07\n/);
    expect(shown.stdout).toMatch(/\nWorkflows: +backup \(v1\), deploy \(v3\)\n/);
    expect(shown.stdout).toMatch(/\nKEY +VALUE +SOURCE\nsite +berlin +operator\n/);
    const json = await run(['agent', 'show', agent.agentId, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: agent.agentId,
      name: 'till-07',
      operatorLabels: { site: 'berlin' },
    });
  });

  it('renames an agent; a name the coordinator refuses is its 422', async () => {
    expect(await run(['agent', 'rename', 'till-07', 'till-07-berlin'])).toMatchObject({
      code: 0,
      stdout: `Renamed the agent till-07 to till-07-berlin (${agent.agentId})\n`,
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
      stdout: `Revoked the agent till-07-berlin (${agent.agentId}): the machine must enroll again, with a new enrollment token, to run jobs\n`,
    });
    expect((await agent.request('GET', '/v1/agent/me')).status).toBe(401);
    expect(await run(['agent', 'revoke', 'till-07-berlin'])).toMatchObject({
      code: 2,
      stderr: 'drover: no agent `till-07-berlin` in the organization\n',
    });
    const byId = await run(['agent', 'show', agent.agentId, '--json']);
    expect(JSON.parse(byId.stdout)).toMatchObject({ status: 'revoked' });
  });
});
