import type { Grant } from '../tokens/grants.js';
import type { Role } from './orgs.js';
import type { RateLimits } from './rate-limits.js';

export interface ApiToken {
  id: string;
  orgId: string;
  /** The user who issued it; a forced run checks this user's role at call time. */
  userId: string;
  name: string;
  hint: string;
  scopes: Grant[];
  rateLimit: RateLimits;
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

/** A token as authentication sees it: with its issuer's current role (null: no longer a member). */
export interface AuthenticatingApiToken extends ApiToken {
  issuerRole: Role | null;
}

export interface ApiTokenRepository {
  insert(token: ApiToken, tokenHash: string): Promise<void>;
  findByHash(tokenHash: string): Promise<ApiToken | null>;
  /** The token with this hash and its issuer's role in the token's organization, in one read. */
  findForAuthentication(tokenHash: string): Promise<AuthenticatingApiToken | null>;
  findInOrg(orgId: string, id: string): Promise<ApiToken | null>;
  /** Newest first. */
  listByOrg(orgId: string): Promise<ApiToken[]>;
  revoke(orgId: string, id: string, at: string): Promise<ApiToken | null>;
}
