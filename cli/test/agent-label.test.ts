import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
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

interface Seen {
  method: string;
  ifMatch: string | undefined;
  body: Record<string, unknown> | null;
}

let close: (() => void) | undefined;
let home: string | undefined;
afterEach(() => {
  close?.();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** The coordinator's agent; `othersMeanwhile` changes come in, one before each of the first PATCHes. */
async function coordinator(othersMeanwhile: Record<string, string>[]) {
  const seen: Seen[] = [];
  const agent = {
    id: AGENT,
    name: 'edge-1',
    status: 'connected',
    labels: { arch: 'x64', os: 'linux', site: 'munich' },
    reportedLabels: { arch: 'x64', os: 'linux' },
    operatorLabels: { site: 'munich' } as Record<string, string>,
    revision: 4,
  };
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
      seen.push({ method: req.method!, ifMatch: req.headers['if-match'], body });
      const answer = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.url !== PATH) return answer(404, { code: 'not_found', message: 'Agent not found' });
      if (req.method === 'GET') return answer(200, agent);
      const other = othersMeanwhile.shift();
      if (other) Object.assign(agent, { operatorLabels: other, revision: agent.revision + 1 });
      if (req.headers['if-match'] !== undefined && req.headers['if-match'] !== `"${agent.revision}"`) {
        return answer(412, { code: 'precondition_failed', message: 'The agent was changed since', details: {} });
      }
      const operatorLabels = body!.labels as Record<string, string>;
      Object.assign(agent, { operatorLabels, labels: { ...agent.reportedLabels, ...operatorLabels } });
      agent.revision++;
      return answer(200, agent);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () => server.close();
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  home = signedInHome(url);
  return { seen, env: { XDG_CONFIG_HOME: home, DROVER_ORG: ORG } };
}

async function cli(args: string[], env: Record<string, string>) {
  const rt = testRuntime({ env });
  const code = await runCli(args, rt);
  return { code, stdout: rt.stdout(), stderr: rt.stderr() };
}

const patches = (seen: Seen[]) => seen.filter((s) => s.method !== 'GET').map((s) => [s.ifMatch, s.body]);

describe('drover agent label', () => {
  it('sends the changed labels onto the revision it read', async () => {
    const { seen, env } = await coordinator([]);
    const res = await cli(['agent', 'label', AGENT, 'rack=r4', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ operatorLabels: { rack: 'r4', site: 'munich' }, revision: 5 });
    expect(patches(seen)).toEqual([['"4"', { labels: { rack: 'r4', site: 'munich' } }]]);
  });

  it('makes its changes again onto labels another change set meanwhile, keeping both', async () => {
    // Another script set `site=kiel` and `tier=gold` between this command's read and its change.
    const { seen, env } = await coordinator([{ site: 'kiel', tier: 'gold' }]);
    const res = await cli(['agent', 'label', AGENT, 'rack=r4', 'site-', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ operatorLabels: { rack: 'r4', tier: 'gold' }, revision: 6 });
    expect(patches(seen)).toEqual([
      ['"4"', { labels: { rack: 'r4' } }],
      ['"5"', { labels: { rack: 'r4', tier: 'gold' } }],
    ]);
  });

  it('sends nothing when the labels as they are now already have the changes', async () => {
    const { seen, env } = await coordinator([{ site: 'munich', rack: 'r4' }]);
    const res = await cli(['agent', 'label', AGENT, 'rack=r4', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ operatorLabels: { rack: 'r4', site: 'munich' }, revision: 5 });
    expect(patches(seen)).toEqual([['"4"', { labels: { rack: 'r4', site: 'munich' } }]]);
  });
});
