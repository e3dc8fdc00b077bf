import { randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { ServerSecretRepository } from './model/server-secrets.js';
import type { SignedOutSessionRepository } from './model/signed-out-sessions.js';
import { isoAt, type Clock } from '../util/clock.js';
import { newId } from '../util/ids.js';

export interface SessionClaims {
  /** The session's own id (the token's `jti`): what signing out records. */
  sessionId: string;
  userId: string;
  /** When the session ends (ISO 8601). */
  expiresAt: string;
}

const ISSUER = 'drover-coordinator';
const AUDIENCE = 'drover-dashboard';

/**
 * Dashboard sessions: HS256 JWTs signed with a key kept in the database (so every coordinator
 * sharing it accepts the same sessions). The role is not in the token: it is read from the
 * membership at every request, so a demotion or removal takes effect at once. Each session has
 * an id (`jti`); signing out records it, and a signed-out session is refused from then on by
 * every coordinator sharing the database.
 */
export class SessionService {
  private constructor(
    private readonly key: Uint8Array,
    private readonly ttlSeconds: number,
    private readonly signedOut: SignedOutSessionRepository,
    private readonly clock: Clock,
  ) {}

  static async create(
    repos: { serverSecrets: ServerSecretRepository; signedOutSessions: SignedOutSessionRepository },
    ttlSeconds: number,
    clock: Clock,
  ): Promise<SessionService> {
    const value = await repos.serverSecrets.getOrCreate(
      'session_signing_key',
      () => randomBytes(32).toString('base64'),
      new Date(clock.now()).toISOString(),
    );
    return new SessionService(Buffer.from(value, 'base64'), ttlSeconds, repos.signedOutSessions, clock);
  }

  async issue(userId: string): Promise<{ token: string; expiresAt: string }> {
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const exp = nowSeconds + this.ttlSeconds;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setJti(newId())
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(nowSeconds)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /**
   * The claims of a valid session token, or null for anything else: bad, expired, signed with
   * another key, without a session id (issued by a version that had none), or signed out.
   */
  async verify(token: string): Promise<SessionClaims | null> {
    const claims = await this.decode(token);
    if (!claims || (await this.signedOut.has(claims.sessionId))) return null;
    return claims;
  }

  /** Ends the session of `token` for good; a token that is not a valid session changes nothing. */
  async signOut(token: string): Promise<void> {
    const claims = await this.verify(token);
    if (claims) await this.signedOut.add(claims.sessionId, claims.expiresAt, isoAt(this.clock.now()));
  }

  private async decode(token: string): Promise<SessionClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
        currentDate: new Date(this.clock.now()),
      });
      if (typeof payload.sub !== 'string' || typeof payload.exp !== 'number' || typeof payload.jti !== 'string') {
        return null;
      }
      return { sessionId: payload.jti, userId: payload.sub, expiresAt: new Date(payload.exp * 1000).toISOString() };
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) return null;
      throw error;
    }
  }
}
