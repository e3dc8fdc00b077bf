import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { syncDir } from '../state/files.js';

/** What `<binary> --version` of a drover-agent says: `0.2.0 (Node.js 24.21.0, linux-x64)`. */
const VERSION_LINE = /^(\S{1,64}) \(Node\.js [^,()]+, ([^()]+)\)$/;

/** How long the new binary has to answer `--version`. */
export const VERSION_CHECK_TIMEOUT_MS = 30_000;

/** Where the new binary is written, beside the executable (same directory: the rename is atomic). */
export const stagedPath = (executable: string) => `${executable}.new`;
/** Where the binary that ran before is kept. */
export const previousPath = (executable: string) => `${executable}.previous`;

/**
 * Moves the verified artifact beside the executable as `<executable>.new`, mode 0755, flushed to
 * disk, off the event loop: renamed when both are on one file system, else copied (about 105 MB)
 * and the download removed, so that the job's workspace does not keep a second copy for days.
 * Throws (with the path in the message) when the directory cannot be written.
 */
export async function stageBinary(artifact: string, executable: string): Promise<string> {
  const staged = stagedPath(executable);
  await fs.promises.rm(staged, { force: true });
  try {
    await fs.promises.rename(artifact, staged);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await fs.promises.copyFile(artifact, staged);
    await fs.promises.rm(artifact, { force: true });
  }
  const handle = await fs.promises.open(staged, 'r+');
  try {
    await handle.chmod(0o755);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return staged;
}

/**
 * Runs `<binary> --version`: the version it reports, or why it is not a drover-agent that runs
 * on this machine (it does not start, answers something else, or is built for another platform).
 */
export function checkBinaryVersion(
  binary: string,
  timeoutMs = VERSION_CHECK_TIMEOUT_MS,
): Promise<{ ok: true; version: string; line: string } | { ok: false; problem: string }> {
  return new Promise((resolve) => {
    execFile(binary, ['--version'], { timeout: timeoutMs, maxBuffer: 64 * 1024 }, (error, stdout, stderr) => {
      const line = stdout.trim();
      if (error) {
        const how =
          error.killed || error.signal
            ? `was stopped (${error.signal ?? 'timeout'}) after ${timeoutMs / 1000}s`
            : typeof error.code === 'number'
              ? `exited with code ${error.code}`
              : `could not start (${error.message})`;
        const said = (stderr || stdout).trim().split('\n')[0]?.slice(0, 300);
        resolve({ ok: false, problem: `\`${binary} --version\` ${how}${said ? `: ${said}` : ''}` });
        return;
      }
      const match = VERSION_LINE.exec(line);
      if (!match) {
        resolve({
          ok: false,
          problem: `\`${binary} --version\` did not answer as drover-agent does (\`0.2.0 (Node.js 24.x, linux-x64)\`), got ${JSON.stringify(line.slice(0, 200))}`,
        });
        return;
      }
      const platform = `${process.platform}-${process.arch}`;
      if (match[2] !== platform) {
        resolve({ ok: false, problem: `the new binary is built for ${match[2]}, this machine is ${platform}` });
        return;
      }
      resolve({ ok: true, version: match[1]!, line });
    });
  });
}

/**
 * Keeps the running binary as `<executable>.previous`: a hard link (no copy; the rename below
 * leaves it pointing at the old binary), else a flushed copy when the file system has no links.
 */
export function keepPrevious(executable: string): string {
  const previous = previousPath(executable);
  fs.rmSync(previous, { force: true });
  try {
    fs.linkSync(executable, previous);
  } catch {
    copyDurably(executable, previous);
  }
  syncDir(path.dirname(executable));
  return previous;
}

/** Renames `from` over the executable (atomic: the executable is always one whole binary) and flushes the directory. */
export function replaceExecutable(from: string, executable: string): void {
  fs.renameSync(from, executable);
  syncDir(path.dirname(executable));
}

/**
 * Puts `<executable>.previous` back as the executable, atomically: a link (else a copy) of it
 * beside the executable, renamed over it. `.previous` stays.
 */
export function restorePrevious(previous: string, executable: string): void {
  const temp = `${executable}.rollback`;
  fs.rmSync(temp, { force: true });
  try {
    fs.linkSync(previous, temp);
  } catch {
    copyDurably(previous, temp);
  }
  replaceExecutable(temp, executable);
}

function copyDurably(from: string, to: string): void {
  fs.copyFileSync(from, to);
  const fd = fs.openSync(to, 'r+');
  try {
    fs.fchmodSync(fd, 0o755);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
