import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const AGENT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = path.join(AGENT, 'src/cli/main.ts');

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-pipe-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/**
 * Runs `drover-agent <args>` from the sources with its standard output read by a reader that goes
 * away after the first chunk, as `| head -1` does; its exit code and standard error.
 */
function readOnce(...args: string[]): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  const child = spawn(process.execPath, ['--conditions=drover-source', '--import', 'tsx', MAIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.once('data', () => child.stdout.destroy());
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stderr })));
}

describe('drover-agent, when whoever reads its output goes away', () => {
  it('`logs | head -1` exits 141 quietly, as a tool SIGPIPE ended, without a stack trace', async () => {
    const logs = path.join(root, 'logs');
    fs.mkdirSync(logs, { recursive: true, mode: 0o700 });
    const line = (i: number) =>
      JSON.stringify({ level: 30, time: '2026-12-02T10:00:00.000Z', pid: 1, msg: `line ${i} ${'x'.repeat(200)}` });
    // More than a pipe holds (64 KiB), so that the writes go on after the reader left.
    fs.writeFileSync(path.join(logs, 'agent.log'), `${Array.from({ length: 5000 }, (_, i) => line(i)).join('\n')}\n`, {
      mode: 0o600,
    });
    fs.chmodSync(root, 0o700);
    const result = await readOnce('logs', '--state-dir', root);
    expect(result).toEqual({ code: 141, signal: null, stderr: '' });
  }, 60_000);
});
