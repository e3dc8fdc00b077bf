import { describe, expect, it } from 'vitest';
import { cleanName, hasControlCharacters, hiddenCharacterProblem, nameProblem } from '../../src/domain/names.js';
import { AppError } from '../../src/errors.js';

describe('cleanName', () => {
  it('trims a name', () => {
    expect(cleanName('body.name', '  Rack 4  ')).toBe('Rack 4');
  });

  it('refuses blank names, names over 255 characters after trimming and control characters', () => {
    for (const value of ['', '   ', '\t', 'x'.repeat(256), 'a\nb', 'a\u0000b', 'a\u007fb', 'a\u0085b']) {
      expect(nameProblem(value), JSON.stringify(value)).not.toBeNull();
      expect(() => cleanName('body.name', value)).toThrow(AppError);
    }
    expect(cleanName('body.name', ` ${'x'.repeat(255)} `)).toHaveLength(255);
  });

  it('names the path in the 422 details', () => {
    try {
      cleanName('body.name', ' ');
      expect.unreachable();
    } catch (error) {
      expect((error as AppError).statusCode).toBe(422);
      expect((error as AppError).details).toEqual([
        { path: 'body.name', message: 'must not be blank, got ` ` (string)' },
      ]);
    }
  });

  it('accepts non-Latin names', () => {
    expect(cleanName('body.name', 'Лаборатория 東京 🚜')).toBe('Лаборатория 東京 🚜');
  });

  it('counts characters as the API schema does (code points): 255 emoji are a name, 256 are not', () => {
    expect(nameProblem('😀'.repeat(255))).toBeNull();
    expect(nameProblem('😀'.repeat(256))).toBe('must be at most 255 characters, got 256');
  });

  it('refuses the bidirectional embeddings, overrides and isolates, which make a name show reordered', () => {
    const message = (code: string) =>
      `must not contain bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069), which make a name show in another order than it is written, got ${code}`;
    expect(nameProblem('edge\u202egpj.exe')).toBe(message('U+202E'));
    for (const code of [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]) {
      const hex = code.toString(16).toUpperCase();
      const value = `a${String.fromCodePoint(code)}b`;
      expect(nameProblem(value), hex).toBe(message(`U+${hex}`));
      expect(() => cleanName('body.name', value), hex).toThrow(AppError);
    }
    // At either end too: trimming does not remove them.
    expect(nameProblem('\u2066Rack 4')).toBe(message('U+2066'));
    expect(nameProblem('Rack 4\u202c')).toBe(message('U+202C'));
  });

  it('keeps the bidirectional marks that right-to-left names need', () => {
    for (const name of [
      '\u05e9\u05e8\u05ea 4\u200f',
      'a\u200eb',
      '\u0645\u062e\u062a\u0628\u0631\u061c (2)',
      'a\u200db',
    ]) {
      expect(nameProblem(name), JSON.stringify(name)).toBeNull();
    }
  });
});

describe('hasControlCharacters (host names, versions, refs)', () => {
  it('finds control characters and bidirectional formatting characters, not the marks', () => {
    for (const value of ['a\nb', 'a\u0000', '\u009b31m', 'host\u202e', '\u2067x\u2069']) {
      expect(hasControlCharacters(value), JSON.stringify(value)).toBe(true);
    }
    for (const value of ['build-7.local', 'a\u200eb', '\u05e9\u05e8\u05ea\u200f', 'caf\u00e9']) {
      expect(hasControlCharacters(value), JSON.stringify(value)).toBe(false);
    }
  });
});

describe('hiddenCharacterProblem', () => {
  it('names the first control character, else the first bidirectional formatting character', () => {
    expect(hiddenCharacterProblem('ok')).toBeNull();
    expect(hiddenCharacterProblem('a\u202eb\tc')).toBe('must not contain control characters, got U+0009');
    expect(hiddenCharacterProblem('a\u2068b\u202ec')).toMatch(/^must not contain bidirectional .*, got U\+2068$/);
  });
});
