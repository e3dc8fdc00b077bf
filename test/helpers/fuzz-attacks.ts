import type { Random } from './fuzz-random.js';

/**
 * Hostile inputs for fuzz tests: path segments, strings, query strings and bodies that are not
 * JSON. Every value is made from the seeded generator, so a run can be replayed.
 */

/** JSON text inserted as is by `toJsonText` (numbers JSON allows but JS cannot hold, deep nesting). */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * The JSON text `make` builds, built once for each `key`: the bulk and depth cases repeat a few
 * sizes (a megabyte of `x`, arrays nested 400,000 deep), and building them again for each case
 * took 10 of the fuzzer's 37 s. Shared safely: a RawJson is never a target of a mutation.
 */
const builtOnce = new Map<string, RawJson>();
export function rawJsonOnce(key: string, make: () => string): RawJson {
  let raw = builtOnce.get(key);
  if (!raw) {
    raw = new RawJson(make());
    builtOnce.set(key, raw);
  }
  return raw;
}

/** A JSON string of `length` x's, as JSON text (built once for each length). */
export const bulkString = (length: number): RawJson => rawJsonOnce(`x${length}`, () => `"${'x'.repeat(length)}"`);

const UNICODE = [
  'ü',
  'Ωmega',
  '漢字',
  '💩',
  '\u202Eevil',
  'e\u0301',
  '\u0000',
  '\uFEFF',
  '\uD800',
  '\u2028\u2029',
  'ﷺ',
  '🏳️‍🌈',
];

const INJECTIONS = [
  "' OR '1'='1",
  '1; DROP TABLE jobs; --',
  '<script>alert(1)</script>',
  '${7*7}',
  '{{7*7}}',
  '../../etc/passwd',
  '..\\..\\windows',
  '%s%s%s%n',
  'null',
  'undefined',
  'NaN',
  'true',
  '0',
  '-1',
  '1e309',
  '__proto__',
  'constructor',
  'prototype',
  '*',
  '',
  ' ',
  '\t\n',
];

/** encodeURIComponent, which throws on a lone surrogate: that one is sent as its (invalid) UTF-8 bytes. */
export function safeEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, '')) + '%ED%A0%80';
  }
}

/** A hostile string (not yet URL-encoded). */
export function attackString(rnd: Random): string {
  return rnd.weighted<() => string>([
    [3, () => rnd.pick(INJECTIONS)],
    [3, () => rnd.pick(UNICODE).repeat(rnd.int(1, 3))],
    [2, () => rnd.string(rnd.int(1, 40), 'abcXYZ019-_.~ !"#$%&\'()*+,/:;<=>?@[\\]^`{|}')],
    [1, () => 'a'.repeat(rnd.pick([255, 256, 1024, 10_000, 100_000]))],
    [1, () => rnd.uuid().toUpperCase()],
    [1, () => `${rnd.uuid()}${rnd.pick(['x', ' ', '\n', '\u0000', '/..'])}`],
  ])();
}

/**
 * A hostile path segment, as sent on the wire: raw dots, broken and valid percent-encodings,
 * encoded unicode, raw Latin-1 bytes, ids of the wrong shape, and lengths beyond the router's
 * and Node's limits.
 */
export function attackSegment(rnd: Random): string {
  return rnd.weighted<() => string>([
    [
      4,
      () =>
        rnd.pick([
          '',
          '.',
          '..',
          '...',
          '%2e%2e',
          '%2E%2E%2F',
          '..%2F..%2Fetc%2Fpasswd',
          '..;',
          '%2F',
          '%5C',
          '%00',
          '%',
          '%zz',
          '%u0041',
          '%C0%AE',
          '%E2%82%AC',
          '%F0%9F%92%A9',
          '%ED%A0%80',
          '%FF%FE',
          '%20',
          '+',
          '%2B',
          ';',
          ',',
          '@',
          ':',
          '%23',
          '#',
          '%3F',
          '~',
        ]),
    ],
    // Raw bytes above 0x7f: not valid in a request target at all.
    [1, () => rnd.string(rnd.int(1, 4), '\u0080\u00a0\u00e9\u00ff')],
    [3, () => safeEncode(attackString(rnd))],
    [1, () => rnd.uuid().replace(/-/g, '')],
    [1, () => `{${rnd.uuid()}}`],
    [1, () => `${rnd.uuid()}%00`],
    [1, () => 'a'.repeat(rnd.pick([199, 200, 201, 5_000, 20_000]))],
    [1, () => '%41'.repeat(rnd.pick([67, 100, 2_000]))],
  ])();
}

/** A hostile query string (without the `?`), or one of its parameters. */
export function attackQuery(rnd: Random, names: readonly string[]): string {
  const name = names.length > 0 && rnd.chance(0.6) ? rnd.pick(names) : rnd.pick(['x', 'limit', 'cursor', 'status']);
  return rnd.weighted<() => string>([
    [3, () => `${name}=${safeEncode(attackString(rnd))}`],
    [2, () => `${name}=${attackSegment(rnd)}`],
    [1, () => `${name}=1&${name}=2`],
    [1, () => `${name}[]=1&${name}[a]=2`],
    [1, () => `__proto__[polluted]=1&constructor[prototype][polluted]=1`],
    [1, () => `${name}`],
    [1, () => `=${name}`],
    [1, () => '&&&==&'],
    [1, () => `${name}=${'9'.repeat(rnd.pick([20, 400]))}`],
    [1, () => `${name}=${rnd.pick(['-1', '0', '1.5', '1e3', '0x10', '+1', '%201', 'Infinity', 'NaN', 'true'])}`],
    [1, () => Array.from({ length: rnd.int(50, 400) }, (_, i) => `p${i}=${i}`).join('&')],
  ])();
}

/** A JSON value of any type, small. */
export function randomJson(rnd: Random, depth = 0): unknown {
  const leaf = depth > 2 || rnd.chance(0.5);
  if (leaf) {
    return rnd.weighted<() => unknown>([
      [1, () => null],
      [1, () => rnd.chance(0.5)],
      [2, () => rnd.int(-1000, 1000)],
      [1, () => rnd.pick([1.5, -0.0001, 2 ** 53 + 2, -(2 ** 63)])],
      [3, () => attackString(rnd)],
      [2, () => rnd.string(rnd.int(0, 12))],
    ])();
  }
  if (rnd.chance(0.5)) return Array.from({ length: rnd.int(0, 4) }, () => randomJson(rnd, depth + 1));
  const out: Record<string, unknown> = {};
  for (let i = rnd.int(0, 4); i > 0; i--) {
    const key = rnd.chance(0.5) ? rnd.string(rnd.int(1, 8)) : attackString(rnd);
    // An own property even for `__proto__`, as JSON.parse makes it.
    Object.defineProperty(out, key, {
      value: randomJson(rnd, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** A literal JSON number JS cannot hold as written, or an edge of its range. */
export function oddNumber(rnd: Random): RawJson {
  return new RawJson(
    rnd.pick([
      '1e400',
      '-1e400',
      '1e-400',
      '-0',
      '9007199254740993',
      '123456789012345678901234567890',
      '1.7976931348623157e308',
      '0.1e1',
      '2147483648',
      '-2147483649',
      '4294967296',
    ]),
  );
}

/** Arrays or objects nested `depth` deep, as JSON text. */
export function deepJson(rnd: Random, depth = rnd.pick([64, 1_000, 10_000, 100_000, 400_000])): RawJson {
  return rnd.chance(0.5)
    ? rawJsonOnce(`[${depth}`, () => '['.repeat(depth) + ']'.repeat(depth))
    : rawJsonOnce(`{${depth}`, () => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth));
}

/** A body that is not JSON, or barely is (Buffers may carry bytes that are not UTF-8). */
export function nonJsonBody(rnd: Random): Buffer {
  const text = (s: string) => Buffer.from(s, 'utf8');
  return rnd.weighted<() => Buffer>([
    [
      4,
      () =>
        text(
          rnd.pick([
            '{',
            '}',
            '{"a":',
            '[1,2',
            "{'a':1}",
            '{"a":1,}',
            '{"a":1}{"b":2}',
            '{"a":1} trailing',
            '// comment\n{}',
            'undefined',
            'NaN',
            'Infinity',
            'null',
            'true',
            '0',
            '"a string"',
            '[]',
            'a=1&b=2',
            '<?xml version="1.0"?><a/>',
            '\u0000',
            ' ',
            '\n\n\n',
            '\uFEFF{}',
            '{"__proto__":{"polluted":true}}',
            '{"constructor":{"prototype":{"polluted":true}}}',
            '{"a":"\\ud800"}',
            '{"a":"\\u0000"}',
            '{"a":1e400}',
          ]),
        ),
    ],
    [2, () => rnd.bytes(rnd.int(1, 256))],
    [1, () => Buffer.concat([text('{"name":"'), Buffer.from([0xff, 0xfe, 0xc0, 0xaf]), text('"}')])],
    [1, () => Buffer.from('{"name":"x"}', 'utf16le')],
    [1, () => text(' '.repeat(rnd.pick([1_000, 100_000])))],
  ])();
}
