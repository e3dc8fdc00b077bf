import { describe, expect, it } from 'vitest';
import {
  formatSelector,
  labelProblems,
  matchesSelector,
  mergeLabels,
  parseLabelPairs,
  parseSelector,
  SelectorError,
  storableSelector,
} from '../src/labels.js';

const matches = (selector: string, labels: Record<string, string>) => matchesSelector(parseSelector(selector), labels);
const errorAt = (selector: string): [number, string] => {
  try {
    parseSelector(selector);
  } catch (error) {
    if (error instanceof SelectorError) return [error.position, error.reason];
    throw error;
  }
  throw new Error(`"${selector}" parsed`);
};

describe('label selectors', () => {
  const gw = { site: 'berlin', role: 'gateway', os: 'linux' };
  const kiosk = { site: 'munich', role: 'kiosk', os: 'linux', tier: '' };

  it('reads every form of requirement, with Kubernetes meaning', () => {
    expect(matches('site=berlin', gw)).toBe(true);
    expect(matches('site==berlin', gw)).toBe(true);
    expect(matches('site = berlin , role==gateway', gw)).toBe(true);
    expect(matches('site!=berlin', gw)).toBe(false);
    expect(matches('site in (berlin, hamburg)', gw)).toBe(true);
    expect(matches('site notin (berlin,hamburg)', gw)).toBe(false);
    expect(matches('site notin (berlin,hamburg)', kiosk)).toBe(true);
    expect(matches('role', gw)).toBe(true);
    expect(matches('!role', gw)).toBe(false);
    expect(matches('tier', gw)).toBe(false);
    expect(matches('!tier', gw)).toBe(true);
    // `!=` and `notin` match agents without the key.
    expect(matches('tier!=gold', gw)).toBe(true);
    expect(matches('tier notin (gold)', gw)).toBe(true);
    expect(matches('tier in (gold)', gw)).toBe(false);
    // The empty value.
    expect(matches('tier=', kiosk)).toBe(true);
    expect(matches('tier=', gw)).toBe(false);
    expect(matches('tier in ()', kiosk)).toBe(true);
    expect(matches('tier in (,gold)', kiosk)).toBe(true);
    // Empty: every agent.
    expect(parseSelector('  ')).toEqual([]);
    expect(matches('', gw)).toBe(true);
    // Keywords are keys and values where they stand for one.
    expect(matches('in in (in)', { in: 'in' })).toBe(true);
  });

  it('writes a selector back in one canonical form', () => {
    expect(formatSelector(parseSelector(' a = x ,b!=y, c in (p , q,p),d, ! e'))).toBe('a=x,b!=y,c in (p,q),d,!e');
  });

  it('refuses to store a selector whose canonical form would be too long to read back', () => {
    // 1024 characters as written; `in(gw)` is stored `in (gw)`, one more character per set.
    const written = `${'role in(gw),'.repeat(84)}role in(gw)`.padEnd(1024, ' ');
    const requirements = parseSelector(written);
    expect(() => storableSelector(requirements)).toThrow(
      'as it is stored (`key in (a,b)`, one comma between requirements) the selector has 1104 characters, more than the 1024 a selector may have',
    );
    expect(storableSelector(parseSelector('role in(gw), site=x'))).toBe('role in (gw),site=x');
  });

  it('names the position and the reason of an error', () => {
    expect(errorAt('site=berlin,')).toEqual([12, 'expected a label key, found the end']);
    expect(errorAt('site in berlin')).toEqual([8, "expected '(', found 'berlin'"]);
    expect(errorAt('site in (a b)')).toEqual([11, "expected ',' or ')', found 'b'"]);
    expect(errorAt('site in (a')).toEqual([10, "expected ',' or ')', found the end"]);
    expect(errorAt('site berlin')).toEqual([
      5,
      "expected =, ==, !=, in, notin, ',' or the end after 'site', found 'berlin'",
    ]);
    expect(errorAt('a=b c')).toEqual([4, "expected ',' or the end, found 'c'"]);
    expect(errorAt('Site=x')[0]).toBe(0);
    expect(errorAt('Site=x')[1]).toMatch(/is not a label key/);
    expect(errorAt('site=be rlin')[0]).toBe(8);
    expect(errorAt('site=a$b')).toEqual([5, "\"a$b\" is not a label value: up to 63 letters, digits, '.', '_' or '-'"]);
    expect(errorAt('n>3')).toEqual([1, "'>' is not an operator here: use =, ==, !=, in, notin, a key, or !key"]);
    expect(errorAt('=x')).toEqual([0, "expected a label key, found '='"]);
    expect(errorAt('x'.repeat(1025))[0]).toBe(1024);
    // Counted as the API schema counts (code points): 600 emoji are not over the length, but no key.
    expect(errorAt('😀'.repeat(600))[1]).not.toMatch(/at most/);
  });
});

describe('labels', () => {
  it('checks keys, values, types and the count, naming each by its key', () => {
    expect(labelProblems({ site: 'berlin', 'example.com/rack': 'r-1', empty: '' }, 'body.labels')).toEqual([]);
    expect(labelProblems({ Site: 'x', ok: 'a b', n: 3 }, 'body.labels')).toEqual([
      { path: 'body.labels.Site', message: expect.stringMatching(/^"Site" is not a label key/) },
      { path: 'body.labels.ok', message: expect.stringMatching(/^"a b" is not a label value/) },
      { path: 'body.labels.n', message: 'must be a string' },
    ]);
    expect(labelProblems([], 'body.labels')).toEqual([
      { path: 'body.labels', message: 'must be an object of label keys to string values' },
    ]);
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    expect(labelProblems(many, 'body.labels')).toEqual([{ path: 'body.labels', message: 'at most 32 labels, got 33' }]);
    expect(labelProblems({ [`${'a'.repeat(63)}`]: 'x', [`${'a'.repeat(64)}`]: 'x' }, 'l')).toHaveLength(1);
  });

  it("reads k=v pairs, and merges the operators' labels over the agent's", () => {
    expect(parseLabelPairs(['site=berlin', ' role = gw ', 'tier='])).toEqual({ site: 'berlin', role: 'gw', tier: '' });
    expect(() => parseLabelPairs(['site'])).toThrow('"site" is not a label: expected key=value');
    expect(() => parseLabelPairs(['site=a', 'site=b'])).toThrow('the label site is given twice');
    // A name every object holds is a label like any other.
    expect(parseLabelPairs(['constructor=x'])).toEqual({ constructor: 'x' });
    expect(() => parseLabelPairs(['Site=a'])).toThrow(/is not a label key/);
    expect(mergeLabels({ site: 'berlin', os: 'linux' }, { site: 'munich' })).toEqual({ site: 'munich', os: 'linux' });
  });
});
