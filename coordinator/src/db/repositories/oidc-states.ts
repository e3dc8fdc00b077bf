import type { OidcState, OidcStateRepository } from '../../domain/model/oidc-states.js';
import { command, one, query, run, type Database } from '../sql/index.js';

interface StateRow {
  browser_hash: string;
  nonce: string;
  code_verifier: string;
  next_path: string;
  created_at: string;
  expires_at: string;
}

const FORGET = command<[string]>('DELETE FROM oidc_states WHERE expires_at < ?');
// Counts no further than the cap: a full table answers as soon as it has seen that many.
const OPEN = query<{ n: number }, [number]>('SELECT count(*) AS n FROM (SELECT 1 FROM oidc_states LIMIT ?)');
const INSERT = command<OidcState>(
  `INSERT INTO oidc_states (state_hash, browser_hash, nonce, code_verifier, next_path, created_at, expires_at)
   VALUES (@stateHash, @browserHash, @nonce, @codeVerifier, @nextPath, @createdAt, @expiresAt)`,
);
const CONSUME = query<StateRow, { stateHash: string; now: string }>(
  `UPDATE oidc_states SET used_at = @now
   WHERE state_hash = @stateHash AND used_at IS NULL AND expires_at > @now
   RETURNING browser_hash, nonce, code_verifier, next_path, created_at, expires_at`,
);

/** Sign-ins in progress: added with the expired ones forgotten, consumed by one UPDATE (once, whichever coordinator). */
export function createOidcStateRepository(db: Database): OidcStateRepository {
  return {
    async add(state, maxOpen) {
      return db.transaction(function* () {
        yield* run(FORGET, [state.createdAt]);
        const open = (yield* one(OPEN, [maxOpen]))?.n ?? 0;
        if (open >= maxOpen) return false;
        yield* run(INSERT, state);
        return true;
      });
    },
    async consume(stateHash, now) {
      const row = await db.one(CONSUME, { stateHash, now });
      if (!row) return null;
      return {
        stateHash,
        browserHash: row.browser_hash,
        nonce: row.nonce,
        codeVerifier: row.code_verifier,
        nextPath: row.next_path,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
      };
    },
  };
}
