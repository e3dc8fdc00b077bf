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
import { checkManifestEntry, type ManifestCheckContext } from '../../src/deploy/manifest-check.js';
import { readAgentStatus } from '../../src/status/agent-status.js';
import { formatAgentStatus } from '../../src/status/format-status.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-deploy-state-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const APP = '3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b';
const AGENT = '7b3e9d21-4c5a-4f6b-8e7d-1a2b3c4d5e6f';

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

  it('makes deploy/ again when it was removed while the agent runs, rather than failing every write until a restart', () => {
    const store = DeployStateStore.open(dir);
    fs.rmSync(path.join(dir, 'deploy'), { recursive: true });
    store.update(APP, { current: { releaseId: 'r2', version: '2.0', sequence: 4 } });
    expect(fs.statSync(path.join(dir, 'deploy')).mode & 0o777).toBe(0o700);
    expect(DeployStateStore.open(dir).get(APP).current).toMatchObject({ releaseId: 'r2', version: '2.0' });
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

  it('starts without history from a damaged file it cannot set aside, saying so', () => {
    // Tests run as root, which writes in a read-only directory: a directory in the way of the rename fails it.
    fs.mkdirSync(path.join(dir, 'deploy', 'state.json.damaged', 'x'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'deploy', 'state.json'), 'not json');
    const damaged: string[] = [];
    const store = DeployStateStore.open(dir, (_file, reason) => damaged.push(reason));
    expect(store.applicationIds()).toEqual([]);
    expect(damaged).toEqual([
      'not valid JSON (it cannot be renamed state.json.damaged (EISDIR), so it stays until the next update replaces it; ' +
        'starting without deployment history)',
    ]);
  });

  it('calls pinned release keys that do not read damage, not a state without keys', () => {
    fs.mkdirSync(path.join(dir, 'deploy'), { recursive: true });
    const app = { current: null, lastIssuedAt: null, releaseKeys: { keys: 'AAAA', generation: 1 } };
    fs.writeFileSync(path.join(dir, 'deploy', 'state.json'), JSON.stringify({ version: 1, apps: { x: app } }));
    const damaged: string[] = [];
    DeployStateStore.open(dir, (_file, reason) => damaged.push(reason));
    expect(damaged).toEqual([
      'the pinned release keys of application x are damaged (renamed state.json.damaged; starting without deployment history)',
    ]);
  });
});

describe('a manifest entry', () => {
  const keys = generateEd25519KeyPair();
  const pinned = publicKeyFromBase64(keys.publicKey)!;
  const sign = (payload: ManifestPayload) => signManifest(payload, privateKeyFromBase64(keys.privateKey));
  const payload: ManifestPayload = {
    agent_id: AGENT,
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
    expires_at: 1_760_003_700,
    nonce: 'bm9uY2Utbm9uY2Utbm9uY2U',
  };
  /** This agent, at the coordinator's time of issue, with nothing accepted or installed before. */
  const never: ManifestCheckContext = {
    agentId: AGENT,
    nowSeconds: payload.issued_at,
    lastIssuedAt: () => null,
    installed: () => null,
    pinnedKeys: () => null,
  };
  const withContext = (fields: Partial<ManifestCheckContext>): ManifestCheckContext => ({ ...never, ...fields });

  it('is trusted when signed by the pinned key, whatever the key order of its JSON', () => {
    const entry = sign(payload);
    const reordered = JSON.parse(JSON.stringify({ signature: entry.signature, payload: { ...entry.payload } }));
    reordered.payload = Object.fromEntries(Object.entries(reordered.payload).reverse());
    expect(checkManifestEntry(reordered, pinned, never)).toEqual({ ok: true, payload: reordered.payload });
  });

  it('is trusted with signed fields it does not know (a newer coordinator): they are verified, not required', () => {
    const newer = {
      ...payload,
      rollout_wave: 2,
      desired: { ...payload.desired!, delta_from: 'r1' },
    } as ManifestPayload;
    expect(checkManifestEntry(sign(newer), pinned, never)).toEqual({ ok: true, payload: newer });
    const tampered = { ...sign(newer), payload: { ...newer, rollout_wave: 3 } };
    expect(checkManifestEntry(tampered, pinned, never)).toMatchObject({ ok: false, problem: 'bad_signature' });
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
    expect(checkManifestEntry(entry, pinned, withContext({ lastIssuedAt: () => payload.issued_at })).ok).toBe(true);
    expect(checkManifestEntry(entry, pinned, withContext({ lastIssuedAt: () => payload.issued_at + 1 }))).toMatchObject(
      {
        ok: false,
        problem: 'replayed',
        message:
          'the signed manifest was issued at 2025-10-09T08:55:00Z, before the last one accepted (2025-10-09T08:55:01Z): an old manifest replayed',
      },
    );
  });

  it('is refused when issued to another agent (a manifest of another device), whatever the case of the id', () => {
    const other = '9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a';
    expect(checkManifestEntry(sign({ ...payload, agent_id: other }), pinned, never)).toEqual({
      ok: false,
      problem: 'other_agent',
      applicationId: APP,
      message: `the signed manifest was issued to agent ${other}, not to this agent (${AGENT}): a manifest of another device`,
    });
    expect(checkManifestEntry(sign({ ...payload, agent_id: AGENT.toUpperCase() }), pinned, never).ok).toBe(true);
  });

  it('is refused from its expiry on, by the coordinator-corrected clock it is given', () => {
    const entry = sign(payload);
    expect(checkManifestEntry(entry, pinned, withContext({ nowSeconds: payload.expires_at - 1 })).ok).toBe(true);
    expect(checkManifestEntry(entry, pinned, withContext({ nowSeconds: payload.expires_at }))).toEqual({
      ok: false,
      problem: 'expired',
      applicationId: APP,
      message:
        'the signed manifest expired at 2025-10-09T09:55:00Z (coordinator time now 2025-10-09T09:55:00Z): a stale manifest held back or replayed',
    });
  });

  it('bound to the request it answers (request_nonce) is fresh: neither its expiry nor an older issued_at refuses it', () => {
    const entry = sign({ ...payload, request_nonce: 'sent-with-this-request' });
    const late = withContext({
      requestNonce: 'sent-with-this-request',
      nowSeconds: payload.expires_at + 7200, // the clock learned from a lying Date header, or skewed
      lastIssuedAt: () => payload.issued_at + 2, // another coordinator's clock, two seconds ahead
    });
    expect(checkManifestEntry(entry, pinned, late)).toEqual({ ok: true, payload: entry.payload, fresh: true });
  });

  it('bound to another request is refused as replayed, whatever its times say', () => {
    const entry = sign({ ...payload, request_nonce: 'sent-with-an-earlier-request' });
    const context = withContext({ requestNonce: 'sent-with-this-request', nowSeconds: payload.issued_at });
    expect(checkManifestEntry(entry, pinned, context)).toEqual({
      ok: false,
      problem: 'replayed',
      applicationId: APP,
      message:
        'the signed manifest answers another request than this one (its request nonce differs): a manifest held back or replayed',
    });
    expect(checkManifestEntry(sign({ ...payload, request_nonce: 7 } as never), pinned, never)).toMatchObject({
      ok: false,
      problem: 'malformed',
    });
  });

  it('without request_nonce is refused once the coordinator bound the earlier ones', () => {
    const entry = sign(payload);
    expect(checkManifestEntry(entry, pinned, withContext({ requestNonce: 'n', requestBound: () => false })).ok).toBe(
      true,
    );
    expect(checkManifestEntry(entry, pinned, withContext({ requestNonce: 'n', requestBound: () => true }))).toEqual({
      ok: false,
      problem: 'replayed',
      applicationId: APP,
      message:
        'the signed manifest is not bound to this request, though the coordinator bound the earlier ones: an old manifest replayed (or the coordinator downgraded)',
    });
  });

  describe('whose desired release has a lower sequence than the installed one', () => {
    const installed = { releaseId: 'r9', version: '1.4', sequence: 9, channel: 'stable' };
    const downgrade = sign(payload); // desired: sequence 2 on stable

    it('is refused on the same channel when the installed release was not yanked', () => {
      expect(checkManifestEntry(downgrade, pinned, withContext({ installed: () => installed }))).toEqual({
        ok: false,
        problem: 'downgrade',
        applicationId: APP,
        message:
          'the signed manifest asks for kiosk 1.0 — ünïcode (sequence 2), older than the installed 1.4 (sequence 9) on the same channel stable, and the installed release was not yanked: a downgrade refused',
      });
    });

    it('is accepted when forced (the installed release was yanked) or after a channel change', () => {
      const forced = sign({ ...payload, forced: true });
      expect(checkManifestEntry(forced, pinned, withContext({ installed: () => installed })).ok).toBe(true);
      const moved = withContext({ installed: () => ({ ...installed, channel: 'beta' }) });
      expect(checkManifestEntry(downgrade, pinned, moved).ok).toBe(true);
    });

    it('is accepted when the installed release was recorded without its channel (an older agent), or is older', () => {
      const { channel: _channel, ...legacy } = installed;
      expect(checkManifestEntry(downgrade, pinned, withContext({ installed: () => legacy })).ok).toBe(true);
      const older = withContext({ installed: () => ({ ...installed, sequence: 1 }) });
      expect(checkManifestEntry(downgrade, pinned, older).ok).toBe(true);
    });
  });

  it('without agent_id and expires_at (an older coordinator) is accepted with a warning, other checks still applied', () => {
    const { agent_id: _agent, expires_at: _expires, ...old } = payload;
    const entry = sign(old as ManifestPayload);
    expect(checkManifestEntry(entry, pinned, withContext({ nowSeconds: 2_000_000_000 }))).toEqual({
      ok: true,
      payload: old,
      unbound:
        'the signed manifest of kiosk names no agent or expiry (a coordinator older than this agent): accepted without the device-binding and expiry checks; upgrade the coordinator',
    });
    expect(checkManifestEntry(entry, pinned, withContext({ lastIssuedAt: () => payload.issued_at + 1 }))).toMatchObject(
      {
        ok: false,
        problem: 'replayed',
      },
    );
    expect(checkManifestEntry(sign({ ...payload, expires_at: 'soon' } as never), pinned, never)).toMatchObject({
      ok: false,
      problem: 'malformed',
      message: 'the signed manifest has an `expires_at` that is not an integer',
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
