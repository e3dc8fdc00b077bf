import type { ChatRequestRepository } from '../../domain/model/chat-requests.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import type { Db } from '../database.js';

export function createChatRequestRepository(db: Db): ChatRequestRepository {
  const forget = db.prepare('DELETE FROM chat_requests_seen WHERE expires_at <= ?');
  const insert = db.prepare(
    'INSERT OR IGNORE INTO chat_requests_seen (provider, request_hash, expires_at) VALUES (?, ?, ?)',
  );
  const firstSeen = db.transaction((provider: ChatProvider, requestHash: string, expiresAt: string, now: string) => {
    forget.run(now);
    return insert.run(provider, requestHash, expiresAt).changes > 0;
  });
  return {
    async firstSeen(provider, requestHash, expiresAt, now) {
      return firstSeen(provider, requestHash, expiresAt, now);
    },
  };
}
