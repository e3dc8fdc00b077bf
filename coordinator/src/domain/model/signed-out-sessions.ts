/** The sessions signed out before they expired (their ids), kept until they would have expired. */
export interface SignedOutSessionRepository {
  /** Records a signed-out session and forgets those whose expiry is before `now` (ISO 8601). */
  add(sessionId: string, expiresAt: string, now: string): Promise<void>;
  has(sessionId: string): Promise<boolean>;
}
