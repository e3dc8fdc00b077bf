import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_OUTPUT_FILE_BYTES, readOutputFile } from '../../src/exec/output-file.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-output-file-'));
  file = path.join(dir, 'output.env');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('reading $DROVER_OUTPUT', () => {
  it('reads the file, up to its limit, and takes a removed file for no output', async () => {
    fs.writeFileSync(file, 'a=1\nb=caf\u00e9\n');
    expect(await readOutputFile(file)).toEqual({ text: 'a=1\nb=caf\u00e9\n' });
    fs.truncateSync(file, MAX_OUTPUT_FILE_BYTES);
    const whole = (await readOutputFile(file)) as { text: string };
    expect(Buffer.byteLength(whole.text)).toBe(MAX_OUTPUT_FILE_BYTES);
    fs.rmSync(file);
    expect(await readOutputFile(file)).toEqual({ text: '' });
  });

  it('refuses a file over its limit without reading it, however large', async () => {
    fs.writeFileSync(file, 'first=kept?\n');
    fs.truncateSync(file, 600 * 1024 * 1024); // sparse: no disk used
    expect(await readOutputFile(file)).toEqual({
      problem:
        `$DROVER_OUTPUT is 629145600 bytes, more than the ${MAX_OUTPUT_FILE_BYTES} the agent reads; no output was taken: ` +
        'write large results to a file in the workspace and output `key=file:<path>` instead',
    });
  });

  it('refuses what a step put in place of the file, a named pipe without waiting for a writer', async () => {
    const because = (kind: string) => ({
      problem:
        `$DROVER_OUTPUT is no longer a regular file but ${kind} (a step replaced it); no output was taken: ` +
        'steps append key=value lines to the file (`echo key=value >> "$DROVER_OUTPUT"`)',
    });
    execFileSync('mkfifo', [file]);
    expect(await readOutputFile(file)).toEqual(because('a named pipe (FIFO)'));
    fs.rmSync(file);
    fs.writeFileSync(path.join(dir, 'elsewhere.env'), 'a=1\n');
    fs.symlinkSync('elsewhere.env', file);
    expect(await readOutputFile(file)).toEqual(because('a symbolic link'));
    fs.rmSync(file);
    fs.mkdirSync(file);
    expect(await readOutputFile(file)).toEqual(because('a directory'));
  });
});
