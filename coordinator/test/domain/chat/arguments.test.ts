import type { ParamDefinition } from '@drover/shared';
import { describe, expect, it } from 'vitest';
import { argumentsToParams, parseChatCommand } from '../../../src/domain/chat/arguments.js';

const parsed = (text: string) => {
  const result = parseChatCommand(text);
  if (!result.ok) throw new Error(result.problem);
  return result.command;
};
const problem = (text: string) => {
  const result = parseChatCommand(text);
  return result.ok ? null : result.problem;
};

describe('parseChatCommand', () => {
  it('reads the keyword, key=value pairs and the ref', () => {
    expect(parsed('  Deploy env=prod   replicas=3 ref=release/1.4 ')).toEqual({
      keyword: 'deploy',
      args: { env: 'prod', replicas: '3' },
      ref: 'release/1.4',
    });
    expect(parsed('')).toEqual({ keyword: '', args: {}, ref: undefined });
  });

  it('groups quoted values with spaces, straight or typographic, and keeps = inside values', () => {
    expect(parsed(`note msg="two words" who='the team' q=“smart quotes” expr=a=b`).args).toEqual({
      msg: 'two words',
      who: 'the team',
      q: 'smart quotes',
      expr: 'a=b',
    });
    expect(parsed('note msg="say \\"hi\\" \\\\ bye"').args).toEqual({ msg: 'say "hi" \\ bye' });
    expect(parsed('note empty="" x=').args).toEqual({ empty: '', x: '' });
  });

  it('names what is wrong: a bare word, a repeated key, an open quote, a pair in place of the keyword', () => {
    expect(problem('deploy prod')).toBe('`prod` is not key=value');
    expect(problem('deploy =prod')).toBe('`=prod` is not key=value');
    expect(problem('deploy env=a env=b')).toBe('`env` is given twice');
    expect(problem('deploy ref=a ref=b')).toBe('`ref` is given twice');
    expect(problem('deploy msg="open')).toBe('a quote (") is not closed');
    expect(problem('env=prod')).toBe("start with the trigger's keyword, then key=value pairs (got `env=prod`)");
    expect(problem(`deploy ${Array.from({ length: 101 }, (_, i) => `k${i}=v`).join(' ')}`)).toBe(
      'at most 100 arguments',
    );
  });

  it('takes keys that are names of Object.prototype as plain keys', () => {
    expect(parsed('x constructor=1 __proto__=2').args).toEqual(
      Object.fromEntries([
        ['constructor', '1'],
        ['__proto__', '2'],
      ]),
    );
  });
});

describe('argumentsToParams', () => {
  const schema: ParamDefinition[] = [
    { name: 'replicas', type: 'number' },
    { name: 'dryRun', type: 'boolean' },
    { name: 'env', type: 'enum', options: ['staging', 'prod'] },
    { name: 'bundle', type: 'file' },
  ];

  it('types the arguments by the schema and passes the others as strings', () => {
    expect(
      argumentsToParams({ replicas: '3', dryRun: 'Yes', env: 'prod', bundle: 'f1', extra: '007' }, schema),
    ).toEqual({
      ok: true,
      params: { replicas: 3, dryRun: true, env: 'prod', bundle: { __type: 'FileRef', id: 'f1' }, extra: '007' },
    });
    expect(argumentsToParams({ replicas: '-1.5e2', dryRun: 'off' }, schema)).toEqual({
      ok: true,
      params: { replicas: -150, dryRun: false },
    });
    expect(argumentsToParams({ a: '1' }, null)).toEqual({ ok: true, params: { a: '1' } });
  });

  it('names every argument that is not of its type', () => {
    expect(argumentsToParams({ replicas: 'three', dryRun: 'constructor' }, schema)).toEqual({
      ok: false,
      problems: ['`replicas` must be a number, got `three`', '`dryRun` must be true or false, got `constructor`'],
    });
    expect(argumentsToParams({ replicas: '0x10' }, schema).ok).toBe(false);
    expect(argumentsToParams({ replicas: 'Infinity' }, schema).ok).toBe(false);
  });
});
