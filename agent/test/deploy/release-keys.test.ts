import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  signRelease,
  signRotation,
  sortedKeys,
  type ManifestPayload,
} from '@drover/shared';
import { DeployStateStore, type PinnedReleaseKeys } from '../../src/deploy/deploy-state.js';
import { checkReleaseKeys } from '../../src/deploy/release-keys-check.js';
import { startBlobServer, type BlobServer } from '../files/blob-server.js';
import { captureLogger } from '../log-capture.js';
import { FakeDeployCoordinator } from './fake-deploy.js';

/** Release keys on the device (docs/ota.md, "Release keys"): pinned on first sight, changed only by signed rotations. */

const k1 = generateEd25519KeyPair();
const k2 = generateEd25519KeyPair();
const k3 = generateEd25519KeyPair();
const priv = (k: { privateKey: string }) => privateKeyFromBase64(k.privateKey);
const short = (k: { publicKey: string }) => `${k.publicKey.slice(0, 8)}…`;

const base: ManifestPayload = {
  agent_id: '7b3e9d21-4c5a-4f6b-8e7d-1a2b3c4d5e6f',
  application_id: '3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b',
  slug: 'kiosk',
  channel: 'stable',
  update_workflow: 'update',
  current: null,
  desired: {
    release_id: '8d1f0e2a-3b4c-4d5e-8f60-718293a4b5c6',
    version: '1.4.0',
    sequence: 7,
    channel: 'stable',
    workflow_name: 'update',
    checksum_sha256: 'ab'.repeat(32),
    size: 1000,
    download_url: 'http://127.0.0.1/blob',
    download_expires_in: 900,
  },
  min_version: '',
  min_sequence: 0,
  forced: false,
  issued_at: 1_760_000_100,
  expires_at: 1_760_003_700,
  nonce: 'bm9uY2U',
};

/** The payload with keys, its desired release signed by `signer`. */
function withKeys(keys: string[], signer: { privateKey: string } | null, extra: Partial<ManifestPayload> = {}) {
  const d = base.desired!;
  const signature = signer
    ? signRelease(
        { app: 'kiosk', version: d.version, sequence: d.sequence, sha256: d.checksum_sha256, size: d.size },
        priv(signer),
      )
    : null;
  return {
    ...base,
    desired: { ...d, signature },
    release_keys: sortedKeys(keys),
    release_key_generation: 0,
    ...extra,
  } satisfies ManifestPayload;
}
const pinnedK1: PinnedReleaseKeys = { keys: [k1.publicKey], generation: 0, slug: 'kiosk', workflows: ['update'] };

describe('release keys on the device', () => {
  it('are pinned on first sight, and a release signed by a pinned key passes', () => {
    expect(checkReleaseKeys(withKeys([k1.publicKey], k1), null, null)).toEqual({
      ok: true,
      pin: {
        keys: pinnedK1,
        note: `pinned the release keys of kiosk on first sight: 1 key (${short(k1)}) (generation 0)`,
      },
    });
    expect(checkReleaseKeys(withKeys([k1.publicKey], k1), pinnedK1, null)).toEqual({ ok: true });
  });

  it('refuse a release signed by another key, or unsigned; the installed one is kept, never installed again', () => {
    expect(checkReleaseKeys(withKeys([k1.publicKey], k2), pinnedK1, null)).toEqual({
      ok: false,
      problem: 'unsigned_release',
      message: `release 1.4.0 (sequence 7) of kiosk is not signed by one of the release keys this device pinned (1 key (${short(k1)}))`,
    });
    expect(checkReleaseKeys(withKeys([k1.publicKey], null), pinnedK1, null)).toMatchObject({
      ok: false,
      message: `release 1.4.0 (sequence 7) of kiosk is unsigned, but needs a signature by one of the release keys this device pinned (1 key (${short(k1)}))`,
    });
    const installed = { releaseId: base.desired!.release_id, version: '1.4.0', sequence: 7 };
    expect(checkReleaseKeys(withKeys([k1.publicKey], null), pinnedK1, installed)).toEqual({
      ok: true,
      installedUnsigned: `release 1.4.0 (sequence 7) of kiosk is unsigned, but needs a signature by one of the release keys this device pinned (1 key (${short(k1)})): the installed release is kept, not installed again`,
    });
    expect(checkReleaseKeys(withKeys([k1.publicKey], k1), pinnedK1, installed)).toEqual({ ok: true });
  });

  it('refuse an entry under another slug than the one pinned with the keys: a release signed for another application', () => {
    // Two applications share a key; the coordinator names this application's entry with the other's slug.
    const d = base.desired!;
    const signature = signRelease(
      { app: 'debug-tools', version: d.version, sequence: d.sequence, sha256: d.checksum_sha256, size: d.size },
      priv(k1),
    );
    const other = { ...withKeys([k1.publicKey], k1), slug: 'debug-tools', desired: { ...d, signature } };
    expect(checkReleaseKeys(other, pinnedK1, null)).toEqual({
      ok: false,
      problem: 'other_application',
      message: `the signed manifest names application ${base.application_id} debug-tools, but this device pinned its release keys as those of kiosk (a slug cannot change): a release signed for another application refused`,
    });
    // A pin of an older agent has no slug: the entry's is recorded with it, and holds from then on.
    const { slug: _slug, ...older } = pinnedK1;
    expect(checkReleaseKeys(withKeys([k1.publicKey], k1), older, null)).toEqual({
      ok: true,
      pin: { keys: pinnedK1, note: 'recorded the slug kiosk with the release keys pinned for it' },
    });
  });

  it('refuse a changed key set without a rotation, or keys dropped, whatever the coordinator signed', () => {
    expect(checkReleaseKeys(withKeys([k2.publicKey], k2), pinnedK1, null)).toEqual({
      ok: false,
      problem: 'key_swap',
      message: `the release keys of kiosk changed to 1 key (${short(k2)}) without a rotation signed by a key this device pinned (1 key (${short(k1)}), generation 0): a key swap refused`,
    });
    const { release_keys: _k, release_key_generation: _g, ...noKeys } = withKeys([k1.publicKey], k1);
    expect(checkReleaseKeys(noKeys, pinnedK1, null)).toEqual({
      ok: false,
      problem: 'key_swap',
      message: `the signed manifest names no release keys for kiosk, but this device pinned 1 key (${short(k1)}): releases it cannot verify are refused`,
    });
    // A rotation signed by a key that is not pinned (the coordinator's own, say) does not count.
    const forged = signRotation({ app: 'kiosk', generation: 1, keys: [k2.publicKey] }, priv(k3));
    const offered = withKeys([k2.publicKey], k2, { release_key_generation: 1, release_key_rotations: [forged] });
    expect(checkReleaseKeys(offered, pinnedK1, null)).toMatchObject({ ok: false, problem: 'key_swap' });
  });

  it('follow a rotation with two keys during the change, then to the new key alone, also skipping a step', () => {
    const both = sortedKeys([k1.publicKey, k2.publicKey]);
    const r1 = signRotation({ app: 'kiosk', generation: 1, keys: both }, priv(k1));
    const r2 = signRotation({ app: 'kiosk', generation: 2, keys: [k2.publicKey] }, priv(k2));
    // During the change: releases signed by the old key still install.
    const during = withKeys(both, k1, { release_key_generation: 1, release_key_rotations: [r1] });
    expect(checkReleaseKeys(during, pinnedK1, null)).toEqual({
      ok: true,
      pin: {
        keys: { keys: both, generation: 1, slug: 'kiosk', workflows: ['update'] },
        note: `the release keys of kiosk rotated to 2 keys (${both.map((k) => `${k.slice(0, 8)}…`).join(', ')}) (generation 1), signed by a key this device had pinned`,
      },
    });
    // A device offline during the change follows both rotations at once.
    const after = withKeys([k2.publicKey], k2, { release_key_generation: 2, release_key_rotations: [r1, r2] });
    expect(checkReleaseKeys(after, pinnedK1, null)).toMatchObject({
      ok: true,
      pin: { keys: { keys: [k2.publicKey], generation: 2, slug: 'kiosk', workflows: ['update'] } },
    });
    // An old rotation cannot bring the old set back: its generation is not above the pinned one.
    const back = withKeys(both, k1, { release_key_generation: 1, release_key_rotations: [r1] });
    expect(checkReleaseKeys(back, { keys: [k2.publicKey], generation: 2 }, null)).toMatchObject({
      ok: false,
      problem: 'key_swap',
    });
  });
});

describe('pinned release keys', () => {
  let blobs: BlobServer;
  let stateDir: string;
  beforeEach(async () => {
    blobs = await startBlobServer();
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-release-keys-'));
  });
  afterEach(async () => {
    await blobs.close();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('survive a restart of the agent: a swapped set is refused by the next run', async () => {
    const fake = new FakeDeployCoordinator(blobs);
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.0.0');
    fake.releaseKeys = { keys: [k1.publicKey], signer: k1 };
    const { logger, records } = captureLogger();
    const [first] = await fake.manifests(DeployStateStore.open(stateDir), logger).fetch();
    expect(first).toMatchObject({ ok: true });
    expect(records.at(-1)?.msg).toBe(
      `pinned the release keys of kiosk on first sight: 1 key (${short(k1)}) (generation 0)`,
    );
    expect(DeployStateStore.open(stateDir).get(app.applicationId).releaseKeys).toEqual(pinnedK1);

    fake.releaseKeys = { keys: [k2.publicKey], signer: k2 };
    const [second] = await fake.manifests(DeployStateStore.open(stateDir), logger).fetch();
    expect(second).toMatchObject({ ok: false, problem: 'key_swap' });
    expect(DeployStateStore.open(stateDir).get(app.applicationId).releaseKeys).toEqual(pinnedK1);
  });
});
