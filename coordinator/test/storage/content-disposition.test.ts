import { describe, expect, it } from 'vitest';
import { attachmentDisposition } from '../../src/storage/content-disposition.js';

describe('attachmentDisposition', () => {
  it('gives an ASCII name as is in both parameters', () => {
    expect(attachmentDisposition('report-2026.csv')).toBe(
      `attachment; filename="report-2026.csv"; filename*=UTF-8''report-2026.csv`,
    );
  });

  it('percent-encodes UTF-8 in filename* and replaces what cannot be quoted in the fallback', () => {
    expect(attachmentDisposition('résumé "final".pdf')).toBe(
      `attachment; filename="r_sum_ _final_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.pdf`,
    );
    expect(attachmentDisposition("it's (1)*.txt")).toBe(
      `attachment; filename="it's (1)*.txt"; filename*=UTF-8''it%27s%20%281%29%2A.txt`,
    );
    expect(attachmentDisposition('50%.txt')).toBe(`attachment; filename="50_.txt"; filename*=UTF-8''50%25.txt`);
  });

  it('sends the base name only, never a path', () => {
    expect(attachmentDisposition('../../etc/passwd')).toBe(`attachment; filename="passwd"; filename*=UTF-8''passwd`);
    expect(attachmentDisposition('C:\\Users\\me\\a.txt')).toBe(`attachment; filename="a.txt"; filename*=UTF-8''a.txt`);
    expect(attachmentDisposition('/abs/dir/')).toBe(`attachment; filename="file"; filename*=UTF-8''file`);
    for (const dots of ['..', '.', 'a/..']) {
      expect(attachmentDisposition(dots)).toBe(`attachment; filename="file"; filename*=UTF-8''file`);
    }
  });

  it('never lets a header break out: control characters are encoded or replaced', () => {
    const value = attachmentDisposition('x\r\nSet-Cookie: a=b');
    expect(value).not.toMatch(/[\r\n]/);
    expect(value).toContain('filename="x__Set-Cookie: a=b"');
  });

  it('falls back to the ASCII form for text that is not well-formed Unicode', () => {
    expect(attachmentDisposition('a\ud800')).toBe('attachment; filename="a_"');
  });
});
