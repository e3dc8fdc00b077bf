import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { testRuntime } from './test-runtime.js';

const FILE_ID = '019ac0de-0000-7000-8000-0000000f11e5';
const SIZE = 3 * 1024 * 1024;

let server: http.Server | undefined;
let dir: string | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A coordinator and its local storage for `files upload`: the presign, the PUT (each chunk seen
 * by `onPutData`, which may break the connection: it gets the request), the complete.
 */
async function fakeStorage(
  sha256: string,
  onPutData: (put: number, received: number, req: http.IncomingMessage) => void,
): Promise<{
  url: string;
  puts: () => number;
  completes: () => number;
  onPut: (handler: typeof onPutData) => void;
}> {
  let handler = onPutData;
  let puts = 0;
  let completes = 0;
  server = http.createServer((req, res) => {
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'PUT') {
      puts++;
      const put = puts;
      let received = 0;
      req.on('data', (chunk: Buffer) => {
        received += chunk.length;
        handler(put, received, req);
      });
      req.on('end', () => json(200, { fileId: FILE_ID, size: received, sha256 }));
      return;
    }
    req.resume();
    req.on('end', () => {
      if (req.url === '/v1/storage/files/presign-upload') {
        json(201, {
          fileId: FILE_ID,
          uploadUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/blob`,
          method: 'PUT',
          headers: {},
          expiresInSeconds: 900,
        });
      } else if (req.url === `/v1/storage/files/${FILE_ID}/complete`) {
        completes++;
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
      } else json(404, { statusCode: 404, code: 'not_found', message: 'Not found' });
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    puts: () => puts,
    completes: () => completes,
    onPut: (next) => {
      handler = next;
    },
  };
}

describe('drover files upload', () => {
  it('tries again with the file opened afresh when the connection breaks during an attempt', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-upload-'));
    const bytes = Buffer.alloc(SIZE, 9);
    fs.writeFileSync(path.join(dir, 'app.bin'), bytes);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    // The first attempt's connection breaks halfway.
    const storage = await fakeStorage(sha256, (put, received, req) => {
      if (put === 1 && received > SIZE / 2) req.socket.destroy();
    });
    const rt = testRuntime({ cwd: dir, env: { DROVER_URL: storage.url, DROVER_TOKEN: 'drv_x' } });
    const code = await runCli(['files', 'upload', 'app.bin'], rt);
    expect(rt.stderr()).toMatch(
      /^drover: the upload of app\.bin failed \(the upload failed: \w+\); trying again \(attempt 2 of 3\)\n/,
    );
    expect(code).toBe(0);
    expect(rt.stdout()).toBe(`${FILE_ID}\n`);
    expect(rt.stderr()).toContain(`SHA-256 ${sha256} (the same on the coordinator)`);
    expect(storage.puts()).toBe(2);
  });

  it('refuses to complete a file that changed while it was uploaded, and sends no more than it announced', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-upload-'));
    const file = path.join(dir, 'app.bin');
    const bytes = Buffer.alloc(SIZE, 9);
    fs.writeFileSync(file, bytes);
    let sent = 0;
    // A writer appends to the file while its first bytes are on their way.
    const storage = await fakeStorage(createHash('sha256').update(bytes).digest('hex'), (_put, received) => {
      if (sent === 0) fs.appendFileSync(file, Buffer.alloc(1024, 7));
      sent = received;
    });
    const rt = testRuntime({ cwd: dir, env: { DROVER_URL: storage.url, DROVER_TOKEN: 'drv_x' } });
    const code = await runCli(['files', 'upload', 'app.bin'], rt);
    expect(code).not.toBe(0);
    expect(rt.stderr()).toContain(
      `app.bin changed while it was uploaded (${SIZE} bytes when it started, ${SIZE + 1024} now); the file is left pending: upload it again once it is written`,
    );
    expect(sent).toBe(SIZE);
    expect(storage.completes()).toBe(0);

    // Replaced by a file of the same size and modification time (`cp -p`, `rsync -t`).
    fs.writeFileSync(file, bytes);
    const copy = path.join(dir, 'copy.bin');
    fs.writeFileSync(copy, Buffer.alloc(SIZE, 8));
    const { mtime } = fs.statSync(file);
    fs.utimesSync(copy, mtime, mtime);
    let replaced = false;
    storage.onPut((_put, received) => {
      if (!replaced && received > 0) {
        fs.renameSync(copy, file);
        replaced = true;
      }
    });
    const again = testRuntime({ cwd: dir, env: { DROVER_URL: storage.url, DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['files', 'upload', 'app.bin'], again)).not.toBe(0);
    expect(again.stderr()).toContain('app.bin changed while it was uploaded (another file took its place)');
    expect(storage.completes()).toBe(0);
  });
});
