import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TransferError } from '../../src/files/transfer-error.js';
import { uploadFile } from '../../src/files/upload.js';

/**
 * A presigned upload asks `Expect: 100-continue` and sends its bytes once the server agreed: a
 * refusal is heard before any of them is sent (a server that refuses at once and closes while the
 * bytes are still going out leaves the client a reset connection instead of its answer).
 */

let dir: string;
let file: string;
const SIZE = 2 * 1024 * 1024;
const servers: { close(): unknown }[] = [];
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-upload-'));
  file = path.join(dir, 'big.bin');
  fs.writeFileSync(file, Buffer.alloc(SIZE, 7));
});
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function listen(server: http.Server | net.Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/upload`;
}

async function upload(url: string) {
  const handle = await fs.promises.open(file, 'r');
  try {
    return await uploadFile({
      url,
      method: 'PUT',
      headers: {},
      handle,
      size: SIZE,
      signal: new AbortController().signal,
    });
  } finally {
    await handle.close();
  }
}

describe('uploadFile', () => {
  it("hears a refusal before it sends a byte, and says the server's reason", async () => {
    const server = http.createServer(() => {});
    let received = 0;
    server.on('checkContinue', (req, res) => {
      req.on('data', (chunk: Buffer) => (received += chunk.length));
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ statusCode: 413, message: 'The file is larger than the limit of 1000 bytes' }));
    });
    const error = await upload(await listen(server)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransferError);
    expect(error).toMatchObject({
      kind: 'final',
      message: 'the upload was refused (HTTP 413: The file is larger than the limit of 1000 bytes)',
    });
    expect(received).toBe(0);
  });

  it('sends its bytes once told to go on', async () => {
    let received = 0;
    const server = http.createServer((req, res) => {
      req.on('data', (chunk: Buffer) => (received += chunk.length));
      req.on('end', () => res.end('{"ok":true}'));
    });
    expect(await upload(await listen(server))).toBe('{"ok":true}');
    expect(received).toBe(SIZE);
  });

  it('sends them after a pause to a server that ignores the expectation', async () => {
    let head = '';
    let received = 0;
    const server = net.createServer((socket) => {
      socket.on('data', (chunk: Buffer) => {
        if (!head.includes('\r\n\r\n')) {
          head += chunk.toString('latin1');
          const end = head.indexOf('\r\n\r\n');
          if (end === -1) return;
          received += Buffer.byteLength(head.slice(end + 4), 'latin1');
        } else received += chunk.length;
        if (received === SIZE) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
      });
    });
    const started = Date.now();
    expect(await upload(await listen(server))).toBe('ok');
    expect(head.toLowerCase()).toContain('expect: 100-continue');
    expect(received).toBe(SIZE);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});
