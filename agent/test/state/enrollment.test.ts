import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { generateEd25519KeyPair } from '@drover/shared';
import { AgentError } from '../../src/errors.js';
import {
  loadEnrollment,
  loadPrivateKey,
  saveEnrollment,
  savePrivateKey,
  tightenPrivateKeyMode,
} from '../../src/state/enrollment.js';
import { statePath } from '../../src/state/paths.js';

let stateDir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-key-'));
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

describe('the agent key', () => {
  it('is written 0600, and put back to 0600 when someone loosened it', () => {
    savePrivateKey(stateDir, generateEd25519KeyPair().privateKey);
    const file = statePath(stateDir, 'privateKey');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(tightenPrivateKeyMode(stateDir)).toBeNull();
    fs.chmodSync(file, 0o644);
    expect(tightenPrivateKeyMode(stateDir)).toBe(0o644);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(loadPrivateKey(stateDir).asymmetricKeyType).toBe('ed25519');
  });

  // The chmod fails as it does on a device: a key root copied in (EPERM, as the service's user), a
  // file system remounted read-only after an error (EROFS). It used to escape as an unexpected
  // error with its stack, the agent refusing to start without a word a technician could act on.
  const chmodFails = (code: string) =>
    vi.spyOn(fs, 'chmodSync').mockImplementation(() => {
      throw Object.assign(new Error(`${code}: chmod`), { code });
    });

  it('that cannot be made private again stops the agent with what to run, and is left as it is', () => {
    savePrivateKey(stateDir, generateEd25519KeyPair().privateKey);
    const file = statePath(stateDir, 'privateKey');
    fs.chmodSync(file, 0o644);
    const refusal = (code: string) => {
      const spy = chmodFails(code);
      try {
        tightenPrivateKeyMode(stateDir);
      } catch (error) {
        return error as AgentError;
      } finally {
        spy.mockRestore();
      }
      throw new Error('not refused');
    };
    const readOnly = refusal('EROFS');
    expect(readOnly).toBeInstanceOf(AgentError);
    expect(readOnly.code).toBe('bad_state');
    expect(readOnly.message).toBe(
      `The agent key ${file} is readable by other users (mode 644) and cannot be made private: ` +
        `the file system is read-only (EROFS); run \`chmod 600 ${file}\` once it can be changed`,
    );
    expect(refusal('EPERM').message).toMatch(/cannot be made private: permission denied \(EPERM\); run `chmod 600 /);
    expect(fs.statSync(file).mode & 0o777).toBe(0o644);
  });

  it.runIf(process.getuid?.() === 0)(
    "of another user's, which this user may not change, is given back with the command that does",
    () => {
      savePrivateKey(stateDir, generateEd25519KeyPair().privateKey);
      const file = statePath(stateDir, 'privateKey');
      fs.chmodSync(file, 0o644);
      fs.chownSync(file, 65534, 65534); // as root copied a backup in; the agent runs as another user
      const spy = chmodFails('EPERM');
      try {
        expect(() => tightenPrivateKeyMode(stateDir)).toThrow(
          new RegExp(
            `cannot be made private: it belongs to (nobody|uid 65534), and this runs as root; ` +
              `give it back: \`sudo chown root: ${file} && sudo chmod 600 ${file}\`$`,
          ),
        );
      } finally {
        spy.mockRestore();
      }
    },
  );
});

describe('agent.json', () => {
  const enrollment = {
    url: 'https://drover.example.com',
    agentId: '01a2339f-c01f-7f82-8d81-a11a1426fb59',
    orgId: '80f20be5-7e7c-4022-9000-1c99846586fe',
    serverPublicKey: Buffer.alloc(32, 7).toString('base64'),
    enrolledAt: '2026-12-01T22:00:37.241Z',
  };
  const withUrl = (url: string) =>
    fs.writeFileSync(statePath(stateDir, 'enrollment'), JSON.stringify({ ...enrollment, url }));

  // Its url is what an operator edits when the coordinator moves (docs/operations.md). With a
  // trailing slash the agent sent `PUT //v1/agent/workflows`, answered 404, while its stream connected.
  it('takes an edited url as enroll does: a trailing slash and /v1 are the same origin', () => {
    saveEnrollment(stateDir, enrollment);
    expect(loadEnrollment(stateDir)).toEqual(enrollment);
    for (const url of [
      'https://drover.example.com/',
      'https://drover.example.com/v1',
      'https://drover.example.com/v1/',
    ]) {
      withUrl(url);
      expect(loadEnrollment(stateDir)?.url).toBe('https://drover.example.com');
    }
  });

  it('says what is wrong with a field of agent.json: missing or not text, or the file not an object', () => {
    const file = statePath(stateDir, 'enrollment');
    const write = (value: unknown) => fs.writeFileSync(file, JSON.stringify(value));
    const damaged = (problem: string) => `${file} is damaged (${problem}); enroll again with --force`;
    write({ ...enrollment, agentId: 5 });
    // It read `agentId` is missing, for a field standing there.
    expect(() => loadEnrollment(stateDir)).toThrow(damaged('`agentId` is not text (a number)'));
    write([enrollment]);
    expect(() => loadEnrollment(stateDir)).toThrow(damaged('not an object'));
    const { url: _url, ...withoutUrl } = enrollment;
    write(withoutUrl);
    expect(() => loadEnrollment(stateDir)).toThrow(damaged('`url` is missing'));
  });

  it('refuses a url that is no coordinator URL, saying which file and field', () => {
    withUrl('https://drover.example.com/api');
    const file = statePath(stateDir, 'enrollment');
    expect(() => loadEnrollment(stateDir)).toThrow(
      `${file}: \`url\` is not a coordinator URL: The coordinator URL must be the server root or its /v1 base URL, got the path \`/api\``,
    );
  });
});
