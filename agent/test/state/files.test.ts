import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentError } from '../../src/errors.js';
import { ensurePrivateDir, readFileIfExists, writeFileAtomic } from '../../src/state/files.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-files-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const mode = (p: string) => fs.statSync(p).mode & 0o777;

describe('the private state directory', () => {
  it('is created with mode 0700, parents included', () => {
    const dir = path.join(root, 'a', 'b');
    ensurePrivateDir(dir);
    expect(mode(dir)).toBe(0o700);
  });

  it('accepts an existing private directory as it is', () => {
    const dir = path.join(root, 'mine');
    fs.mkdirSync(dir, { mode: 0o700 });
    expect(() => ensurePrivateDir(dir)).not.toThrow();
  });

  it('refuses an existing directory that other users can enter, without changing it', () => {
    const dir = path.join(root, 'shared');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o755);
    expect(() => ensurePrivateDir(dir)).toThrow(/accessible to other users \(mode 0755\).*chmod 700/);
    expect(mode(dir)).toBe(0o755);
  });

  it('refuses a path that is a file', () => {
    const file = path.join(root, 'file');
    fs.writeFileSync(file, '');
    const error = (() => {
      try {
        ensurePrivateDir(file);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(AgentError);
    expect((error as AgentError).code).toBe('bad_state');
  });
});

describe('atomic writes', () => {
  it('writes a 0600 file and leaves no temporary file behind', () => {
    const file = path.join(root, 'agent.json');
    writeFileAtomic(file, 'one');
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
    expect(mode(file)).toBe(0o600);
    writeFileAtomic(file, 'two');
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
    expect(fs.readdirSync(root)).toEqual(['agent.json']);
  });

  it('makes the replaced file 0600 even when the old one was wider', () => {
    const file = path.join(root, 'agent.json');
    fs.writeFileSync(file, 'old', { mode: 0o644 });
    writeFileAtomic(file, 'new');
    expect(mode(file)).toBe(0o600);
  });

  it('fails with a bad_state error and cleans up when the directory is missing', () => {
    expect(() => writeFileAtomic(path.join(root, 'missing', 'x.json'), 'x')).toThrow(/Cannot write .*ENOENT/);
  });

  it('reads a missing file as null', () => {
    expect(readFileIfExists(path.join(root, 'nope'))).toBeNull();
  });
});
