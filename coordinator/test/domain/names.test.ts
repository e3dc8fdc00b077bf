import { describe, expect, it } from 'vitest';
import { cleanName, nameProblem } from '../../src/domain/names.js';
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
});
