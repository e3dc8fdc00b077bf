import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { signedInHome } from './signed-in.js';

const A = '3f0c1d52-0000-4000-8000-00000000000a';
// Time-ordered ids, as agents have: enrolled in the same minute, they begin alike.
const B = '019ad1e0-7c2a-7000-8000-4f1c2b8e0a99';
const C = '019ad1e0-7c2a-7000-8000-9d3e4f5ac4e1';
const GONE = '99999999-0000-4000-8000-000000000000';

const agent = (id: string, name: string) => ({
  id,
  name,
  hostname: name,
  os: 'linux',
  agentVersion: '0.1.0',
  status: 'connected',
  lastSeenAt: null,
  enrolledAt: '2026-11-25T09:58:00.000Z',
});
const workflow = (agentId: string, name: string) => ({
  id: `${agentId.slice(-8)}-1111-4000-8000-000000000000`,
  agentId,
  name,
  description: null,
  version: null,
  paramsSchema: null,
});
const WORKFLOWS = [workflow(A, 'backup'), workflow(B, 'deploy'), workflow(C, 'deploy'), workflow(GONE, 'old')];

let api: FakeCoordinator | undefined;
let configHome: string | undefined;
afterEach(async () => {
  await api?.close();
  if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
});

const workflows = async () => {
  const rt = testRuntime({ env: { DROVER_URL: api!.url, DROVER_TOKEN: 'drv_x' } });
  const code = await runCli(['workflows'], rt);
  return { code, lines: rt.stdout().trimEnd().split('\n'), err: rt.stderr() };
};

describe('drover workflows', () => {
  it("names each workflow's agent, telling apart agents of the same name by the end of their id", async () => {
    api = await fakeCoordinator({
      'GET /v1/workflows': [200, WORKFLOWS],
      'GET /v1/agents': [200, [agent(A, 'edge-1'), agent(B, 'edge'), agent(C, 'edge')]],
    });
    const res = await workflows();
    expect(res.code).toBe(0);
    expect(res.lines.map((line) => line.replace(/ +/g, ' '))).toEqual([
      'NAME VERSION PARAMS AGENT DESCRIPTION',
      'backup - - edge-1 -',
      'deploy - - edge (…2b8e0a99) -',
      'deploy - - edge (…4f5ac4e1) -',
      `old - - ${GONE} -`,
    ]);
  });

  it("lists one agent's workflows with --agent, by name or id, among the agents the token reaches", async () => {
    api = await fakeCoordinator({
      'GET /v1/workflows': [200, WORKFLOWS],
      'GET /v1/agents': [200, [agent(A, 'edge-1'), agent(B, 'edge'), agent(C, 'edge')]],
    });
    const env = { DROVER_URL: api.url, DROVER_TOKEN: 'drv_x' };
    const names = async (value: string) => {
      const rt = testRuntime({ env });
      const code = await runCli(['workflows', '--agent', value, '--json'], rt);
      return {
        code,
        names: code === 0 ? JSON.parse(rt.stdout()).map((w: { agentId: string }) => w.agentId) : [],
        err: rt.stderr(),
      };
    };
    expect(await names('edge-1')).toEqual({ code: 0, names: [A], err: '' });
    expect(await names(C)).toEqual({ code: 0, names: [C], err: '' });
    expect(await names('edge')).toEqual({
      code: 2,
      names: [],
      err: 'drover: 2 agents are named `edge`: give the id\n',
    });
    expect(await names('edge-9')).toEqual({
      code: 2,
      names: [],
      err: 'drover: no agent `edge-9` in the organization\n',
    });
  });

  it('names the agents by id when it may not list them (a rate limit)', async () => {
    api = await fakeCoordinator({
      'GET /v1/workflows': [200, WORKFLOWS],
      'GET /v1/agents': [429, { statusCode: 429, error: 'Too Many Requests', message: 'slow down' }],
    });
    const res = await workflows();
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.lines[1]).toMatch(new RegExp(`^backup +- +- +${A} +-$`));
  });
});

describe('drover workflows --agent with a session', () => {
  const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
  const AGENTS = `/v1/orgs/${ORG}/agents`;
  const run = async (agentsAnswers: [number, unknown][]) => {
    let call = 0;
    api = await fakeCoordinator({
      'GET /v1/orgs': [200, [{ id: ORG, name: 'acme', role: 'owner' }]],
      [`GET ${AGENTS}`]: () => agentsAnswers[Math.min(call++, agentsAnswers.length - 1)]!,
      [`GET /v1/orgs/${ORG}/workflows`]: [200, [workflow(A, 'backup')]],
    });
    configHome = signedInHome(api.url, GONE);
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG } });
    const code = await runCli(['workflows', '--agent', 'edge-1', '--json'], rt);
    return {
      code,
      stderr: rt.stderr(),
      calls: api.calls.filter((c) => c.includes('/agents') || c.includes('/workflows')),
    };
  };

  it('finds the agent among those the coordinator selects by the name, and asks for its workflows alone', async () => {
    const res = await run([[200, [agent(A, 'edge-1'), agent(B, 'edge-10')]]]);
    expect(res).toEqual({
      code: 0,
      stderr: '',
      calls: [`GET ${AGENTS}?q=edge-1`, `GET /v1/orgs/${ORG}/workflows?agentId=${A}`],
    });
  });

  it('reads every agent from a coordinator that refuses the name as a filter (older than it)', async () => {
    const refused = {
      statusCode: 422,
      code: 'validation_failed',
      message: 'querystring must NOT have additional properties',
    };
    const res = await run([
      [422, refused],
      [200, [agent(A, 'edge-1'), agent(B, 'edge')]],
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.calls).toEqual([
      `GET ${AGENTS}?q=edge-1`,
      `GET ${AGENTS}`,
      `GET /v1/orgs/${ORG}/workflows?agentId=${A}`,
    ]);
  });
});
