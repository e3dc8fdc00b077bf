import type { SignedOutSessionRepository } from '../../domain/model/signed-out-sessions.js';
import { command, query, run, type Database } from '../sql/index.js';

const INSERT = command<[string, string]>(
  'INSERT INTO signed_out_sessions (id, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING',
);
const FORGET = command<[string]>('DELETE FROM signed_out_sessions WHERE expires_at < ?');
const HAS = query<{ one: number }, [string]>('SELECT 1 AS one FROM signed_out_sessions WHERE id = ?');

export function createSignedOutSessionRepository(db: Database): SignedOutSessionRepository {
  return {
    async add(sessionId, expiresAt, forgetBefore) {
      await db.transaction(function* () {
        yield* run(FORGET, [forgetBefore]);
        yield* run(INSERT, [sessionId, expiresAt]);
      });
    },
    async has(sessionId) {
      return (await db.one(HAS, [sessionId])) !== null;
    },
  };
}
