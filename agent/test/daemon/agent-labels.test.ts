import { describe, expect, it } from 'vitest';
import { loadAgentLabels, MAX_USER_LABELS } from '../../src/daemon/agent-labels.js';
import { runAgentCli as run } from '../cli/run-cli.js';

const load = (flags: string[], env?: string) => loadAgentLabels({ flags, env, platform: 'linux', arch: 'arm64' });

describe('the labels of drover-agent run', () => {
  it('merges --label and DROVER_AGENT_LABELS, a flag winning for its key, and always adds os and arch', () => {
    expect(load([])).toEqual({ os: 'linux', arch: 'arm64' });
    expect(load(['site=berlin', 'rack=r-12'], 'site=munich, tier=edge ,')).toEqual({
      site: 'berlin',
      rack: 'r-12',
      tier: 'edge',
      os: 'linux',
      arch: 'arm64',
    });
    // Empty values are labels too; the same pair twice is one label; an empty variable is none.
    expect(load(['gpu=', 'gpu='], '')).toEqual({ gpu: '', os: 'linux', arch: 'arm64' });
    expect(load(['example.com/team=ops'])).toMatchObject({ 'example.com/team': 'ops' });
  });

  it('refuses os and arch given by the user: they are the agent’s own', () => {
    expect(() => load(['os=plan9'])).toThrow(
      '--label "os=plan9": the agent sets the label os itself (os=linux here); remove it',
    );
    expect(() => load([], 'site=x,arch=x64')).toThrow(
      'DROVER_AGENT_LABELS item "arch=x64": the agent sets the label arch itself (arch=arm64 here); remove it',
    );
  });

  it('takes the key constructor, a name every object holds, as any other', () => {
    expect(load(['constructor=x'], 'site=y')).toMatchObject({ constructor: 'x', site: 'y' });
  });

  it('names the item that breaks the rules, and where it came from', () => {
    const refused: [string[], string | undefined, string][] = [
      [['site'], undefined, '--label "site": "site" is not a label: expected key=value'],
      [['=x'], undefined, '--label "=x": "=x" is not a label: expected key=value'],
      [['Site=x'], undefined, '--label "Site=x": "Site" is not a label key: 1 to 63 lowercase letters'],
      [['site=a b'], undefined, '--label "site=a b": "a b" is not a label value'],
      [['site=berlin,rack=1'], undefined, '"berlin,rack=1" is not a label value'],
      [['k=' + 'v'.repeat(64)], undefined, 'is not a label value: up to 63 letters'],
      [[], 'site=x,-bad=y', 'DROVER_AGENT_LABELS item "-bad=y": "-bad" is not a label key'],
      [['site=a', 'site=b'], undefined, '--label "site=b": the label site is given twice (site=a before)'],
      [[], 'site=a,site=b', 'DROVER_AGENT_LABELS item "site=b": the label site is given twice'],
    ];
    for (const [flags, env, message] of refused) {
      expect(() => load(flags, env), JSON.stringify([flags, env])).toThrow(message);
    }
    try {
      load(['Site=x']);
    } catch (error) {
      expect(error).toMatchObject({ name: 'AgentError', code: 'bad_config' });
    }
  });

  it(`takes at most ${MAX_USER_LABELS} labels, so that with os and arch a report stays within 32`, () => {
    const items = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}=v`);
    expect(Object.keys(load(items(20, 'f'), items(10, 'e').join(',')))).toHaveLength(32);
    // A key in both sources counts once.
    expect(Object.keys(load(items(30, 'k'), items(30, 'k').join(',')))).toHaveLength(32);
    expect(() => load(items(20, 'f'), items(11, 'e').join(','))).toThrow(
      'too many labels: 31 from --label and DROVER_AGENT_LABELS, at most 30 (the agent adds os and arch, and a coordinator takes 32)',
    );
  });

  it('stops drover-agent run before anything else, with one line and exit status 2 (a bad setting: systemd does not restart it)', async () => {
    const res = await run('run', '--state-dir', '/nonexistent/drover-labels-test', '--label', 'Bad=x');
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/^drover-agent: error: --label "Bad=x": "Bad" is not a label key: [^\n]*\n$/);
    const help = await run('run', '--help');
    expect(help.out).toMatch(/--label <key=value> +a label this agent reports \(repeatable/);
  });
});
