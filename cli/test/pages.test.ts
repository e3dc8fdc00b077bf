import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator, type FakeRoute } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { signedInHome } from './signed-in.js';

const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
/** How many times the faulty coordinator answers the same cursor before it ends its list. */
const REPEATS = 20;

let api: FakeCoordinator | undefined;
let configHome: string | undefined;
afterEach(async () => {
  await api?.close();
  if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
});

const cli = async (args: string[]) => {
  configHome = signedInHome(api!.url);
  const rt = testRuntime({ env: { DROVER_URL: api!.url, XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG } });
  const code = await runCli(args, rt);
  return { code, stdout: rt.stdout(), stderr: rt.stderr() };
};

/**
 * A list whose every page says the same next cursor (a coordinator's fault, or a proxy's that
 * drops the query string), ending only after REPEATS pages: `--all` must stop at the second.
 */
const sameCursorEachTime = (item: unknown): FakeRoute => {
  let calls = 0;
  return () => (++calls < REPEATS ? [200, [item], { 'x-next-cursor': '42' }] : [200, []]);
};

const ENTRY = {
  id: '7',
  orgId: ORG,
  actorType: 'system',
  actorId: null,
  action: 'retention.purge',
  targetType: null,
  targetId: null,
  metadata: {},
  createdAt: '2026-12-01T10:00:00.000Z',
};
const TRIGGER = {
  id: '8c2f1a3b-4d5e-4f60-9a7b-8c9d0e1f2a3b',
  name: 'deploy',
  type: 'webhook',
  responseMode: 'async',
  scopeType: 'agent',
  workflowName: null,
  agentId: null,
  agentSelector: 'role=gateway',
  fanout: 'all',
  maxParallel: null,
};

describe('--all on a coordinator that answers the same cursor again', () => {
  for (const [command, route, item] of [
    [['audit', '--all'], `GET /v1/orgs/${ORG}/audit`, ENTRY],
    [['audit', '--all', '--json'], `GET /v1/orgs/${ORG}/audit`, ENTRY],
    [['trigger', 'list', '--all'], `GET /v1/orgs/${ORG}/triggers`, TRIGGER],
    [['enrollment-token', 'list', '--all', '--json'], `GET /v1/orgs/${ORG}/enrollment-tokens`, { id: 'x' }],
  ] as const) {
    it(`drover ${command.join(' ')} stops with an error at the repeated cursor, not reading the pages again`, async () => {
      api = await fakeCoordinator({ [route]: sameCursorEachTime(item) });
      const res = await cli([...command]);
      expect(res.code).toBe(2);
      expect(res.stderr).toContain(
        'drover: the coordinator answered the cursor 42 again after 2 pages: stopped, as its pages would be read again forever',
      );
      expect(api.calls).toHaveLength(2);
      expect(api.calls[1]).toContain('cursor=42');
    });
  }

  it('a cursor given with --cursor that comes back is stopped at once', async () => {
    api = await fakeCoordinator({ [`GET /v1/orgs/${ORG}/audit`]: [200, [ENTRY], { 'x-next-cursor': '42' }] });
    const res = await cli(['audit', '--all', '--json', '--cursor', '42']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('answered the cursor 42 again after 1 page:');
    expect(api.calls).toHaveLength(1);
    // What was read is printed before the error.
    expect(res.stdout).toBe(`${JSON.stringify(ENTRY)}\n`);
  });

  it('pages that move on are all read', async () => {
    let calls = 0;
    api = await fakeCoordinator({
      [`GET /v1/orgs/${ORG}/audit`]: () =>
        ++calls < 4 ? [200, [ENTRY], { 'x-next-cursor': String(calls) }] : [200, []],
    });
    const res = await cli(['audit', '--all', '--json']);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout.trimEnd().split('\n')).toHaveLength(3);
    expect(api.calls).toHaveLength(4);
  });
});
