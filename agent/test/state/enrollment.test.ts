import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateEd25519KeyPair } from '@drover/shared';
import { loadPrivateKey, savePrivateKey, tightenPrivateKeyMode } from '../../src/state/enrollment.js';
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
});
