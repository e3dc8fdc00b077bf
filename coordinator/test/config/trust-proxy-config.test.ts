import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems } from './problems.js';

const problems = configProblems;

describe('DROVER_TRUST_PROXY', () => {
  it('trusts no proxy when unset or empty', () => {
    expect(loadConfig({}).trustProxy).toEqual([]);
    expect(loadConfig({ DROVER_TRUST_PROXY: '' }).trustProxy).toEqual([]);
    expect(loadConfig({ DROVER_TRUST_PROXY: ' , ' }).trustProxy).toEqual([]);
  });

  it('reads addresses, CIDR ranges of both families and the range names, trimmed', () => {
    expect(
      loadConfig({
        DROVER_TRUST_PROXY: ' 10.0.1.5 ,10.0.0.0/8, fd00::/8,::1, loopback,uniquelocal,linklocal,0.0.0.0/0',
      }).trustProxy,
    ).toEqual(['10.0.1.5', '10.0.0.0/8', 'fd00::/8', '::1', 'loopback', 'uniquelocal', 'linklocal', '0.0.0.0/0']);
  });

  it('refuses host names, bad prefixes and malformed addresses, naming each', () => {
    expect(
      problems({ DROVER_TRUST_PROXY: 'lb.internal, 10.0.0.0/33, fd00::/129, 10.0.0/8, 10.0.0.1/, 300.1.1.1, *' }),
    ).toEqual([
      'DROVER_TRUST_PROXY: expected IP addresses, CIDR ranges (10.0.0.0/8) or loopback, linklocal, uniquelocal, separated by commas; got `lb.internal`, `10.0.0.0/33`, `fd00::/129`, `10.0.0/8`, `10.0.0.1/`, `300.1.1.1`, `*`',
    ]);
  });

  it('refuses a list longer than 64 entries', () => {
    const list = Array.from({ length: 65 }, (_, i) => `10.0.0.${i}`).join(',');
    expect(problems({ DROVER_TRUST_PROXY: list })).toEqual([
      'DROVER_TRUST_PROXY: expected at most 64 addresses or ranges, got 65',
    ]);
  });
});
