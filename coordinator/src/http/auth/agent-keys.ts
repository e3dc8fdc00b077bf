import type { KeyObject } from 'node:crypto';
import { publicKeyFromBase64 } from '@drover/shared';

/** At most this many keys are remembered; past it the memo starts over. */
const MAX_KEYS = 50_000;

/**
 * Agents' public keys as node:crypto KeyObjects, memoized by their base64 text. Importing a key
 * (`createPublicKey`) costs more than verifying a signature with it, and every signed request
 * needs one. The mapping from key text to key object never changes, so the memo is exact and
 * holds nothing that two coordinators could disagree on: a revoked agent is refused by its
 * status, which is read from the database on every request.
 */
const keys = new Map<string, KeyObject | null>();

export function agentPublicKey(base64: string): KeyObject | null {
  let key = keys.get(base64);
  if (key === undefined) {
    // The key was checked (canonical point, not small-order) when the agent enrolled.
    key = publicKeyFromBase64(base64, { validatePoint: false });
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(base64, key);
  }
  return key;
}
