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
  /**
   * Revokes the token: the token as it is now, and whether this call revoked it (`first`; false
   * when it was revoked before, also by a call at the same moment on another coordinator); null
   * when it does not exist in the organization.
   */
  revoke(orgId: string, id: string, at: string): Promise<{ token: ApiToken; first: boolean } | null>;
  /** Revokes every token this user issued, in every organization, that is not revoked yet: those. */
  revokeAllOfUser(userId: string, at: string): Promise<ApiToken[]>;
}

/** The grants a token's `scopes` array holds (docs/management.md, "API tokens and grants"). Each `type` appears at most once. */
export const STORAGE_PERMISSIONS = ['read', 'write', 'delete'] as const;
export type StoragePermission = (typeof STORAGE_PERMISSIONS)[number];

export interface AgentGrant {
  type: 'agent';
  agentIds: string[];
}
export interface TriggerGrant {
  type: 'trigger';
  triggerIds: string[];
}
export interface StorageGrant {
  type: 'storage';
  /** null: every binding of the organization. */
  bindingIds: string[] | null;
  permissions: StoragePermission[];
}
export type Grant = AgentGrant | TriggerGrant | StorageGrant;
export type GrantType = Grant['type'];
