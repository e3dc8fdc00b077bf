import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { RotatingFile } from '../../src/logging/rotating-file.js';

let dir: string;
let file: string;
let out: RotatingFile | undefined;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-rotate-'));
  file = path.join(dir, 'agent.log');
});
afterEach(() => {
  out?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const read = (name: string) => fs.readFileSync(path.join(dir, name), 'utf8');
const line = (i: number) => `line ${String(i).padStart(3, '0')} ${'x'.repeat(40)}\n`; // 50 bytes

describe('RotatingFile', () => {
  it('appends lines to a 0600 file', () => {
    out = new RotatingFile(file, { maxBytes: 1000, maxFiles: 3 });
    out.write(line(1));
    out.write(line(2));
    expect(read('agent.log')).toBe(line(1) + line(2));
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('rotates between lines when the size would pass the limit, keeping maxFiles files in all', () => {
    out = new RotatingFile(file, { maxBytes: 200, maxFiles: 3 }); // 4 lines per file
    for (let i = 1; i <= 14; i++) out.write(line(i));
    expect(fs.readdirSync(dir).sort()).toEqual(['agent.log', 'agent.log.1', 'agent.log.2']);
    expect(read('agent.log.2')).toBe([5, 6, 7, 8].map(line).join(''));
    expect(read('agent.log.1')).toBe([9, 10, 11, 12].map(line).join(''));
    expect(read('agent.log')).toBe([13, 14].map(line).join(''));
    for (const name of fs.readdirSync(dir)) expect(fs.statSync(path.join(dir, name)).size).toBeLessThanOrEqual(200);
  });

  it('continues an existing file, counting its size', () => {
    fs.writeFileSync(file, line(0).repeat(3));
    out = new RotatingFile(file, { maxBytes: 200, maxFiles: 2 });
    out.write(line(1));
    out.write(line(2)); // 250 bytes would pass the limit
    expect(read('agent.log.1')).toBe(line(0).repeat(3) + line(1));
    expect(read('agent.log')).toBe(line(2));
  });

  it('writes a line longer than the limit into a file of its own rather than dropping it', () => {
    out = new RotatingFile(file, { maxBytes: 60, maxFiles: 3 });
    out.write(line(1));
    const long = `${'y'.repeat(100)}\n`;
    out.write(long);
    out.write(line(2));
    expect(read('agent.log.2')).toBe(line(1));
    expect(read('agent.log.1')).toBe(long);
    expect(read('agent.log')).toBe(line(2));
  });

  it('begins the line after one a full disk cut short on a new line', () => {
    out = new RotatingFile(file, { maxBytes: 1000, maxFiles: 2 });
    out.write(line(1));
    const write = fs.writeSync;
    const full = vi
      .spyOn(fs, 'writeSync')
      .mockImplementationOnce((fd, text) => write(fd, (text as string).slice(0, 10)));
    try {
      expect(out.write(line(2))).toBe(false); // 10 bytes of it written, the rest refused
    } finally {
      full.mockRestore();
    }
    out.write(line(3));
    expect(read('agent.log')).toBe(`${line(1)}${line(2).slice(0, 10)}\n${line(3)}`);
  });

  it('begins the line after a failed write on a new line, also when a crash left the file torn', () => {
    fs.writeFileSync(file, `${line(0)}{"level":30,"m`);
    out = new RotatingFile(file, { maxBytes: 1000, maxFiles: 2 });
    out.write(line(1));
    const full = vi.spyOn(fs, 'writeSync').mockImplementationOnce((fd) => {
      fs.appendFileSync(file, '{"lev'); // what got in before the disk was full
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', fd });
    });
    try {
      expect(out.write(line(2))).toBe(false);
    } finally {
      full.mockRestore();
    }
    out.write(line(3));
    expect(read('agent.log')).toBe(`${line(0)}{"level":30,"m\n${line(1)}{"lev\n${line(3)}`);
  });

  it('makes its directory again when it was removed (logs/ cleared while the agent ran), and writes on', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => void vi.useRealTimers());
    out = new RotatingFile(file, { maxBytes: 1000, maxFiles: 2 });
    out.write(line(1));
    fs.rmSync(dir, { recursive: true });
    vi.advanceTimersByTime(1000); // the file is checked once a second
    // Every line failed (ENOENT) until the directory was made by someone else: until a restart.
    expect(out.write(line(2))).toBe(true);
    expect(read('agent.log')).toBe(line(2));
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('drops lines without throwing when the directory above its own is gone too, and starts again when it is back', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => void vi.useRealTimers());
    const logs = path.join(dir, 'logs');
    fs.mkdirSync(logs);
    out = new RotatingFile(path.join(logs, 'agent.log'), { maxBytes: 1000, maxFiles: 2 });
    out.write(line(1));
    fs.rmSync(dir, { recursive: true });
    vi.advanceTimersByTime(1000);
    expect(out.write(line(2))).toBe(false);
    expect((out.lastError as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(fs.existsSync(dir)).toBe(false); // a state directory is not made again here
    fs.mkdirSync(logs, { recursive: true });
    out.write(line(3));
    expect(fs.readFileSync(path.join(logs, 'agent.log'), 'utf8')).toBe(line(3));
  });
});
