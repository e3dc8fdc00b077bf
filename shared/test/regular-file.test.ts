import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCapped, readRegularFile } from '../src/regular-file.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-regular-file-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('readRegularFile', () => {
  it('reads a regular file, within its limit or without one', () => {
    const file = path.join(dir, 'a.json');
    fs.writeFileSync(file, '{"é": 1}');
    expect(readRegularFile(file)).toBe('{"é": 1}');
    expect(readRegularFile(file, { maxBytes: 9 })).toBe('{"é": 1}');
  });

  it('refuses a file past its limit, a device and a FIFO without reading them', () => {
    const file = path.join(dir, 'big');
    fs.writeFileSync(file, 'x'.repeat(10));
    expect(() => readRegularFile(file, { maxBytes: 9 })).toThrow(
      expect.objectContaining({ code: 'EFBIG', message: 'it holds more than 9 bytes (EFBIG)' }),
    );
    expect(() => readRegularFile('/dev/zero', { maxBytes: 9 })).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(() => readRegularFile(fifo)).toThrow('it is a FIFO, not a regular file (EINVAL): remove it');
  });
});

describe('readCapped', () => {
  it('ends an endless stream in an error at its limit', () => {
    const fd = fs.openSync('/dev/zero', 'r');
    try {
      expect(() => readCapped(fd, 1024 * 1024)).toThrow(expect.objectContaining({ code: 'EFBIG' }));
    } finally {
      fs.closeSync(fd);
    }
  });
});
