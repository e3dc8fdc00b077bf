import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { testRuntime } from './test-runtime.js';

/** `drover files download <id> -o -`: the file's bytes on standard output, and nothing else there. */

const FILE_ID = '019ac0de-0000-7000-8000-0000000f11e5';
const SIZE = 3 * 1024 * 1024;
const BYTES = randomBytes(SIZE);
const SHA256 = createHash('sha256').update(BYTES).digest('hex');

let server: http.Server | undefined;
let dir: string | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A coordinator and its local storage serving one file, its ETag the SHA-256 given. */
async function fakeStorage(etagSha256: string): Promise<{ url: string; blobs: () => number }> {
  let blobs = 0;
  server = http.createServer((req, res) => {
    req.resume();
    const origin = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/blob') {
      blobs++;
      res.writeHead(200, { 'content-length': String(SIZE), etag: `"${etagSha256}"` }).end(BYTES);
    } else if (req.url === `/v1/storage/files/${FILE_ID}`) {
      json(200, {
        id: FILE_ID,
        bindingId: FILE_ID,
        filename: 'app.bin',
        contentType: 'application/octet-stream',
        size: SIZE,
        status: 'active',
        cleanupRule: 'ttl',
        expiresAt: '2099-01-01T00:00:00.000Z',
        deletedAt: null,
        createdAt: '2026-11-25T09:58:00.000Z',
      });
    } else if (req.url === `/v1/storage/files/${FILE_ID}/download-url`) {
      json(200, { downloadUrl: `${origin}/blob`, expiresInSeconds: 900 });
    } else json(404, { statusCode: 404, code: 'not_found', message: 'Not found' });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, blobs: () => blobs };
}

describe('drover files download -o -', () => {
  it('writes the bytes to standard output, nothing else there, and no file', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-stdout-'));
    const storage = await fakeStorage(SHA256);
    const rt = testRuntime({ cwd: dir, env: { DROVER_URL: storage.url, DROVER_TOKEN: 'drv_x' } });
    const code = await runCli(['files', 'download', FILE_ID, '-o', '-', '--sha256', SHA256], rt);
    expect(rt.stderr()).toBe(
      `Downloaded ${FILE_ID} (3.1 MB)\nSHA-256 ${SHA256} (matches the checksum the storage recorded and --sha256)\n`,
    );
    expect(code).toBe(0);
    expect(rt.stdout()).toBe('');
    expect(rt.stdoutBytes().equals(BYTES)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('fails on a checksum that does not match, saying the bytes written cannot be taken back', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-stdout-'));
    const other = 'ab'.repeat(32);
    const storage = await fakeStorage(other);
    const rt = testRuntime({ cwd: dir, env: { DROVER_URL: storage.url, DROVER_TOKEN: 'drv_x' } });
    const code = await runCli(['files', 'download', FILE_ID, '-o', '-'], rt);
    expect(code).toBe(2);
    expect(rt.stderr()).toBe(
      `drover: the download of ${FILE_ID} has the SHA-256 ${SHA256}, not ${other} (the one the storage recorded); ` +
        'its bytes were already written to standard output, which cannot take them back: do not use them\n',
    );
    expect(rt.stdout()).toBe('');
    expect(rt.stdoutBytes().length).toBe(SIZE);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(storage.blobs()).toBe(1);
  });

  it('ends quietly with 141 when the reader of standard output goes away', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-stdout-'));
    const storage = await fakeStorage(SHA256);
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const cli = fileURLToPath(new URL('..', import.meta.url)); // where `--import tsx` resolves
    // A process of its own, its standard output a pipe closed after the first bytes (`| head -c 1`).
    const child = spawn(
      process.execPath,
      ['--conditions=drover-source', '--import', 'tsx', main, 'files', 'download', FILE_ID, '-o', '-'],
      {
        cwd: cli,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, DROVER_URL: storage.url, DROVER_TOKEN: 'drv_x', XDG_CONFIG_HOME: dir },
      },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.once('data', () => child.stdout.destroy());
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(status).toBe(141);
    expect(fs.existsSync(path.join(cli, '-'))).toBe(false);
  }, 30_000);
});
