import { describe, expect, it } from 'vitest';
import type { AppError, ValidationDetail } from '../../../src/errors.js';
import {
  contentTypeProblem,
  DEFAULT_TTL_SECONDS,
  filenameProblem,
  parseCleanup,
  parseFileLabels,
} from '../../../src/domain/files/file-input.js';
import { deleteRetryDelayMs } from '../../../src/domain/files/deletion.js';

function details(run: () => unknown): ValidationDetail[] {
  try {
    run();
  } catch (error) {
    expect((error as AppError).statusCode).toBe(422);
    return (error as AppError).details as ValidationDetail[];
  }
  throw new Error('expected a 422');
}

describe('file labels', () => {
  it('accepts any printable name up to 255 characters, path-like ones included', () => {
    for (const name of ['a', 'report.csv', '../../etc/passwd', 'C:\\x', 'ünïcødé 🚀.txt', 'x'.repeat(255)]) {
      expect(filenameProblem(name), name).toBeNull();
    }
  });

  it('refuses empty, overlong, control-character and malformed names, saying what was wrong', () => {
    expect(filenameProblem('')).toBe('must not be empty');
    expect(filenameProblem('x'.repeat(256))).toBe('must be at most 255 characters, got 256');
    expect(filenameProblem('a\tb')).toBe('must not contain control characters, got U+0009');
    expect(filenameProblem('a\u007f')).toBe('must not contain control characters, got U+007F');
    expect(filenameProblem('\udc00x')).toBe('must be valid Unicode text');
  });

  it('refuses the C1 controls, U+0080 to U+009F, which terminals obey (U+009B starts an escape sequence)', () => {
    expect(filenameProblem('a\u0085b')).toBe('must not contain control characters, got U+0085');
    expect(filenameProblem('a\u009b31mred')).toBe('must not contain control characters, got U+009B');
    expect(filenameProblem('\u0080')).toBe('must not contain control characters, got U+0080');
    expect(filenameProblem('x\u009f')).toBe('must not contain control characters, got U+009F');
    // Latin-1's printable characters, from U+00A0 on, are fine.
    expect(filenameProblem('caf\u00e9 \u00a0.txt')).toBeNull();
  });

  it('refuses the bidirectional embeddings, overrides and isolates, which make a name show reordered', () => {
    const message = (code: string) =>
      `must not contain bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069), which make a name show in another order than it is written, got ${code}`;
    // Shows as `xexe.jpg`.
    expect(filenameProblem('x\u202egpj.exe')).toBe(message('U+202E'));
    for (const code of [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]) {
      const hex = code.toString(16).toUpperCase();
      expect(filenameProblem(`a${String.fromCodePoint(code)}b.txt`), hex).toBe(message(`U+${hex}`));
    }
    expect(details(() => parseFileLabels({ filename: 'invoice\u2066fdp.exe\u2069' }, 'x'))).toEqual([
      { path: 'body.filename', message: message('U+2066') },
    ]);
  });

  it('keeps the bidirectional marks and other formatting characters that right-to-left and joined text needs', () => {
    for (const name of [
      '\u05d3\u05d5\u05d7 (1)\u200f.pdf', // RLM
      'report\u200e.txt', // LRM
      '\u0645\u0644\u0641\u061c.txt', // ALM
      '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.txt', // ZWNJ, as Persian writes
      '\u{1f469}\u200d\u{1f4bb} notes.md', // ZWJ in an emoji sequence
      '\u05e7\u05d5\u05d1\u05e5.txt', // right-to-left letters themselves
    ]) {
      expect(filenameProblem(name), name).toBeNull();
    }
  });

  it('counts characters, not UTF-16 units, against the 255 limit', () => {
    expect(filenameProblem('😀'.repeat(255))).toBeNull();
    expect(filenameProblem('😀'.repeat(256))).toBe('must be at most 255 characters, got 256');
  });

  it('accepts MIME types with parameters and refuses what is not one', () => {
    for (const type of [
      'text/plain',
      'application/vnd.api+json',
      'text/csv; charset=utf-8',
      'multipart/x; boundary="a b"',
    ]) {
      expect(contentTypeProblem(type), type).toBeNull();
    }
    for (const type of ['text', 'text/', '/plain', 'text/plain;', 'text plain', 'a/b\r\nx: y', 'a/b; c="d']) {
      expect(contentTypeProblem(type), type).toMatch(/must be a MIME type such as text\/csv, got/);
    }
    expect(contentTypeProblem(`a/${'b'.repeat(254)}`)).toBe('must be at most 255 characters, got 256');
  });

  it('applies the defaults and reports both labels at once', () => {
    expect(parseFileLabels({}, 'fallback')).toEqual({ filename: 'fallback', contentType: 'application/octet-stream' });
    // Given, it must be a type: an empty or blank one is not the default.
    for (const contentType of ['', ' ']) {
      expect(details(() => parseFileLabels({ contentType }, 'x')).map((d) => d.path)).toEqual(['body.contentType']);
    }
    expect(details(() => parseFileLabels({ filename: '', contentType: 'nope' }, 'x')).map((d) => d.path)).toEqual([
      'body.filename',
      'body.contentType',
    ]);
  });
});

describe('cleanup rule', () => {
  it('defaults a ttl to one day and keeps a persistent file without one', () => {
    expect(parseCleanup({ cleanupRule: 'ttl' })).toEqual({ cleanupRule: 'ttl', ttlSeconds: DEFAULT_TTL_SECONDS });
    expect(parseCleanup({ cleanupRule: 'persistent' })).toEqual({ cleanupRule: 'persistent', ttlSeconds: null });
  });

  it('keeps ttlSeconds within 60 seconds and 90 days', () => {
    expect(parseCleanup({ cleanupRule: 'ttl', ttlSeconds: 60 }).ttlSeconds).toBe(60);
    expect(parseCleanup({ cleanupRule: 'ttl', ttlSeconds: 7_776_000 }).ttlSeconds).toBe(7_776_000);
    for (const ttlSeconds of [59, 7_776_001, 1.5, -1]) {
      expect(details(() => parseCleanup({ cleanupRule: 'ttl', ttlSeconds }))[0]).toMatchObject({
        path: 'body.ttlSeconds',
        message: expect.stringContaining(`got \`${ttlSeconds}\` (number)`),
      });
    }
  });

  it('refuses ttlSeconds on a persistent file', () => {
    expect(details(() => parseCleanup({ cleanupRule: 'persistent', ttlSeconds: 60 }))[0]?.path).toBe('body.ttlSeconds');
  });
});

describe('deletion retries', () => {
  it('waits 30 s after the first failure, doubling up to one hour', () => {
    expect([1, 2, 3, 4, 7, 8, 50, 1000].map(deleteRetryDelayMs)).toEqual([
      30_000, 60_000, 120_000, 240_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
  });
});
