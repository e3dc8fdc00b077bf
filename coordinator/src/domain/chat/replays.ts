import { createHash } from 'node:crypto';
import type { Repositories } from '../model/repositories.js';
import type { ChatProvider } from '../model/triggers.js';
import { isoAt, type Clock } from '../../util/clock.js';

/**
 * How long a signed request is remembered: twice the five minutes either provider's signature
 * is accepted for, so that a request is still known for as long as its signature would pass
 * (its timestamp may be up to five minutes ahead of the clock that first saw it).
 */
export const CHAT_REQUEST_MEMORY_MS = 10 * 60_000;

/**
 * Replays of signed chat requests (docs/chat.md, "Signatures and replays"). A signature proves
 * that Slack or Discord sent a request, not that it is sent for the first time: anyone who saw
 * one (a proxy's log, a forwarded copy) could send it again within its five minutes. Every
 * signed request is recorded by what the signature covers, its timestamp and raw body, in the
 * database that every coordinator shares; one already recorded is a replay, and is not acted on.
 * A delivery the provider signs anew (Slack's retry of an event, `X-Slack-Retry-Num`) is not a
 * replay: its event id finds the job of the first delivery (ChatRunService).
 */
export class ChatReplayGuard {
  constructor(private readonly deps: { repos: Pick<Repositories, 'chatRequests'>; clock: Clock }) {}

  /** True the first time this signed request is received, false when it was received before. */
  async firstTime(provider: ChatProvider, signedTimestamp: string, rawBody: Buffer): Promise<boolean> {
    const hash = createHash('sha256').update(`${signedTimestamp}:`).update(rawBody).digest('hex');
    const now = this.deps.clock.now();
    return this.deps.repos.chatRequests.firstSeen(provider, hash, isoAt(now + CHAT_REQUEST_MEMORY_MS), isoAt(now));
  }
}
