import { randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { ServerSecretRepository } from '../model/server-secrets.js';
import type { SignedOutSessionRepository } from '../model/signed-out-sessions.js';
import type { StoredUser, UserRepository } from '../model/users.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';

export interface SessionClaims {
  /** The session's own id (the token's `jti`): what signing out records. */
  sessionId: string;
  userId: string;
  /** When the session ends (ISO 8601). */
  expiresAt: string;
}

/** A valid session: its claims and its user as stored now. */
export interface VerifiedSession extends SessionClaims {
  user: StoredUser;
}

interface DecodedSession extends SessionClaims {
  /** The user's session generation when the session was issued (0 for tokens without one). */
  generation: number;
}

/**
 * How long a signed-out session is remembered past its expiry: the pruning coordinator's clock may
 * be ahead of the one a request meets (a clock fast for a while, then corrected; another
 * coordinator on the database a few hours off), and a session forgotten before every clock has
 * passed its expiry would be accepted again.
 */
export const SIGNED_OUT_KEPT_PAST_EXPIRY_MS = 7 * 24 * 3_600_000;

const ISSUER = 'drover-coordinator';
const AUDIENCE = 'drover-dashboard';

/**
 * Dashboard sessions: HS256 JWTs signed with a key kept in the database (so every coordinator
 * sharing it accepts the same sessions). The role is not in the token: it is read from the
 * membership at every request, so a demotion or removal takes effect at once. Each session has
 * an id (`jti`); signing out records it, and a signed-out session is refused from then on by
 * every coordinator sharing the database. Each session also carries its user's session
 * generation (`gen`) as it was when it was issued; a password change or "sign out everywhere"
 * moves the user's generation on, which ends every session issued before, on every coordinator
 * at once: the check reads the user's row, which every request reads anyway (no cache to go
 * stale, no extra query).
 */
export class SessionService {
  private constructor(
    private readonly key: Uint8Array,
    private readonly ttlSeconds: number,
    private readonly signedOut: SignedOutSessionRepository,
    private readonly users: UserRepository,
    private readonly clock: Clock,
  ) {}

  static async create(
    repos: {
      serverSecrets: ServerSecretRepository;
      signedOutSessions: SignedOutSessionRepository;
      users: UserRepository;
    },
    ttlSeconds: number,
    clock: Clock,
  ): Promise<SessionService> {
    const value = await repos.serverSecrets.getOrCreate(
      'session_signing_key',
      () => randomBytes(32).toString('base64'),
      new Date(clock.now()).toISOString(),
    );
    return new SessionService(Buffer.from(value, 'base64'), ttlSeconds, repos.signedOutSessions, repos.users, clock);
  }

  /** A new session of the user, under their current session generation (`StoredUser`). */
  async issue(userId: string, generation: number): Promise<{ token: string; expiresAt: string }> {
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const exp = nowSeconds + this.ttlSeconds;
    const token = await new SignJWT({ gen: generation })
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
   * The claims and user of a valid session token, or null for anything else: bad, expired, signed
   * with another key, without a session id (issued by a version that had none), signed out, of a
   * user who no longer exists, or issued before the user's sessions were all ended.
   */
  async verify(token: string): Promise<VerifiedSession | null> {
    const decoded = await this.decode(token);
    if (!decoded) return null;
    const { generation, ...claims } = decoded;
    const [signedOut, user] = await Promise.all([
      this.signedOut.has(claims.sessionId),
      this.users.findById(claims.userId),
    ]);
    if (signedOut || !user || user.sessionGeneration !== generation) return null;
    return { ...claims, user };
  }

  /** Ends the session of `token` for good; a token that is not a valid session changes nothing. */
  async signOut(token: string): Promise<void> {
    const claims = await this.verify(token);
    if (claims) {
      const forgetBefore = isoAt(this.clock.now() - SIGNED_OUT_KEPT_PAST_EXPIRY_MS);
      await this.signedOut.add(claims.sessionId, claims.expiresAt, forgetBefore);
    }
  }

  /**
   * Ends every session of the user, on every coordinator sharing the database; the user's new
   * session generation, or null when there is no such user.
   */
  endAll(userId: string): Promise<number | null> {
    return this.users.endSessions(userId);
  }

  private async decode(token: string): Promise<DecodedSession | null> {
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
      // Sessions issued before generations existed have none: the first, 0.
      const generation = payload.gen === undefined ? 0 : payload.gen;
      if (typeof generation !== 'number' || !Number.isSafeInteger(generation)) return null;
      return {
        sessionId: payload.jti,
        userId: payload.sub,
        expiresAt: new Date(payload.exp * 1000).toISOString(),
        generation,
      };
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) return null;
      throw error;
    }
  }
}
