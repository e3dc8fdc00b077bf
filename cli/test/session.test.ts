import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetPlainHttpWarning } from '../src/http/plain-http.js';
import { runCli } from '../src/program.js';
import { promptSecret } from '../src/session/prompt.js';
import { deleteSession, readSession, writeSession } from '../src/session/store.js';
import { configDir } from '../src/settings.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-session-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const session = {
  url: 'https://drover.example.com',
  token: 'eyJ.x.y',
  expiresAt: '2030-01-01T00:00:00.000Z',
  email: 'ops@example.com',
  userId: '3f0c1d52-0000-4000-8000-000000000000',
};

describe('the session file', () => {
  it('is in $XDG_CONFIG_HOME/drover, else ~/.config/drover (a relative XDG_CONFIG_HOME is ignored)', () => {
    expect(configDir({ env: { XDG_CONFIG_HOME: '/cfg' }, homedir: '/home/ops' })).toBe('/cfg/drover');
    expect(configDir({ env: {}, homedir: '/home/ops' })).toBe('/home/ops/.config/drover');
    expect(configDir({ env: { XDG_CONFIG_HOME: 'cfg' }, homedir: '/home/ops' })).toBe('/home/ops/.config/drover');
  });

  it('is written 0600 in a 0700 directory, read back, and deleted', () => {
    const dir = path.join(root, 'drover');
    const file = writeSession(dir, session);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(readSession(dir)).toEqual(session);
    expect(deleteSession(dir)).toBe(true);
    expect(readSession(dir)).toBeNull();
    expect(deleteSession(dir)).toBe(false);
  });

  it('that is not a session says how to mend it', () => {
    fs.writeFileSync(path.join(root, 'session.json'), '{"url": 1}');
    expect(() => readSession(root)).toThrow(
      /session\.json is not a drover session; run `drover logout` and sign in again/,
    );
  });
});

describe('an API token after drover login', () => {
  let api: FakeCoordinator | undefined;
  afterEach(() => api?.close());

  const token = {
    name: 'ci',
    scopes: [],
    rateLimit: { perMinute: null, perHour: null, perDay: null },
    expiresAt: null,
  };

  it("goes to the session's coordinator when neither --url nor DROVER_URL names one, without the session", async () => {
    api = await fakeCoordinator({ 'GET /v1/token': [200, token] });
    // Expired: only its URL is used, never its credential.
    writeSession(path.join(root, 'drover'), { ...session, url: api.url, expiresAt: '2020-01-01T00:00:00.000Z' });
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: root, DROVER_TOKEN: 'drv_ci' } });
    expect(await runCli(['token'], rt)).toBe(0);
    expect(rt.stderr()).toBe('');
    expect(rt.stdout()).toMatch(/^Name: +ci\n/);
    expect(api.calls).toEqual(['GET /v1/token']);
    expect(api.headers[0]!.authorization).toBe('Bearer drv_ci');
    expect(api.headers[0]!.cookie).toBeUndefined();
  });

  it('goes where --url or DROVER_URL says over the session, and without either or a session names what is missing', async () => {
    api = await fakeCoordinator({ 'GET /v1/token': [200, token] });
    writeSession(path.join(root, 'drover'), { ...session, url: 'http://127.0.0.1:1' });
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: root, DROVER_TOKEN: 'drv_ci', DROVER_URL: api.url } });
    expect(await runCli(['token'], rt)).toBe(0);
    expect(api.calls).toEqual(['GET /v1/token']);

    const none = testRuntime({ env: { XDG_CONFIG_HOME: path.join(root, 'none'), DROVER_TOKEN: 'drv_ci' } });
    expect(await runCli(['token'], none)).toBe(2);
    expect(none.stderr()).toBe('drover: no coordinator URL: pass --url or set DROVER_URL\n');
  });
});

describe('the password prompt', () => {
  it('reads a line without echo, Backspace removing a character', async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => stdin });
    const rt = testRuntime({ stdin });
    const answer = promptSecret(rt, 'Password: ', 'set DROVER_PASSWORD');
    stdin.write('hunter3\u007f2\r');
    expect(await answer).toBe('hunter2');
    expect(rt.stderr()).toBe('Password: \n');
  });

  it('without a terminal says what to use instead', async () => {
    await expect(promptSecret(testRuntime(), 'Password: ', 'set DROVER_PASSWORD')).rejects.toThrow(
      'no terminal to ask the password on: set DROVER_PASSWORD',
    );
  });
});

describe('drover logout', () => {
  let api: FakeCoordinator | undefined;
  afterEach(() => api?.close());

  /** A session for a coordinator that is gone: a port nothing listens on any more. */
  async function unreachableSession() {
    const gone = await fakeCoordinator({});
    await gone.close();
    writeSession(path.join(root, 'drover'), { ...session, url: gone.url });
    return gone.url;
  }

  it('keeps the session file and exits 2 when the coordinator cannot be reached', async () => {
    const url = await unreachableSession();
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout'], rt)).toBe(2);
    expect(rt.stdout()).toBe('');
    expect(rt.stderr()).toBe(
      `drover: could not end the session on ${url} (cannot reach the coordinator at ${url}: ECONNREFUSED); ` +
        'the session file is kept: retry `drover logout`, or pass --force to delete it here anyway ' +
        '(the session stays valid on the coordinator until it expires, 2030-01-01T00:00:00.000Z)\n',
    );
    expect(readSession(path.join(root, 'drover'))).toEqual({ ...session, url });

    // An expired session has nothing left to end: its file goes.
    writeSession(path.join(root, 'drover'), { ...session, url, expiresAt: '2020-01-01T00:00:00.000Z' });
    expect(await runCli(['logout'], testRuntime({ env: { XDG_CONFIG_HOME: root } }))).toBe(0);
    expect(readSession(path.join(root, 'drover'))).toBeNull();
  });

  it('with --force deletes the file anyway, saying the session may still be valid', async () => {
    const url = await unreachableSession();
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout', '--force'], rt)).toBe(0);
    expect(rt.stdout()).toBe('Deleted the session file\n');
    expect(rt.stderr()).toBe(
      `drover: could not end the session on ${url} (cannot reach the coordinator at ${url}: ECONNREFUSED); ` +
        'deleting the file here anyway: the session may still be valid on the coordinator until it expires ' +
        '(2030-01-01T00:00:00.000Z)\n',
    );
    expect(readSession(path.join(root, 'drover'))).toBeNull();

    await unreachableSession();
    const everywhere = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout', '--everywhere'], everywhere)).toBe(2);
    expect(readSession(path.join(root, 'drover'))).not.toBeNull();
    const forcedEverywhere = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout', '--everywhere', '--force'], forcedEverywhere)).toBe(0);
    expect(forcedEverywhere.stderr()).toMatch(/deleting the file here anyway: the session may still be valid/);
    expect(readSession(path.join(root, 'drover'))).toBeNull();
  });

  it('warns, as every session command does, that the session goes unencrypted to another machine', async () => {
    // 0.0.0.0 is no loopback address to the warning, and a connection to it reaches this machine's
    // closed port at once (no name to resolve): the warning comes before the call, which fails.
    const closed = new URL(await unreachableSession());
    const remote = `http://0.0.0.0:${closed.port}`;
    for (const args of [['logout'], ['logout', '--everywhere']]) {
      resetPlainHttpWarning();
      writeSession(path.join(root, 'drover'), { ...session, url: remote });
      const rt = testRuntime({ env: { XDG_CONFIG_HOME: root } });
      expect(await runCli(args, rt)).toBe(2);
      expect(rt.stderr().split('\n')[0]).toBe(
        `drover: warning: ${remote} is plain HTTP: the session crosses the network unencrypted; ` +
          'use https:// if the coordinator offers it',
      );
    }
    // Not to this machine.
    resetPlainHttpWarning();
    const url = await unreachableSession();
    const local = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout'], local)).toBe(2);
    expect(local.stderr()).toMatch(new RegExp(`^drover: could not end the session on ${url} `));
  });

  it('keeps the file when the coordinator fails, deletes it when the session had already ended (401)', async () => {
    api = await fakeCoordinator({ 'POST /v1/auth/logout': [503, { statusCode: 503, message: 'Draining' }] });
    writeSession(path.join(root, 'drover'), { ...session, url: api.url });
    const rt = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout'], rt)).toBe(2);
    expect(rt.stderr()).toMatch(/^drover: could not end the session on .* \(Draining\); the session file is kept/);
    expect(readSession(path.join(root, 'drover'))).not.toBeNull();
    await api.close();

    api = await fakeCoordinator({ 'POST /v1/auth/logout': [401, { statusCode: 401, message: 'Session expired' }] });
    writeSession(path.join(root, 'drover'), { ...session, url: api.url });
    const again = testRuntime({ env: { XDG_CONFIG_HOME: root } });
    expect(await runCli(['logout'], again)).toBe(0);
    expect(again.stdout()).toBe(`Signed out of ${api.url}\n`);
    expect(readSession(path.join(root, 'drover'))).toBeNull();
  });
});
