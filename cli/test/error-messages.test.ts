import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';

/** Failures that say what to do next: a token without a storage grant, a missing directory, a job left running. */

const FILE_ID = '019ac0de-0000-7000-8000-0000000f11e5';
const JOB_ID = '019ac0de-0000-7000-8000-000000000b01';

let api: FakeCoordinator | undefined;
let dir: string | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const forbidden = (message: string) => [403, { statusCode: 403, code: 'forbidden', message }] as [number, unknown];

/** Runs `drover <args>` with an API token and no session; the fake coordinator and the directory are the test's. */
async function cli(args: string[], routes: Parameters<typeof fakeCoordinator>[0] = {}) {
  if (api === undefined) {
    api = await fakeCoordinator(routes);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-errors-'));
    fs.writeFileSync(path.join(dir, 'fw-1.bin'), 'firmware');
  }
  // No session: the configuration directory is an empty one.
  const rt = testRuntime({
    cwd: dir,
    homedir: dir,
    env: { DROVER_URL: api.url, DROVER_TOKEN: 'drv_x', XDG_CONFIG_HOME: path.join(dir!, 'config') },
  });
  const code = await runCli(args, rt);
  return { code, stdout: rt.stdout(), stderr: rt.stderr() };
}

describe('drover files with an API token the storage API refuses', () => {
  it('says how to issue a token with a storage grant when the token has none', async () => {
    const res = await cli(['files', 'upload', 'fw-1.bin'], {
      'POST /v1/storage/files/presign-upload': forbidden('This API token has no storage grant'),
    });
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: This API token has no storage grant: use a token whose grant allows it, issued by a member signed ' +
        "in with `drover api-token create --name <name> --storage read,write` (or the dashboard's API tokens page)\n",
    });
  });

  it('names the permission a download needs when the grant lacks it', async () => {
    const res = await cli(['files', 'download', FILE_ID], {
      [`GET /v1/storage/files/${FILE_ID}`]: forbidden("This API token's storage grant lacks the `read` permission"),
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(
      "drover: This API token's storage grant lacks the `read` permission: use a token whose grant allows it, " +
        'issued by a member signed in with `drover api-token create --name <name> --storage read` ' +
        "(or the dashboard's API tokens page)\n",
    );
  });

  it('leaves any other refusal as the API words it', async () => {
    const res = await cli(['files', 'download', FILE_ID], {
      [`GET /v1/storage/files/${FILE_ID}`]: [404, { statusCode: 404, code: 'not_found', message: 'File not found' }],
    });
    expect(res).toMatchObject({ code: 2, stderr: 'drover: File not found\n' });
  });
});

describe('drover files download -o into a directory that does not exist', () => {
  it('says so before any call, and what to run', async () => {
    const res = await cli(['files', 'download', FILE_ID, '-o', 'dl/']);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(
      `drover: cannot write to dl/: the directory ${path.join(dir!, 'dl')} does not exist; create it first (mkdir -p dl)\n`,
    );
    const file = await cli(['files', 'download', FILE_ID, '-o', 'out/fw.bin']);
    expect(file.stderr).toBe(
      `drover: cannot write to out/fw.bin: the directory ${path.join(dir!, 'out')} does not exist; create it first (mkdir -p out)\n`,
    );
    const notDir = await cli(['files', 'download', FILE_ID, '-o', 'fw-1.bin/x.bin']);
    expect(notDir.stderr).toBe(
      `drover: cannot write to fw-1.bin/x.bin: ${path.join(dir!, 'fw-1.bin')} is not a directory\n`,
    );
    expect(api!.calls).toEqual([]);
  });
});

describe('drover run --wait on an async trigger with an API token alone', () => {
  it('says that the job keeps running, and exits 2', async () => {
    const res = await cli(['run', 'greet', '--wait'], {
      'POST /v1/triggers/greet/run': [202, { jobId: JOB_ID, status: 'pending', statusUrl: `/api/jobs/${JOB_ID}` }],
    });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe(`Job ${JOB_ID} pending\n${api!.url}/api/jobs/${JOB_ID}\n`);
    expect(res.stderr).toBe(
      `drover: --wait on an async trigger needs a session to follow the job (drover login); job ${JOB_ID} keeps running\n`,
    );
  });
});

describe('a coordinator that answers with a redirect', () => {
  it('names where it redirects and the --url to pass, without following it', async () => {
    const res = await cli(['files', 'download', FILE_ID], {
      [`GET /v1/storage/files/${FILE_ID}`]: [
        308,
        {},
        { location: `https://drover.example.com/v1/storage/files/${FILE_ID}` },
      ],
    });
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `drover: the coordinator at ${api!.url} redirects to https://drover.example.com/v1/storage/files/${FILE_ID}: ` +
        'use --url https://drover.example.com\n',
    });
    expect(api!.calls).toEqual([`GET /v1/storage/files/${FILE_ID}`]);
  });

  it('resolves a relative Location against the coordinator', async () => {
    const res = await cli(['files', 'download', FILE_ID], {
      [`GET /v1/storage/files/${FILE_ID}`]: [301, {}, { location: '/elsewhere' }],
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(
      `drover: the coordinator at ${api!.url} redirects to ${api!.url}/elsewhere: use --url ${api!.url}\n`,
    );
  });
});

describe('drover files download without -o, onto a file of the same name here', () => {
  const stored = {
    id: FILE_ID,
    bindingId: 'b',
    filename: '.npmrc',
    contentType: 'application/octet-stream',
    size: 9, // `"payload"`: the fake answers JSON
    status: 'active',
    cleanupRule: 'ttl',
    expiresAt: null,
    deletedAt: null,
    createdAt: '2026-01-01T00:00:00.000Z',
  };
  const routes: Parameters<typeof fakeCoordinator>[0] = {
    [`GET /v1/storage/files/${FILE_ID}`]: [200, stored],
    [`GET /v1/storage/files/${FILE_ID}/download-url`]: () => [
      200,
      { downloadUrl: `${api!.url}/blob`, expiresInSeconds: 60 },
    ],
    'GET /blob': [200, 'payload'],
  };

  it('refuses to replace it unless --force, before any transfer; -o replaces what it names', async () => {
    const first = await cli(['files', 'download', FILE_ID], routes);
    const npmrc = path.join(dir!, '.npmrc');
    expect(first).toMatchObject({ code: 0, stdout: `${npmrc}\n` });
    expect(fs.readFileSync(npmrc, 'utf8')).toBe('"payload"');

    fs.writeFileSync(npmrc, 'registry=mine\n');
    api!.calls.length = 0;
    expect(await cli(['files', 'download', FILE_ID])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: .npmrc exists here; pass -o <path> or --force to replace it\n',
    });
    expect(fs.readFileSync(npmrc, 'utf8')).toBe('registry=mine\n');
    expect(api!.calls).toEqual([`GET /v1/storage/files/${FILE_ID}`]);

    expect(await cli(['files', 'download', FILE_ID, '--force'])).toMatchObject({ code: 0, stdout: `${npmrc}\n` });
    expect(fs.readFileSync(npmrc, 'utf8')).toBe('"payload"');

    fs.writeFileSync(npmrc, 'registry=mine\n');
    expect(await cli(['files', 'download', FILE_ID, '-o', '.npmrc'])).toMatchObject({ code: 0, stdout: `${npmrc}\n` });
    expect(fs.readFileSync(npmrc, 'utf8')).toBe('"payload"');
  });

  it('never replaces what is no regular file (a FIFO, a device: -o /dev/null as root)', async () => {
    await cli(['--version'], routes);
    // A FIFO stands for /dev/null here: a rename over it would put a file in its place.
    const fifo = path.join(dir!, 'sink');
    execFileSync('mkfifo', [fifo]);
    api!.calls.length = 0;
    expect(await cli(['files', 'download', FILE_ID, '-o', 'sink'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: cannot write to sink: it is a FIFO, not a regular file, and the download would replace it with one; pass -o a file or a directory\n',
    });
    expect(api!.calls).toEqual([]);

    // In a directory -o names, and here without -o (even with --force): the stored file's name.
    fs.mkdirSync(path.join(dir!, 'dl'));
    execFileSync('mkfifo', [path.join(dir!, 'dl', '.npmrc')]);
    fs.rmSync(path.join(dir!, '.npmrc'), { force: true });
    execFileSync('mkfifo', [path.join(dir!, '.npmrc')]);
    const inDir = await cli(['files', 'download', FILE_ID, '-o', 'dl']);
    expect(inDir).toMatchObject({ code: 2, stdout: '' });
    expect(inDir.stderr).toContain(`cannot write to ${path.join(dir!, 'dl', '.npmrc')}: it is a FIFO`);
    const here = await cli(['files', 'download', FILE_ID, '--force']);
    expect(here).toMatchObject({ code: 2, stdout: '' });
    expect(here.stderr).toContain('cannot write to .npmrc: it is a FIFO');
    expect(api!.calls.filter((call) => call.endsWith('/download-url'))).toEqual([]);
    for (const file of [fifo, path.join(dir!, 'dl', '.npmrc'), path.join(dir!, '.npmrc')]) {
      expect(fs.lstatSync(file).isFIFO()).toBe(true);
    }
    expect(fs.readdirSync(dir!).filter((name) => name.endsWith('.part'))).toEqual([]);
  });
});
