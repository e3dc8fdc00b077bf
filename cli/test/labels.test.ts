import { afterEach, describe, expect, it } from 'vitest';
import { applyLabelChanges, changesAnything, parseLabelChanges } from '../src/labels/changes.js';
import { formatAgentLabels, labelsCell } from '../src/labels/show-labels.js';
import { caretUnder } from '../src/output/caret.js';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';

describe('drover agent label: the changes asked for', () => {
  it('sets key=value, removes key-, and --clear starts from no operator label', () => {
    const changes = parseLabelChanges(['site=berlin', 'tier-', 'role=', 'rack=r4'], false);
    expect(changes).toEqual({ set: { site: 'berlin', role: '', rack: 'r4' }, remove: ['tier'], clear: false });
    expect(applyLabelChanges({ site: 'munich', tier: 'gold', zone: 'a' }, changes)).toEqual({
      site: 'berlin',
      role: '',
      rack: 'r4',
      zone: 'a',
    });
    const clear = parseLabelChanges(['site=berlin'], true);
    expect(applyLabelChanges({ tier: 'gold' }, clear)).toEqual({ site: 'berlin' });
    expect(applyLabelChanges({ tier: 'gold' }, parseLabelChanges([], true))).toEqual({});
    expect(changesAnything(parseLabelChanges([], false))).toBe(false);
    expect(changesAnything(parseLabelChanges([], true))).toBe(true);
  });

  it('refuses, by the shared label rules, what is not a change, naming the item', () => {
    const refused =
      (items: string[], clear = false) =>
      () =>
        parseLabelChanges(items, clear);
    expect(refused(['site'])).toThrow(
      '"site" is not a label change: expected key=value to set a label, or key- to remove one',
    );
    expect(refused(['-'])).toThrow('"-" is not a label change');
    expect(refused(['=berlin'])).toThrow('"=berlin" is not a label: expected key=value');
    expect(refused(['Site=berlin'])).toThrow('"Site" is not a label key: 1 to 63 lowercase letters');
    expect(refused(['Site-'])).toThrow('"Site" is not a label key');
    expect(refused(['site=a b'])).toThrow('"a b" is not a label value: up to 63 letters');
    expect(refused([`site=${'x'.repeat(64)}`])).toThrow('is not a label value');
    expect(refused(['site=a', 'site=b'])).toThrow('the label site is given twice');
    expect(refused(['site=a', 'site-'])).toThrow('the label site is both set and removed');
    expect(refused(['site-'], true)).toThrow('--clear removes every operator label already: leave out site-');
  });
});

describe('labels as the command line shows them', () => {
  it('fit a LABELS cell: whole, else the first ones and how many are left out', () => {
    expect(labelsCell({})).toBe('');
    expect(labelsCell({ site: 'berlin', arch: 'x64', os: 'linux' })).toBe('arch=x64,os=linux,site=berlin');
    const many = { arch: 'x64', os: 'linux', role: 'gateway', site: 'berlin', rack: 'r4', tier: 'gold' };
    expect(labelsCell(many, 42)).toBe('arch=x64,os=linux,rack=r4,role=gateway,…+2');
    expect(labelsCell(many, 41)).toBe('arch=x64,os=linux,rack=r4,…+3');
    expect(labelsCell({ note: 'x'.repeat(60), os: 'linux' }, 30)).toBe(`note=${'x'.repeat(20)}…,…+1`);
    expect(labelsCell({ note: 'x'.repeat(60) }, 30)).toBe(`note=${'x'.repeat(24)}…`);
  });

  it("show an agent's labels with where each comes from, an operator's over the agent's", () => {
    expect(
      formatAgentLabels({
        labels: { arch: 'x64', os: 'linux', site: 'hamburg', tier: '' },
        reportedLabels: { arch: 'x64', os: 'linux', site: 'berlin' },
        operatorLabels: { site: 'hamburg', tier: '' },
      }),
    ).toBe(
      [
        'KEY   VALUE    SOURCE',
        'arch  x64      reported',
        'os    linux    reported',
        'site  hamburg  operator (reported: berlin)',
        'tier  ""       operator',
        '',
      ].join('\n'),
    );
    expect(formatAgentLabels({ labels: {}, reportedLabels: {}, operatorLabels: {} })).toBe('No labels.\n');
  });

  it('point a caret at a position of a selector, a long one cut around it, when columns are sure', () => {
    expect(caretUnder('site in berlin', 8)).toBe('  site in berlin\n          ^\n');
    expect(caretUnder('site=', 5)).toBe('  site=\n       ^\n');
    const long = `${'a=b,'.repeat(30)}c in x`;
    const shown = caretUnder(long, long.length - 1, 20)!;
    expect(shown).toBe(`  …b,a=b,a=b,a=b,c in x\n  ${' '.repeat(20)}^\n`);
    expect(caretUnder(`x in y,${'a=b,'.repeat(30)}`, 5, 20)).toBe('  x in y,a=b,a=b,a=b,a…\n       ^\n');
    expect(caretUnder('site=bé', 6)).toBeNull();
    expect(caretUnder('site\t=x', 4)).toBeNull();
    expect(caretUnder('site', 5)).toBeNull();
  });
});

describe('drover agents --selector and drover agent label, before and without the coordinator', () => {
  let api: FakeCoordinator | undefined;
  afterEach(() => api?.close());

  const agent = (id: string, name: string, labels: Record<string, string>) => ({
    id,
    name,
    hostname: name,
    os: 'linux',
    agentVersion: '0.1.0',
    status: 'connected',
    lastSeenAt: null,
    enrolledAt: '2026-11-25T09:58:00.000Z',
    labels,
    reportedLabels: labels,
    operatorLabels: {},
  });

  it('refuses --selector with an API token before any call: its GET /v1/agents shows no labels', async () => {
    api = await fakeCoordinator({
      // The public discovery's answer: the agents without their labels.
      'GET /v1/agents': [
        200,
        [agent('3f0c1d52-0000-4000-8000-00000000000a', 'gw-1', {})].map(
          ({ labels, reportedLabels, operatorLabels, ...a }) => a,
        ),
      ],
    });
    const env = { DROVER_URL: api.url, DROVER_TOKEN: 'drv_x' };
    for (const selector of ['site=berlin', '!role', 'site in berlin']) {
      const rt = testRuntime({ env });
      expect(await runCli(['agents', '--selector', selector], rt)).toBe(2);
      expect(rt.stdout()).toBe('');
      expect(rt.stderr()).toBe(
        'drover: --selector needs a session, as the agents an API token lists (GET /v1/agents) show no labels: ' +
          'sign in with `drover login` and leave out the API token (--token, DROVER_TOKEN)\n',
      );
    }
    expect(api.calls).toEqual([]);
    // So do the list's other narrowings and pages.
    for (const [flag, value] of [
      ['--status', 'connected'],
      ['--name', 'gw'],
      ['--limit', '10'],
      ['--cursor', '7'],
    ]) {
      const rt = testRuntime({ env });
      expect(await runCli(['agents', flag!, value!], rt)).toBe(2);
      expect(rt.stderr()).toBe(
        `drover: ${flag} needs a session, as the agents an API token lists (GET /v1/agents) come unfiltered and in one answer: ` +
          'sign in with `drover login` and leave out the API token (--token, DROVER_TOKEN)\n',
      );
    }
    expect(api.calls).toEqual([]);

    // Without --selector the token lists its agents as before.
    const listed = testRuntime({ env });
    expect(await runCli(['agents'], listed)).toBe(0);
    expect(listed.stdout()).toMatch(/^ID +NAME +STATUS +LAST SEEN +HOSTNAME +OS +VERSION +LABELS\n\S+ +gw-1 /);
    expect(api.calls).toEqual(['GET /v1/agents']);
  });

  it('refuses a bad label change before any call, even before asking for a session', async () => {
    api = await fakeCoordinator({});
    const rt = testRuntime({ env: { DROVER_URL: api.url } });
    expect(await runCli(['agent', 'label', 'gw-1', 'site=berlin', 'Role=gateway'], rt)).toBe(2);
    expect(rt.stderr()).toMatch(/^drover: "Role" is not a label key: /);
    expect(api.calls).toEqual([]);
  });
});
