import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isInside, resolveWorkspaceFile } from '../../src/files/workspace-path.js';

let root: string;
let workspace: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-ws-'));
  workspace = path.join(root, 'workspace');
  fs.mkdirSync(path.join(workspace, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(workspace, 'out.txt'), 'x');
  fs.writeFileSync(path.join(workspace, 'sub', 'deep.txt'), 'y');
  fs.writeFileSync(path.join(root, 'outside.txt'), 'secret');
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const real = (p: string) => fs.realpathSync(p);

describe('resolveWorkspaceFile', () => {
  it('accepts a relative path inside the workspace, and an absolute one that lies inside', () => {
    expect(resolveWorkspaceFile(workspace, 'out.txt')).toEqual({
      ok: true,
      path: real(path.join(workspace, 'out.txt')),
    });
    expect(resolveWorkspaceFile(workspace, './sub/../sub/deep.txt')).toEqual({
      ok: true,
      path: real(path.join(workspace, 'sub', 'deep.txt')),
    });
    expect(resolveWorkspaceFile(workspace, path.join(workspace, 'out.txt'))).toMatchObject({ ok: true });
  });

  it('refuses a path climbing out of the workspace, and an absolute path elsewhere', () => {
    expect(resolveWorkspaceFile(workspace, '../outside.txt')).toEqual({
      ok: false,
      problem: 'is outside the job workspace',
    });
    expect(resolveWorkspaceFile(workspace, '/etc/passwd')).toEqual({
      ok: false,
      problem: 'is outside the job workspace',
    });
    expect(resolveWorkspaceFile(workspace, 'sub/../../outside.txt')).toMatchObject({ ok: false });
  });

  it('refuses a symbolic link that points out of the workspace, also through a linked directory', () => {
    fs.symlinkSync(path.join(root, 'outside.txt'), path.join(workspace, 'link.txt'));
    fs.symlinkSync(root, path.join(workspace, 'up'));
    expect(resolveWorkspaceFile(workspace, 'link.txt')).toEqual({
      ok: false,
      problem: 'is outside the job workspace (after following symbolic links)',
    });
    expect(resolveWorkspaceFile(workspace, 'up/outside.txt')).toMatchObject({ ok: false });
  });

  it('accepts a symbolic link that stays inside the workspace', () => {
    fs.symlinkSync('sub/deep.txt', path.join(workspace, 'alias.txt'));
    expect(resolveWorkspaceFile(workspace, 'alias.txt')).toEqual({
      ok: true,
      path: real(path.join(workspace, 'sub', 'deep.txt')),
    });
  });

  it('refuses a missing file, a directory, the workspace itself, an empty path and a NUL byte', () => {
    expect(resolveWorkspaceFile(workspace, 'nope.txt')).toEqual({ ok: false, problem: 'does not exist' });
    expect(resolveWorkspaceFile(workspace, 'sub')).toEqual({ ok: false, problem: 'is a directory' });
    expect(resolveWorkspaceFile(workspace, '.')).toEqual({ ok: false, problem: 'is a directory' });
    expect(resolveWorkspaceFile(workspace, '')).toMatchObject({
      ok: false,
      problem: expect.stringContaining('names no file'),
    });
    expect(resolveWorkspaceFile(workspace, 'out.txt\0.png')).toEqual({
      ok: false,
      problem: 'contains a NUL character',
    });
  });

  it('treats a file whose name starts with two dots as inside', () => {
    fs.writeFileSync(path.join(workspace, '..hidden'), 'z');
    expect(resolveWorkspaceFile(workspace, '..hidden')).toMatchObject({ ok: true });
  });
});

describe('isInside', () => {
  it('says whether a path is the root or below it', () => {
    expect(isInside('/a/b', '/a/b')).toBe(true);
    expect(isInside('/a/b', '/a/b/c')).toBe(true);
    expect(isInside('/a/b', '/a/bc')).toBe(false);
    expect(isInside('/a/b', '/a')).toBe(false);
    expect(isInside('/a/b', '/a/b/..c')).toBe(true);
  });
});
