import { randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { ServerSecretRepository } from './model/server-secrets.js';
import type { Clock } from '../util/clock.js';

export interface SessionClaims {
  userId: string;
  /** When the session ends (ISO 8601). */
  expiresAt: string;
}

const ISSUER = 'drover-coordinator';
const AUDIENCE = 'drover-dashboard';

/**
 * Dashboard sessions: HS256 JWTs signed with a key kept in the database (so every coordinator
 * sharing it accepts the same sessions). The role is not in the token: it is read from the
 * membership at every request, so a demotion or removal takes effect at once.
 */
export class SessionService {
  private constructor(
    private readonly key: Uint8Array,
    private readonly ttlSeconds: number,
    private readonly clock: Clock,
  ) {}

  static async create(secrets: ServerSecretRepository, ttlSeconds: number, clock: Clock): Promise<SessionService> {
    const value = await secrets.getOrCreate(
      'session_signing_key',
      () => randomBytes(32).toString('base64'),
      new Date(clock.now()).toISOString(),
    );
    return new SessionService(Buffer.from(value, 'base64'), ttlSeconds, clock);
  }

  async issue(userId: string): Promise<{ token: string; expiresAt: string }> {
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const exp = nowSeconds + this.ttlSeconds;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(nowSeconds)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /** The claims of a valid session token, or null for anything else (bad, expired, wrong key). */
  async verify(token: string): Promise<SessionClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
        currentDate: new Date(this.clock.now()),
      });
      if (typeof payload.sub !== 'string' || typeof payload.exp !== 'number') return null;
      return { userId: payload.sub, expiresAt: new Date(payload.exp * 1000).toISOString() };
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) return null;
      throw error;
    }
  }
}
