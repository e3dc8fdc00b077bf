import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { signedInHome } from './signed-in.js';

/** An id given as `.` or `..` goes into a URL path, where it would be a step: refused before any call. */

const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';

let api: FakeCoordinator;
let configHome: string;
beforeAll(async () => {
  // Whatever a step up would reach answers, as a coordinator does: the organization for `.../files/..`.
  api = await fakeCoordinator({ [`GET /v1/orgs/${ORG}`]: [200, { id: ORG, name: 'acme', role: 'owner' }] });
  configHome = signedInHome(api.url);
});
afterAll(async () => {
  await api.close();
  fs.rmSync(configHome, { recursive: true, force: true });
});

describe('an id of dots', () => {
  it.each([
    [['job', '.'], '.'],
    [['cancel', '..'], '..'],
    [['trigger', 'delete', '..'], '..'],
    [['api-token', 'revoke', '.'], '.'],
    [['batch', 'show', '..'], '..'],
    [['files', 'download', '..'], '..'],
    [['run', '..'], '..'],
  ])('drover %j is refused, nothing called', async (args, shown) => {
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG }, cwd: configHome });
    api.calls.length = 0;
    expect(await runCli(args, rt)).toBe(2);
    expect(rt.stderr()).toBe(`drover: \`${shown}\` is not an id (nor a name)\n`);
    expect(rt.stdout()).toBe('');
    expect(api.calls).toEqual([]);
  });
});

describe('an empty id', () => {
  it.each([
    [['job', '']],
    [['cancel', '']],
    [['trigger', 'delete', '']],
    [['api-token', 'revoke', '']],
    [['batch', 'show', '']],
    [['batch', 'cancel', '']],
    [['files', 'download', '']],
    [['run', '']],
  ])('drover %j is refused, nothing called', async (args) => {
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG }, cwd: configHome });
    api.calls.length = 0;
    expect(await runCli(args, rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: expected an id (or a name), got nothing\n');
    expect(rt.stdout()).toBe('');
    expect(api.calls).toEqual([]);
  });
});
