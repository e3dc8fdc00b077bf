import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  publicKeyFromBase64,
  signManifest,
  type ManifestPayload,
} from '@drover/shared';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { checkManifestEntry } from '../../src/deploy/manifest-check.js';
import { readAgentStatus } from '../../src/status/agent-status.js';
import { formatAgentStatus } from '../../src/status/format-status.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-deploy-state-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const APP = '3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b';

describe('deploy/state.json', () => {
  it('keeps what was installed and the last manifest time across restarts, in a private file', () => {
    const store = DeployStateStore.open(dir);
    expect(store.get(APP)).toMatchObject({ current: null, lastIssuedAt: null });
    store.update(APP, { current: { releaseId: 'r1', version: '1.0', sequence: 3 }, lastIssuedAt: 1_760_000_000 });
    const file = path.join(dir, 'deploy', 'state.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const again = DeployStateStore.open(dir);
    expect(again.get(APP)).toMatchObject({
      current: { releaseId: 'r1', version: '1.0', sequence: 3 },
      lastIssuedAt: 1_760_000_000,
    });
    expect(again.applicationIds()).toEqual([APP]);
  });

  it('sets a damaged file aside and starts without history, saying so', () => {
    fs.mkdirSync(path.join(dir, 'deploy'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'deploy', 'state.json'), '{"version":1,"apps":{"x":{"current":{"version":3}}}}');
    const damaged: string[] = [];
    const store = DeployStateStore.open(dir, (_file, reason) => damaged.push(reason));
    expect(store.get('x').current).toBeNull();
    expect(damaged).toEqual([
      'the installed release of application x is damaged (renamed state.json.damaged; starting without deployment history)',
    ]);
    expect(fs.existsSync(path.join(dir, 'deploy', 'state.json.damaged'))).toBe(true);
  });
});

describe('a manifest entry', () => {
  const keys = generateEd25519KeyPair();
  const pinned = publicKeyFromBase64(keys.publicKey)!;
  const sign = (payload: ManifestPayload) => signManifest(payload, privateKeyFromBase64(keys.privateKey));
  const payload: ManifestPayload = {
    application_id: APP,
    slug: 'kiosk',
    channel: 'stable',
    update_workflow: 'update',
    current: { release_id: null, version: '0.9', sequence: 1 },
    desired: {
      release_id: '8d1f0e2a-3b4c-4d5e-8f60-718293a4b5c6',
      version: '1.0 — ünïcode',
      sequence: 2,
      channel: 'stable',
      workflow_name: 'update',
      checksum_sha256: 'ab'.repeat(32),
      size: 10,
      download_url: 'http://127.0.0.1/blob?x=1&y=2',
      download_expires_in: 900,
    },
    min_version: '',
    min_sequence: 0,
    forced: false,
    issued_at: 1_760_000_100,
    nonce: 'bm9uY2Utbm9uY2Utbm9uY2U',
  };
  const never = () => null;

  it('is trusted when signed by the pinned key, whatever the key order of its JSON', () => {
    const entry = sign(payload);
    const reordered = JSON.parse(JSON.stringify({ signature: entry.signature, payload: { ...entry.payload } }));
    reordered.payload = Object.fromEntries(Object.entries(reordered.payload).reverse());
    expect(checkManifestEntry(reordered, pinned, never)).toEqual({ ok: true, payload: reordered.payload });
  });

  it('is refused when any signed field changed, or when another key signed it', () => {
    const entry = sign(payload);
    const tampered = {
      ...entry,
      payload: { ...payload, desired: { ...payload.desired!, checksum_sha256: 'cd'.repeat(32) } },
    };
    expect(checkManifestEntry(tampered, pinned, never)).toMatchObject({
      ok: false,
      problem: 'bad_signature',
      applicationId: APP,
    });
    const other = signManifest(payload, privateKeyFromBase64(generateEd25519KeyPair().privateKey));
    expect(checkManifestEntry(other, pinned, never)).toMatchObject({ ok: false, problem: 'bad_signature' });
    for (const junk of [null, 'x', [], { payload }, { payload: 'x', signature: entry.signature }]) {
      expect(checkManifestEntry(junk, pinned, never)).toMatchObject({ ok: false, problem: 'bad_signature' });
    }
  });

  it('is refused when signed but not of the documented shape', () => {
    const bad = sign({ ...payload, desired: { ...payload.desired!, size: -1 } });
    expect(checkManifestEntry(bad, pinned, never)).toMatchObject({
      ok: false,
      problem: 'malformed',
      message: 'the signed manifest has a bad `desired`: `size` is not a byte count',
    });
  });

  it('is refused when issued before the last one accepted (replay); the same second is fine', () => {
    const entry = sign(payload);
    expect(checkManifestEntry(entry, pinned, () => payload.issued_at).ok).toBe(true);
    expect(checkManifestEntry(entry, pinned, () => payload.issued_at + 1)).toMatchObject({
      ok: false,
      problem: 'replayed',
      message:
        'the signed manifest was issued at 2025-10-09T08:55:00Z, before the last one accepted (2025-10-09T08:55:01Z): an old manifest replayed',
    });
  });
});

describe('deployments in `drover-agent status`', () => {
  it('shows per application what is installed, postponed or last failed, without touching the file', () => {
    expect(readAgentStatus(dir).deployments).toBeNull();
    const store = DeployStateStore.open(dir);
    store.update(APP, {
      current: { releaseId: 'r1', version: '1.0', sequence: 3 },
      postponed: { releaseId: 'r2', version: '1.1', sequence: 4 },
      lastFailure: { releaseId: 'r3', state: 'refused', error: 'checksum mismatch', at: '2026-11-22T06:00:00.000Z' },
    });
    const status = readAgentStatus(dir);
    expect(status.deployments).toEqual([expect.objectContaining({ applicationId: APP })]);
    const lines = formatAgentStatus({ ...status, enrollment: null }).join('\n');
    expect(lines).not.toContain('Deployments'); // not enrolled: only the enrollment hint
    const enrolled = formatAgentStatus({
      ...status,
      enrollment: { url: 'http://c', agentId: 'a', orgId: 'o', serverPublicKey: 'k', enrolledAt: 't' },
    }).join('\n');
    expect(enrolled).toContain(
      `${APP}: installed 1.0 (sequence 3); postponed 1.1 (local policy); last refused: release r3 at 2026-11-22T06:00:00.000Z: checksum mismatch`,
    );
  });

  it('reports a damaged state file and leaves it where it is', () => {
    const file = path.join(dir, 'deploy', 'state.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, 'not json');
    expect(readAgentStatus(dir).deployProblem).toMatch(/state\.json is damaged: not valid JSON/);
    expect(fs.readFileSync(file, 'utf8')).toBe('not json');
  });
});
