import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { publicKeyFromBase64, verifyBytes } from '@drover/shared';
import { SERVER_KEY_FILE, loadOrCreateServerKey } from '../../../src/domain/secrets/server-key.js';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'drover-key-'));

describe('server key', () => {
  it('is created once with mode 0600 and reused after', () => {
    const dir = tempDir();
    const first = loadOrCreateServerKey(dir);
    expect(fs.statSync(path.join(dir, SERVER_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(loadOrCreateServerKey(dir).publicKey).toBe(first.publicKey);
  });

  it('signs messages that verify with its public key', () => {
    const key = loadOrCreateServerKey(tempDir());
    const message = Buffer.from('manifest');
    const publicKey = publicKeyFromBase64(key.publicKey)!;
    expect(verifyBytes(publicKey, message, key.sign(message))).toBe(true);
    expect(verifyBytes(publicKey, Buffer.from('other'), key.sign(message))).toBe(false);
  });

  it('refuses to start on a corrupt key file instead of replacing it', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, SERVER_KEY_FILE), 'garbage\n', { mode: 0o600 });
    expect(() => loadOrCreateServerKey(dir)).toThrow(/corrupt/);
    expect(fs.readFileSync(path.join(dir, SERVER_KEY_FILE), 'utf8')).toBe('garbage\n');
  });

  it('tightens a key file readable by others to 0600', () => {
    const dir = tempDir();
    loadOrCreateServerKey(dir);
    fs.chmodSync(path.join(dir, SERVER_KEY_FILE), 0o644);
    loadOrCreateServerKey(dir);
    expect(fs.statSync(path.join(dir, SERVER_KEY_FILE)).mode & 0o777).toBe(0o600);
  });
});
