import { describe, expect, it } from 'vitest';
import { safeFilename, safeParamDir } from '../../src/files/safe-names.js';

describe('safeFilename', () => {
  it('keeps an ordinary name as it is', () => {
    expect(safeFilename('report 2024.tar.gz')).toBe('report 2024.tar.gz');
    expect(safeFilename('données.csv')).toBe('données.csv');
  });

  it('keeps only the last component of a path, whatever the separator', () => {
    expect(safeFilename('../../etc/passwd')).toBe('passwd');
    expect(safeFilename('/abs/dir/file.txt')).toBe('file.txt');
    expect(safeFilename('..\\..\\windows\\win.ini')).toBe('win.ini');
  });

  it('falls back for names that are empty, dots or only a directory', () => {
    expect(safeFilename('')).toBe('file');
    expect(safeFilename('.')).toBe('file');
    expect(safeFilename('..')).toBe('file');
    expect(safeFilename('dir/')).toBe('file');
    expect(safeFilename('   ')).toBe('file');
    expect(safeFilename(undefined)).toBe('file');
    expect(safeFilename(42)).toBe('file');
    expect(safeFilename('..', 'input')).toBe('input');
  });

  it('removes control characters and bidirectional overrides', () => {
    expect(safeFilename('a\u0000b\nc\r\u001b[31m.txt')).toBe('abc[31m.txt');
    expect(safeFilename('invoice\u202Efdp.exe')).toBe('invoicefdp.exe');
    expect(safeFilename('\u0007')).toBe('file');
  });

  it('cuts a name longer than 255 bytes, keeping its extension', () => {
    const name = safeFilename(`${'é'.repeat(300)}.tar.gz`);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect(name.endsWith('.gz')).toBe(true);
    expect(name.startsWith('éé')).toBe(true);
  });
});

describe('safeParamDir', () => {
  it('keeps a declared param name', () => {
    expect(safeParamDir('bundle')).toBe('bundle');
    expect(safeParamDir('my_file.v2-x')).toBe('my_file.v2-x');
  });

  it('turns anything else into one plain path component', () => {
    expect(safeParamDir('../x')).toBe('__x');
    expect(safeParamDir('a/b')).toBe('a_b');
    expect(safeParamDir('..')).toBe('_');
    expect(safeParamDir('')).toBe('param');
  });
});
