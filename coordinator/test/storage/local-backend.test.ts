import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlobUrlSigner } from '../../src/storage/blob-url.js';
import { UploadChangedError, UploadTooLargeError } from '../../src/storage/backend.js';
import { BlobTooLargeError, LocalBackend } from '../../src/storage/local-backend.js';

const FILE = '3b2c9a44-1f0e-4d55-9a8e-0c2f6b1d7e90';
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

describe('LocalBackend', () => {
  let root: string;
  let backend: LocalBackend;
  let now = Date.parse('2026-03-01T12:00:00Z');
  const files = () =>
    (fs.readdirSync(root, { recursive: true }) as string[])
      .filter((p) => fs.statSync(path.join(root, p)).isFile())
      .sort();

  beforeEach(async () => {
    root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-local-')), 'blobs');
    backend = new LocalBackend({
      root,
      signer: new BlobUrlSigner(randomBytes(32)),
      publicUrl: () => 'https://files.example.test',
      clock: { now: () => now },
    });
    await backend.init();
  });
  afterEach(() => fs.rmSync(path.dirname(root), { recursive: true, force: true }));

  it('derives the blob key from the file id only, sharded by its first two characters', () => {
    expect(backend.blobKeyFor(FILE)).toBe(`3b/${FILE}`);
    expect(backend.blobKeyFor(FILE.toUpperCase())).toBe(`3b/${FILE}`);
  });

  it('presigns PUT and GET URLs on the public URL that expire after the given seconds', async () => {
    const up = await backend.presignUpload({ id: FILE, blobKey: `3b/${FILE}`, contentType: 'text/csv' }, 900);
    expect(up.method).toBe('PUT');
    expect(up.headers).toEqual({ 'content-type': 'text/csv' });
    const exp = Math.floor(now / 1000) + 900;
    expect(up.url).toMatch(
      new RegExp(
        `^https://files\\.example\\.test/v1/storage/blobs/${FILE}\\?m=PUT&exp=${exp}&n=[A-Za-z0-9_-]{16}&sig=`,
      ),
    );
    const down = await backend.presignDownload(
      { id: FILE, blobKey: `3b/${FILE}`, filename: 'f', contentType: 'x/y', size: 1 },
      60,
    );
    expect(down.url).toContain(`m=GET&exp=${Math.floor(now / 1000) + 60}&`);
  });

  const target = { id: FILE, blobKey: `3b/${FILE}` };
  /** Receives `data` and completes it: the newest staged upload promoted into the blob. */
  const place = async (data: Buffer | string) => {
    await backend.receive(`3b/${FILE}`, Readable.from([Buffer.from(data)]), 1 << 20);
    const upload = await backend.findUpload(target, 1 << 20);
    await backend.promote(target, upload!);
    await backend.discardUploads(target);
  };

  it('receives a stream into a staged upload of its own, its hash in its name, never the blob', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const stat = await backend.receive(
      `3b/${FILE}`,
      Readable.from([data.subarray(0, 1000), data.subarray(1000)]),
      data.length,
    );
    expect(stat).toEqual({ size: data.length, sha256: sha(data), upload: expect.stringMatching(/^3b2c.*\.\d{20}\./) });
    expect(files()).toEqual([`uploads/3b/${stat.upload}`]);
    expect(stat.upload.endsWith(`.${sha(data)}`)).toBe(true);
    expect(await backend.stat(`3b/${FILE}`)).toBeNull();
    expect(await backend.findUpload(target, data.length)).toEqual({
      ref: stat.upload,
      size: data.length,
      sha256: sha(data),
    });
    await backend.promote(target, (await backend.findUpload(target, data.length))!);
    expect(files()).toEqual([`3b/${FILE}`, `3b/${FILE}.meta`]);
    expect(fs.readFileSync(path.join(root, '3b', FILE)).equals(data)).toBe(true);
    expect(await backend.stat(`3b/${FILE}`)).toEqual({ size: data.length, sha256: sha(data) });
  });

  it('finds the newest staged upload, refuses one over the limit by its size, and removes the others', async () => {
    expect(await backend.findUpload(target, 100)).toBeNull();
    await backend.receive(`3b/${FILE}`, Readable.from([Buffer.from('first')]), 100);
    const second = await backend.receive(`3b/${FILE}`, Readable.from([Buffer.from('second!')]), 100);
    const found = await backend.findUpload(target, 100);
    expect(found).toEqual({ ref: second.upload, size: 7, sha256: sha('second!') });
    await expect(backend.findUpload(target, 6)).rejects.toBeInstanceOf(UploadTooLargeError);
    await backend.discardUploads(target);
    expect(files()).toEqual([]);
    await expect(backend.promote(target, found!)).rejects.toBeInstanceOf(UploadChangedError);
  });

  it('leaves a promoted blob alone when later uploads come and go', async () => {
    await place('first');
    const late = await backend.receive(`3b/${FILE}`, Readable.from([Buffer.from('later!')]), 100);
    await backend.discardUpload(target, late.upload);
    expect(files()).toEqual([`3b/${FILE}`, `3b/${FILE}.meta`]);
    expect(await backend.stat(`3b/${FILE}`)).toEqual({ size: 5, sha256: sha('first') });
  });

  it('refuses a stream passing the limit and leaves nothing behind', async () => {
    const source = Readable.from([Buffer.alloc(600), Buffer.alloc(600)]);
    await expect(backend.receive(`3b/${FILE}`, source, 1000)).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(files()).toEqual([]);
    expect(await backend.findUpload(target, 10_000)).toBeNull();
  });

  it('leaves nothing behind when the source fails midway, and keeps an earlier blob untouched', async () => {
    await place('first');
    const source = new PassThrough();
    const receiving = backend.receive(`3b/${FILE}`, source, 1 << 20);
    source.write(Buffer.alloc(1000));
    setTimeout(() => source.destroy(new Error('client went away')), 20);
    await expect(receiving).rejects.toThrow('client went away');
    expect(files()).toEqual([`3b/${FILE}`, `3b/${FILE}.meta`]);
    expect(await backend.stat(`3b/${FILE}`)).toEqual({ size: 5, sha256: sha('first') });
  });

  it('hashes the blob again when its sidecar is missing or stale', async () => {
    await place('hello');
    fs.rmSync(path.join(root, '3b', `${FILE}.meta`));
    expect(await backend.stat(`3b/${FILE}`)).toEqual({ size: 5, sha256: sha('hello') });
    fs.writeFileSync(path.join(root, '3b', FILE), 'changed!');
    fs.writeFileSync(path.join(root, '3b', `${FILE}.meta`), JSON.stringify({ size: 5, sha256: sha('hello') }));
    expect(await backend.stat(`3b/${FILE}`)).toEqual({ size: 8, sha256: sha('changed!') });
  });

  it('deletes a blob, its sidecar and staged uploads, and a missing blob without complaint', async () => {
    await place('x');
    await backend.receive(`3b/${FILE}`, Readable.from([Buffer.from('y')]), 100);
    await backend.delete(`3b/${FILE}`);
    expect(files()).toEqual([]);
    await expect(backend.delete(`3b/${FILE}`)).resolves.toBeUndefined();
  });

  it('reads a whole blob or a byte range, and answers null for a missing one', async () => {
    await place('0123456789');
    const read = async (range?: { start: number; end: number }) => {
      const reader = await backend.openRead(`3b/${FILE}`, range);
      const parts: Buffer[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          parts.push(Buffer.from(chunk));
          done();
        },
      });
      await reader!.writeTo(sink);
      return Buffer.concat(parts).toString();
    };
    expect(await read()).toBe('0123456789');
    expect(await read({ start: 2, end: 4 })).toBe('234');
    expect(await backend.openRead(`3b/${FILE.replace('3b2c', '3b2d')}`)).toBeNull();
  });

  it('refuses keys that could point outside the blob directory', async () => {
    for (const key of ['../x', `3b/../../${FILE}`, `/etc/passwd`, FILE, `3b/${FILE}/..`]) {
      await expect(backend.stat(key)).rejects.toThrow(/not a local blob key/);
      await expect(backend.delete(key)).rejects.toThrow(/not a local blob key/);
    }
  });

  it('removes temp files left by an earlier process at start, and stale ones later', async () => {
    const tmp = path.join(root, 'tmp');
    fs.writeFileSync(path.join(tmp, `${FILE}.aaaa.part`), 'left over');
    fs.writeFileSync(path.join(tmp, 'unrelated.txt'), 'kept');
    await backend.init();
    expect(fs.readdirSync(tmp)).toEqual(['unrelated.txt']);

    const recent = path.join(tmp, `${FILE}.bbbb.part`);
    fs.writeFileSync(recent, 'recent');
    fs.utimesSync(recent, now / 1000, now / 1000);
    expect(await backend.removeTemps(3600_000)).toBe(0);
    now += 3600_001;
    expect(await backend.removeTemps(3600_000)).toBe(1);
    expect(fs.readdirSync(tmp)).toEqual(['unrelated.txt']);
  });
});
