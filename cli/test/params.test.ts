import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../src/duration.js';
import { buildParams } from '../src/params.js';

describe('--param and --params-file', () => {
  it('gives strings with =, JSON values with :=', () => {
    expect(buildParams('/', ['env=prod', 'count:=3', 'dry:=true', 'tags:=["a"]', 'eq=a=b'])).toEqual({
      env: 'prod',
      count: 3,
      dry: true,
      tags: ['a'],
      eq: 'a=b',
    });
  });

  it('refuses a name given twice, naming it and both values (the last was taken in silence)', () => {
    expect(() => buildParams('/', ['env=prod', 'count:=3', 'env=staging'])).toThrow(
      '--param: the param env is given twice (`env=prod` and `env=staging`): give each param once',
    );
    // The same value twice, or `=` and `:=` for one name, are one name given twice all the same.
    expect(() => buildParams('/', ['a=1', 'a=1'])).toThrow('the param a is given twice');
    expect(() => buildParams('/', ['a=1', 'a:=1'])).toThrow('the param a is given twice (`a=1` and `a:=1`)');
    expect(() => buildParams('/', ['__proto__:={}', '__proto__=x'])).toThrow('the param __proto__ is given twice');
  });

  it('puts --param over the params of the file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-params-'));
    try {
      fs.writeFileSync(path.join(dir, 'p.json'), '{"env": "prod", "count": 2}');
      expect(buildParams(dir, ['count:=5'], 'p.json')).toEqual({ env: 'prod', count: 5 });
      fs.writeFileSync(path.join(dir, 'list.json'), '[1]');
      expect(() => buildParams(dir, [], 'list.json')).toThrow(/must hold a JSON object of params, got an array/);
      expect(() => buildParams(dir, [], 'missing.json')).toThrow(/cannot read .*missing\.json: ENOENT/);
      // A device or a file past 1 MiB is refused before it is read, not read until memory runs out.
      expect(() => buildParams(dir, [], '/dev/zero')).toThrow(
        '--params-file: cannot read /dev/zero: it is a device, not a regular file (EINVAL): remove it',
      );
      fs.writeFileSync(path.join(dir, 'big.json'), `{"a":"${'x'.repeat(1024 * 1024)}"}`);
      expect(() => buildParams(dir, [], 'big.json')).toThrow(
        /cannot read .*big\.json: it holds more than 1048576 bytes/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sends __proto__ as an ordinary param, never as the prototype of the others', () => {
    const params = buildParams('/', ['env=prod', '__proto__:={"msg":"x"}', 'count:=3']);
    expect(JSON.stringify(params)).toBe('{"env":"prod","__proto__":{"msg":"x"},"count":3}');
    expect(Object.keys(params)).toEqual(['env', '__proto__', 'count']);
    expect(JSON.stringify(buildParams('/', ['__proto__=hi']))).toBe('{"__proto__":"hi"}');
    expect(JSON.stringify(buildParams('/', ['constructor=c']))).toBe('{"constructor":"c"}');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-params-'));
    try {
      fs.writeFileSync(path.join(dir, 'p.json'), '{"__proto__": {"a": 1}, "env": "prod"}');
      expect(JSON.stringify(buildParams(dir, ['__proto__=over'], 'p.json'))).toBe('{"__proto__":"over","env":"prod"}');
      expect(JSON.stringify(buildParams(dir, ['count:=1'], 'p.json'))).toBe(
        '{"__proto__":{"a":1},"env":"prod","count":1}',
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a pair without a name or a value that is not JSON', () => {
    expect(() => buildParams('/', ['=x'])).toThrow('--param: expected name=value or name:=json, got `=x`');
    expect(() => buildParams('/', ['novalue'])).toThrow('--param: expected name=value or name:=json');
    expect(() => buildParams('/', ['n:=yes'])).toThrow('--param n:= expects a JSON value');
  });
});

describe('durations', () => {
  it('read units from seconds to days, combined, or a number of seconds', () => {
    expect(parseDuration('90', '--x')).toBe(90_000);
    expect(parseDuration('1h30m', '--x')).toBe(5_400_000);
    expect(parseDuration('1d', '--x')).toBe(86_400_000);
    expect(parseDuration('0.5s', '--x')).toBe(500);
  });

  it('say what was expected and what was got', () => {
    expect(() => parseDuration('soon', '--ttl')).toThrow(
      '--ttl: expected a duration such as 30s, 5m, 2h or 1d, got `soon`',
    );
    expect(() => parseDuration('0s', '--ttl')).toThrow('--ttl: must be longer than zero, got `0s`');
  });

  it('outside the bounds an option takes, name the bound in its largest whole unit', () => {
    const ttl = { minMs: 60_000, maxMs: 90 * 86_400_000 };
    expect(parseDuration('1m', '--ttl', ttl)).toBe(60_000);
    expect(parseDuration('90d', '--ttl', ttl)).toBe(90 * 86_400_000);
    expect(() => parseDuration('30s', '--ttl', ttl)).toThrow('--ttl: must be at least 1m (60 s), got `30s`');
    expect(() => parseDuration('91d', '--ttl', ttl)).toThrow('--ttl: must be at most 90d, got `91d`');
    expect(() => parseDuration('11m', '--x', { maxMs: 600_000 })).toThrow(
      '--x: must be at most 10m (600 s), got `11m`',
    );
    expect(() => parseDuration('0.5', '--x', { minMs: 1_000 })).toThrow('--x: must be at least 1s, got `0.5`');
  });

  it('take zero where the option allows it (a soak of 0)', () => {
    expect(parseDuration('0', '--soak', { zero: true })).toBe(0);
    expect(parseDuration('0m', '--soak', { zero: true })).toBe(0);
    expect(parseDuration('30s', '--soak', { zero: true })).toBe(30_000);
  });
});
