import type { SignedOutSessionRepository } from '../../domain/model/signed-out-sessions.js';
import type { Db } from '../database.js';

export function createSignedOutSessionRepository(db: Db): SignedOutSessionRepository {
  const insert = db.prepare('INSERT OR IGNORE INTO signed_out_sessions (id, expires_at) VALUES (?, ?)');
  const forget = db.prepare('DELETE FROM signed_out_sessions WHERE expires_at < ?');
  const has = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM signed_out_sessions WHERE id = ?');
  const add = db.transaction((sessionId: string, expiresAt: string, now: string) => {
    forget.run(now);
    insert.run(sessionId, expiresAt);
  });
  return {
    async add(sessionId, expiresAt, now) {
      add(sessionId, expiresAt, now);
    },
    async has(sessionId) {
      return has.get(sessionId) !== undefined;
    },
  };
}
