import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/exec/durations.js';
import { LineSplitter } from '../../src/exec/line-splitter.js';
import { parseOutputFile, MAX_OUTPUT_KEYS } from '../../src/exec/output-file.js';
import { createMasker, maskDeep } from '../../src/exec/secret-masker.js';
import { paramEnvName } from '@drover/shared';
import { jobEnv, paramEnvProblem, paramEnvValue } from '../../src/exec/step-env.js';

function split(chunks: (string | Buffer)[], max?: number): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line), max === undefined ? {} : { maxChars: max });
  for (const chunk of chunks) splitter.push(chunk);
  splitter.end();
  return lines;
}

describe('the line splitter', () => {
  it('joins a line written in pieces and splits a chunk holding several lines', () => {
    expect(split(['a', 'b\nc', '\n\nd\r\n', 'e'])).toEqual(['ab', 'c', '', 'd', 'e']);
  });

  it('keeps a UTF-8 character split between two chunks whole', () => {
    const bytes = Buffer.from('prix: 5€\n');
    expect(split([bytes.subarray(0, 9), bytes.subarray(9)])).toEqual(['prix: 5€']);
  });

  it('never cuts a long line through a secret value, so that each piece masks whole', () => {
    const mask = createMasker(['SECRET']);
    const pieces = (chunks: string[], maxChars: number) => {
      const lines: string[] = [];
      const splitter = new LineSplitter((line) => lines.push(line), { maxChars, secrets: mask });
      for (const chunk of chunks) splitter.push(chunk);
      splitter.end();
      return lines;
    };
    // Written a character at a time without a newline: cut while the line is still open.
    expect(pieces([...'abcdeSECRETfghijklmnopSECRET'], 8)).toEqual(['abcde', 'SECRETfg', 'hijklmno', 'pSECRET']);
    // A whole line; a secret longer than the limit is a piece of its own.
    expect(pieces(['abcdeSECRETfgh\n'], 8)).toEqual(['abcde', 'SECRETfg', 'h']);
    expect(pieces(['SECRETxy\n'], 4)).toEqual(['SECRET', 'xy']);
    expect(pieces(['abcdeSECRETfgh\n'], 8).map(mask)).toEqual(['abcde', '***fg', 'h']);
  });

  it('cuts a line longer than the limit into pieces, and gives nothing for an empty stream', () => {
    expect(split(['abcdefg\n'], 3)).toEqual(['abc', 'def', 'g']);
    // Never between the two halves of an emoji: every piece is Unicode text.
    const pieces = split(['ab😀😀\n'], 3);
    expect(pieces).toEqual(['ab', '😀', '😀']);
    expect(pieces.every((p) => p.isWellFormed())).toBe(true);
    expect(split([])).toEqual([]);
    expect(split(['x\n'])).toEqual(['x']);
  });
});

describe('secret masking', () => {
  it('replaces every occurrence, longer secrets first, and leaves other text alone', () => {
    const mask = createMasker(['abc', 'abcdef', '', 'a.c']);
    expect(mask('abcdef abc xabcx a.c abc')).toBe('*** *** x***x *** ***');
    expect(mask('no secret here: aXc')).toBe('no secret here: aXc');
    expect(createMasker([])('anything')).toBe('anything');
    // A value of one or two characters would hide every such character: left as it is (and warned about).
    expect(createMasker(['1', 'ab', '💩', 'xyz'])('1 ab 💩 xyz 12')).toBe('1 ab 💩 *** 12');
    expect(createMasker(['1', 'ab']).longest).toBe(0);
  });

  it('masks each line of a multi-line secret on its own, as output comes line by line', () => {
    const mask = createMasker(['-----BEGIN KEY-----\nMIIEvQIBADANBg\nab\n-----END KEY-----\n']);
    expect(['-----BEGIN KEY-----', 'MIIEvQIBADANBg', 'ab', '-----END KEY-----'].map(mask)).toEqual([
      '***',
      '***',
      'ab',
      '***',
    ]);
  });

  it('treats regular-expression characters in secrets literally', () => {
    expect(createMasker(['p@$$(w)rd*'])('pw=p@$$(w)rd* ok')).toBe('pw=*** ok');
  });

  it('masks every string of a value, object keys included, keeping keys such as __proto__ plain', () => {
    const mask = createMasker(['tok']);
    const masked = maskDeep({ a_tok: 'x tok', list: ['tok', 1, null, { ['__proto__']: 'tok' }] }, mask);
    expect(masked).toEqual({ 'a_***': 'x ***', list: ['***', 1, null, { ['__proto__']: '***' }] });
    expect(Object.getPrototypeOf((masked as { list: object[] }).list[3])).toBe(Object.prototype);
  });
});

describe('$DROVER_OUTPUT', () => {
  it('reads key=value lines, the value kept as written after the first =', () => {
    const parsed = parseOutputFile('a=1\r\n\n# comment\n  # indented comment\nb = two words \nc=x=y\na=last\nempty=\n');
    expect(parsed).toEqual({ values: { a: 'last', b: ' two words ', c: 'x=y', empty: '' }, warnings: [] });
  });

  it('warns about malformed lines, naming them, and skips them', () => {
    const parsed = parseOutputFile('ok=1\nno pair\n=x\nbad key=1\n');
    expect(parsed.values).toEqual({ ok: '1' });
    expect(parsed.warnings).toEqual([
      '$DROVER_OUTPUT line 2 is not key=value and was ignored: "no pair"',
      expect.stringMatching(/^\$DROVER_OUTPUT line 3 has an unusable key ""/),
      expect.stringMatching(/^\$DROVER_OUTPUT line 4 has an unusable key "bad key"/),
    ]);
  });

  it('masks a line it quotes before shortening it, so that no part of a secret shows', () => {
    const secret = 'abcdefghij-SECRET-0123456789';
    const line = `${'x'.repeat(60)} ${secret} and more`; // the shortened quote would end inside it
    const parsed = parseOutputFile(`${line}\n`, createMasker([secret]));
    expect(parsed.warnings).toEqual([
      `$DROVER_OUTPUT line 1 is not key=value and was ignored: "${'x'.repeat(60)} *** and more"`,
    ]);
  });

  it('keeps at most the coordinator limit of keys', () => {
    const text = Array.from({ length: MAX_OUTPUT_KEYS + 2 }, (_, i) => `k${i}=${i}`).join('\n');
    const parsed = parseOutputFile(text);
    expect(Object.keys(parsed.values)).toHaveLength(MAX_OUTPUT_KEYS);
    expect(parsed.warnings).toHaveLength(2);
  });

  it('skips the key __proto__, which the coordinator refuses with the whole result, and keeps constructor', () => {
    const parsed = parseOutputFile('__proto__=x\nconstructor=y\nprototype=z\n');
    expect(parsed.values).toEqual({ constructor: 'y', prototype: 'z' });
    expect(Object.hasOwn(parsed.values, '__proto__')).toBe(false);
    expect(Object.getPrototypeOf(parsed.values)).toBe(Object.prototype);
    expect(parsed.warnings).toEqual([
      '$DROVER_OUTPUT line 1 has the key __proto__, which the coordinator refuses, and was ignored',
    ]);
  });
});

describe('the step environment', () => {
  it('names params DROVER_PARAM_<NAME> and gives non-strings as JSON', () => {
    expect(paramEnvName('target-env.v2')).toBe('DROVER_PARAM_TARGET_ENV_V2');
    // ASCII only: no Unicode case mapping turns `ſafe` into SAFE or `ß` into SS.
    expect([paramEnvName('ſafe'), paramEnvName('straße')]).toEqual(['DROVER_PARAM__AFE', 'DROVER_PARAM_STRA_E']);
    expect([paramEnvValue('a b'), paramEnvValue(3), paramEnvValue(true), paramEnvValue(null)]).toEqual([
      'a b',
      '3',
      'true',
      '',
    ]);
    expect(paramEnvValue({ __type: 'FileRef', id: 'f' })).toBe('{"__type":"FileRef","id":"f"}');
  });

  it('sets the job variables, then params, then the listed secrets', () => {
    expect(
      jobEnv({
        jobId: 'j',
        workflowName: 'w',
        ref: null,
        debug: false,
        workspace: '/ws',
        paramsFile: '/p.json',
        outputFile: '/out.env',
        params: { env: 'prod' },
        declared: ['env'],
        secrets: { TOKEN: 's' },
      }),
    ).toEqual({
      DROVER_JOB_ID: 'j',
      DROVER_WORKFLOW: 'w',
      DROVER_REF: '',
      DROVER_DEBUG: '0',
      DROVER_WORKSPACE: '/ws',
      DROVER_PARAMS_FILE: '/p.json',
      DROVER_OUTPUT: '/out.env',
      DROVER_PARAM_ENV: 'prod',
      TOKEN: 's',
    });
  });

  // Issue 29: `{"safe":"ok","SAFE":"x; touch /tmp/p"}` passed the pattern of `safe` on the
  // coordinator, and `SAFE` then replaced its variable on the agent.
  const attack = { safe: 'ok', SAFE: 'x; touch /tmp/p' };

  it('never lets an undeclared param replace the variable of a declared one, in either order', () => {
    const base = { jobId: 'j', workflowName: 'w', ref: null, debug: false, workspace: '/ws' };
    const files = { paramsFile: '/p.json', outputFile: '/out.env', secrets: {} };
    for (const params of [attack, { SAFE: attack.SAFE, safe: attack.safe }]) {
      const env = jobEnv({ ...base, ...files, params, declared: ['safe'] });
      expect(env.DROVER_PARAM_SAFE).toBe('ok');
    }
  });

  it('refuses params that would set the same variable, naming both', () => {
    expect(paramEnvProblem(attack)).toBe(
      'the params `SAFE` and `safe` would both be the environment variable DROVER_PARAM_SAFE; no step was run',
    );
    expect(paramEnvProblem({ 'a-b': 1, a_b: 2, c: 3 })).toMatch(/`a_b` and `a-b` would both be .* DROVER_PARAM_A_B/);
    expect(paramEnvProblem({ safe: 'ok', other: 'x' })).toBeNull();
  });
});

describe('durations in messages', () => {
  it('reads as a person would write them', () => {
    expect([400, 1000, 1500, 30_000, 90_000, 3_600_000, 5_400_000].map(formatDuration)).toEqual([
      '400ms',
      '1s',
      '1.5s',
      '30s',
      '1m30s',
      '1h',
      '1h30m',
    ]);
  });
});
