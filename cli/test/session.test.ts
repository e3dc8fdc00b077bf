import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promptSecret } from '../src/session/prompt.js';
import { deleteSession, readSession, writeSession } from '../src/session/store.js';
import { configDir } from '../src/settings.js';
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
