import type { ChatRequestRepository } from '../../domain/model/chat-requests.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import { command, run, type Database } from '../sql/index.js';

const FORGET = command<[string]>('DELETE FROM chat_requests_seen WHERE expires_at <= ?');
const INSERT = command<[ChatProvider, string, string]>(
  `INSERT INTO chat_requests_seen (provider, request_hash, expires_at) VALUES (?, ?, ?)
   ON CONFLICT DO NOTHING`,
);

export function createChatRequestRepository(db: Database): ChatRequestRepository {
  return {
    firstSeen(provider, requestHash, expiresAt, now) {
      return db.transaction(function* () {
        yield* run(FORGET, [now]);
        return (yield* run(INSERT, [provider, requestHash, expiresAt])) > 0;
      });
    },
  };
}
