/** The sessions signed out before they expired (their ids), kept past the instant they would have expired. */
export interface SignedOutSessionRepository {
  /** Records a signed-out session and forgets those whose expiry is before `forgetBefore` (ISO 8601). */
  add(sessionId: string, expiresAt: string, forgetBefore: string): Promise<void>;
  has(sessionId: string): Promise<boolean>;
}
