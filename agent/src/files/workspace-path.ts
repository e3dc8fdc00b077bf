import fs from 'node:fs';
import path from 'node:path';

export type WorkspacePath = { ok: true; path: string } | { ok: false; problem: string };

/**
 * Where an output `file:<path>` points (docs/agent-protocol.md): the path is taken relative to the job's
 * workspace (an absolute path is allowed when it lies inside it), then resolved with every
 * symbolic link followed; the result must still be inside the workspace (as resolved the same
 * way) and be a regular file. A link pointing out of the workspace, `../` climbing out of it, a
 * directory or a missing file are refused with a sentence saying which.
 */
export function resolveWorkspaceFile(workspace: string, given: string): WorkspacePath {
  if (given === '') return { ok: false, problem: 'names no file (nothing after `file:`)' };
  if (given.includes('\0')) return { ok: false, problem: 'contains a NUL character' };
  let root: string;
  try {
    root = fs.realpathSync(workspace);
  } catch (error) {
    return { ok: false, problem: `cannot be checked: the workspace is unreadable (${errorCode(error)})` };
  }
  const candidate = path.resolve(workspace, given);
  if (!isInside(path.resolve(workspace), candidate) && !isInside(root, candidate)) {
    return { ok: false, problem: 'is outside the job workspace' };
  }
  let real: string;
  try {
    real = fs.realpathSync(candidate);
  } catch (error) {
    const code = errorCode(error);
    return { ok: false, problem: code === 'ENOENT' ? 'does not exist' : `cannot be read (${code})` };
  }
  if (!isInside(root, real)) {
    return { ok: false, problem: 'is outside the job workspace (after following symbolic links)' };
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(real);
  } catch (error) {
    return { ok: false, problem: `cannot be read (${errorCode(error)})` };
  }
  if (!stat.isFile()) return { ok: false, problem: stat.isDirectory() ? 'is a directory' : 'is not a regular file' };
  return { ok: true, path: real };
}

/** True when `target` is `root` or below it (both absolute and resolved). */
export function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  if (relative === '') return true;
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}
