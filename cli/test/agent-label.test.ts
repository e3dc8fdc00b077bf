import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { signedInHome } from './signed-in.js';
import { testRuntime } from './test-runtime.js';

/**
 * `drover agent label`: the changes are made onto the operators' labels as read and sent onto that
 * revision (If-Match); when someone changed the agent meanwhile (a 412), it is read again and the
 * changes are made onto its labels as they are now, so that neither change is lost. Against a
 * loopback server that answers as the coordinator does: the end-to-end tests cover the rest.
 */

const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
const AGENT = '11111111-2222-4333-8444-555555555555';
const PATH = `/v1/orgs/${ORG}/agents/${AGENT}`;

let fake: FakeCoordinator | undefined;
let home: string | undefined;
afterEach(async () => {
  await fake?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** The coordinator's agent; `othersMeanwhile` changes come in, one before each of the first PATCHes. */
async function coordinator(othersMeanwhile: Record<string, string>[]) {
  const agent = {
    id: AGENT,
    name: 'edge-1',
    status: 'connected',
    labels: { arch: 'x64', os: 'linux', site: 'munich' },
    reportedLabels: { arch: 'x64', os: 'linux' },
    operatorLabels: { site: 'munich' } as Record<string, string>,
    revision: 4,
  };
  fake = await fakeCoordinator({
    [`GET ${PATH}`]: () => [200, agent],
    [`PATCH ${PATH}`]: ({ headers, body }) => {
      const other = othersMeanwhile.shift();
      if (other) Object.assign(agent, { operatorLabels: other, revision: agent.revision + 1 });
      if (headers['if-match'] !== undefined && headers['if-match'] !== `"${agent.revision}"`) {
        return [412, { code: 'precondition_failed', message: 'The agent was changed since', details: {} }];
      }
      const operatorLabels = (body as { labels: Record<string, string> }).labels;
      Object.assign(agent, { operatorLabels, labels: { ...agent.reportedLabels, ...operatorLabels } });
      agent.revision++;
      return [200, agent];
    },
  });
  home = signedInHome(fake.url);
  return { env: { XDG_CONFIG_HOME: home, DROVER_ORG: ORG } };
}

async function cli(args: string[], env: Record<string, string>) {
  const rt = testRuntime({ env });
  const code = await runCli(args, rt);
  return { code, stdout: rt.stdout(), stderr: rt.stderr() };
}

/** The changes sent: each with its If-Match and body. */
const patches = () =>
  fake!.calls.flatMap((call, i) =>
    call.startsWith('PATCH') ? [[fake!.headers[i]!['if-match'], fake!.bodies[i]]] : [],
  );

describe('drover agent label', () => {
  it('sends the changed labels onto the revision it read', async () => {
    const { env } = await coordinator([]);
    const res = await cli(['agent', 'label', AGENT, 'rack=r4', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ operatorLabels: { rack: 'r4', site: 'munich' }, revision: 5 });
    expect(patches()).toEqual([['"4"', { labels: { rack: 'r4', site: 'munich' } }]]);
  });

  it('makes its changes again onto labels another change set meanwhile, keeping both', async () => {
    // Another script set `site=kiel` and `tier=gold` between this command's read and its change.
    const { env } = await coordinator([{ site: 'kiel', tier: 'gold' }]);
    const res = await cli(['agent', 'label', AGENT, 'rack=r4', 'site-', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ operatorLabels: { rack: 'r4', tier: 'gold' }, revision: 6 });
    expect(patches()).toEqual([
      ['"4"', { labels: { rack: 'r4' } }],
      ['"5"', { labels: { rack: 'r4', tier: 'gold' } }],
    ]);
  });

  it('sends nothing when the labels as they are now already have the changes', async () => {
    const { env } = await coordinator([{ site: 'munich', rack: 'r4' }]);
    const res = await cli(['agent', 'label', AGENT, 'rack=r4', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ operatorLabels: { rack: 'r4', site: 'munich' }, revision: 5 });
    expect(patches()).toEqual([['"4"', { labels: { rack: 'r4', site: 'munich' } }]]);
  });
});
