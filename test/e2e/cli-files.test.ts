import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBlobProxy, type BlobProxy } from '../helpers/blob-proxy.js';
import {
  DROVER,
  buildDrover,
  drover,
  droverInProcess,
  spawnDrover,
  stopDrover,
  type DroverProcess,
} from '../helpers/cli-binary.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { eventually } from '../helpers/poll.js';
import { FILE_FIELDS, sha256 as sha256Of } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * `drover files upload|download`, the built single executable against a real coordinator whose
 * presigned URLs go through a proxy that can break a download in the middle.
 */

const MB = 1024 * 1024;
const SIZE = 50 * MB;

const sha256 = (file: string) => sha256Of(fs.readFileSync(file));

describe('drover files', () => {
  let t: TestCoordinator;
  let proxy: BlobProxy;
  let work: string;
  let env: Record<string, string>;
  let source: string;
  let sourceSha: string;
  let fileId: string;
  let running: DroverProcess | undefined;
  beforeAll(async () => {
    proxy = await startBlobProxy();
    t = await startTestCoordinator({ env: { DROVER_PUBLIC_URL: proxy.url } });
    proxy.target(t.url);
    work = makeTempDir('drover-cli-files-');
    const token = await issueApiToken(t.owner, t.orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
    ]);
    env = { DROVER_URL: t.url, DROVER_TOKEN: token.token, XDG_CONFIG_HOME: path.join(work, 'config') };
    source = path.join(work, 'firmware.bin');
    fs.writeFileSync(source, randomBytes(SIZE));
    sourceSha = sha256(source);
    await buildDrover();
  }, 300_000);
  afterAll(async () => {
    await stopDrover(running);
    await t?.close();
    await proxy?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('uploads 50 MB, prints the file id, and checks the SHA-256 the coordinator received', async () => {
    const up = await drover(['files', 'upload', 'firmware.bin', '--ttl', '2h'], { env, cwd: work });
    expect(up.stderr).toContain(`SHA-256 ${sourceSha} (the same on the coordinator)`);
    expect(up.code).toBe(0);
    fileId = up.stdout.trim();
    const file = (await t.owner.get(`/orgs/${t.orgId}/files/${fileId}`)).body;
    expect(file).toMatchObject({
      id: fileId,
      filename: 'firmware.bin',
      size: SIZE,
      status: 'active',
      cleanupRule: 'ttl',
    });
    const hoursLeft = (Date.parse(file.expiresAt) - Date.now()) / 3_600_000;
    expect(hoursLeft).toBeGreaterThan(1.9);
    expect(hoursLeft).toBeLessThanOrEqual(2);
  });

  it('prints the metadata the API answers with --json', async () => {
    const small = path.join(work, 'notes.txt');
    fs.writeFileSync(small, 'hello\n');
    const up = await drover(['files', 'upload', small, '--persistent', '--json'], { env });
    expect(up.code).toBe(0);
    const file = JSON.parse(up.stdout);
    expect(Object.keys(file).sort()).toEqual(FILE_FIELDS);
    expect(file).toMatchObject({
      filename: 'notes.txt',
      contentType: 'text/plain',
      size: 6,
      cleanupRule: 'persistent',
    });
  });

  it('downloads the 50 MB back and checks them against the checksum the storage recorded', async () => {
    const out = path.join(work, 'whole.bin');
    const down = await drover(['files', 'download', fileId, '-o', out, '--sha256', sourceSha], { env });
    expect(down.stderr).toContain(`SHA-256 ${sourceSha} (matches the checksum the storage recorded and --sha256)`);
    expect(down.code).toBe(0);
    expect(down.stdout.trim()).toBe(out);
    expect(sha256(out)).toBe(sourceSha);
    expect(fs.readdirSync(work).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  it('writes the 50 MB to standard output with -o -, checked, and no file', async () => {
    // `drover files download <id> -o - > piped.bin`: standard output is the file here.
    const piped = path.join(work, 'piped.bin');
    const fd = fs.openSync(piped, 'w');
    const child = spawn(DROVER, ['files', 'download', fileId, '-o', '-', '--sha256', sourceSha], {
      cwd: work,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', fd, 'pipe'],
    });
    fs.closeSync(fd);
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toContain(`SHA-256 ${sourceSha} (matches the checksum the storage recorded and --sha256)`);
    expect(code).toBe(0);
    expect(sha256(piped)).toBe(sourceSha);
    expect(fs.existsSync(path.join(work, '-'))).toBe(false);
    fs.rmSync(piped);
  });

  it('goes on from where a download was cut off, with a range request', async () => {
    const out = path.join(work, 'cut.bin');
    const before = proxy.ranges.length;
    proxy.breakNext({ cutAfter: 20 * MB });
    const down = await drover(['files', 'download', fileId, '-o', out], { env });
    expect(down.stderr).toMatch(/going on from \d/);
    expect(down.code).toBe(0);
    const [first, second] = proxy.ranges.slice(before);
    expect(first).toBeUndefined();
    const from = Number(/^bytes=(\d+)-$/.exec(second ?? '')?.[1]);
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThanOrEqual(20 * MB);
    expect(sha256(out)).toBe(sourceSha);
  });

  it('resumes at the next run a download whose process was killed', async () => {
    const out = path.join(work, 'resumed.bin');
    const part = `${out}.${fileId}.part`;
    proxy.breakNext({ stallAfter: 20 * MB });
    running = spawnDrover(['files', 'download', fileId, '-o', out], { env });
    await eventually(() => fs.statSync(part, { throwIfNoEntry: false })?.size === 20 * MB, 20_000, 'the part file');
    running.child.kill('SIGKILL');
    await running.exited;

    const before = proxy.ranges.length;
    const again = await drover(['files', 'download', fileId, '-o', out], { env });
    expect(again.stderr).toContain(`resuming the download of ${fileId} at 21 MB of 52.4 MB`);
    expect(again.stderr).toContain(`SHA-256 ${sourceSha} (matches the checksum the storage recorded)`);
    expect(again.code).toBe(0);
    expect(proxy.ranges.slice(before)).toEqual([`bytes=${20 * MB}-`]);
    expect(sha256(out)).toBe(sourceSha);
    expect(fs.existsSync(part)).toBe(false);
  });

  it('downloads a file whose name is as long as a name may be, its part file named within the limit', async () => {
    // 244 bytes of UTF-8: a name the disk takes, to which `.<file id>.part` adds 42 bytes.
    const name = `${'é'.repeat(120)}.bin`;
    const from = makeTempDir('drover-cli-long-name-');
    const into = makeTempDir('drover-cli-long-name-');
    try {
      fs.writeFileSync(path.join(from, name), 'long name');
      const up = await droverInProcess(['files', 'upload', name], { env, cwd: from });
      expect(up.code).toBe(0);
      const down = await droverInProcess(['files', 'download', up.stdout.trim()], { env, cwd: into });
      expect(down.stderr).not.toContain('ENAMETOOLONG');
      expect(down.code).toBe(0);
      expect(fs.readdirSync(into)).toEqual([name]);
      expect(fs.readFileSync(path.join(into, name), 'utf8')).toBe('long name');
    } finally {
      fs.rmSync(from, { recursive: true, force: true });
      fs.rmSync(into, { recursive: true, force: true });
    }
  });

  it('removes a download that does not have the SHA-256 given, and exits 2', async () => {
    const out = path.join(work, 'wrong.bin');
    const wrong = 'ab'.repeat(32);
    const down = await drover(['files', 'download', fileId, '-o', out, '--sha256', wrong], { env });
    expect(down.code).toBe(2);
    expect(down.stderr).toBe(
      `drover: the download of ${fileId} has the SHA-256 ${sourceSha}, not ${wrong} (the one given with --sha256); removed it\n`,
    );
    expect(fs.readdirSync(work).filter((f) => f.startsWith('wrong.bin'))).toEqual([]);
  });

  it("says the API's message in one line and exits 2 for a bad token or an unknown file", async () => {
    const bad = await drover(['files', 'download', fileId], { env: { ...env, DROVER_TOKEN: 'drv_nope' }, cwd: work });
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toMatch(/^drover: [^\n]*token[^\n]*\n$/i);
    const unknown = await drover(['files', 'download', '0190c0de-0000-7000-8000-000000000000'], { env, cwd: work });
    expect(unknown).toMatchObject({ code: 2, stdout: '', stderr: 'drover: File not found\n' });
  });

  it("prints the coordinator's 413 in one line for a file over its limit, and exits 2", async () => {
    const small = await startTestCoordinator({ env: { DROVER_MAX_FILE_BYTES: String(MB) } });
    try {
      const token = await issueApiToken(small.owner, small.orgId, [
        { type: 'storage', bindingIds: null, permissions: ['write'] },
      ]);
      // Larger than the limit, smaller than what the network takes before the coordinator answers:
      // the refusal once came while the bytes were still going out (EPIPE, then a crash on retry).
      fs.writeFileSync(path.join(work, 'over.bin'), randomBytes(1.5 * MB));
      const up = await drover(['files', 'upload', 'over.bin'], {
        env: { ...env, DROVER_URL: small.url, DROVER_TOKEN: token.token },
        cwd: work,
      });
      expect(up).toEqual({
        code: 2,
        stdout: '',
        stderr: `drover: the upload was refused (HTTP 413: The file is larger than the limit of ${MB} bytes)\n`,
      });
    } finally {
      await small.close();
    }
  });

  it('refuses --ttl with --persistent before calling the API (exit 2)', async () => {
    const res = await drover(['files', 'upload', source, '--ttl', '1d', '--persistent'], { env });
    expect(res).toMatchObject({ code: 2, stderr: 'drover: choose --ttl or --persistent, not both\n' });
  });

  it('lists the files 200 at a time and says the command of the next page with --cursor', async () => {
    const presign = { filename: 'listed.txt', cleanupRule: 'persistent' };
    for (let i = 0; i < 201; i++) await t.owner.post(`/orgs/${t.orgId}/files/presign-upload`, { body: presign });
    const first = await drover(['files', 'list', '--status', 'pending'], { env });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.split('\n')[0]).toMatch(/^ID +NAME +STATUS +SIZE +CREATED$/);
    const more = /^More files follow: drover files list --status pending --cursor (\S+)\n$/.exec(first.stderr);
    expect(more, first.stderr).not.toBeNull();
    const next = await drover(['files', 'list', '--status', 'pending', '--cursor', more![1]!, '--json'], { env });
    expect(next.code, next.stderr).toBe(0);
    const page = JSON.parse(next.stdout) as { id: string; status: string }[];
    expect(page.length).toBeGreaterThan(0);
    expect(page.every((f) => f.status === 'pending' && !first.stdout.includes(f.id))).toBe(true);
    const bad = await drover(['files', 'list', '--cursor', 'nope'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('cursor');
  });
});
