import type { ApiClient } from './http.js';

/** A grant of an API token (spec, Grants table). */
export type Grant =
  | { type: 'agent'; agentIds: string[] }
  | { type: 'trigger'; triggerIds: string[] }
  | { type: 'storage'; bindingIds: string[] | null; permissions: ('read' | 'write' | 'delete')[] };

/** Rate limits of an API token; each an integer >= 1 or null (no limit). Omitted: no limit. */
export interface TokenLimits {
  rateLimitPerMinute?: number | null;
  rateLimitPerHour?: number | null;
  rateLimitPerDay?: number | null;
  expiresAt?: string | null;
  name?: string;
}

/** The management representation of an API token (POST adds `token`). */
export interface ApiTokenBody {
  id: string;
  name: string;
  hint: string;
  scopes: Grant[];
  rateLimit: { perMinute: number | null; perHour: number | null; perDay: number | null };
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
  token: string;
}

export interface IssuedApiToken {
  id: string;
  /** The plaintext `drv_...` token, shown only by the issuing call. */
  token: string;
  body: ApiTokenBody;
}

/**
 * Issues an API token through `POST /v1/orgs/:orgId/api-tokens` as `owner` (a session client)
 * and returns its id, plaintext and the full response body. Throws unless the answer is 201.
 */
export async function issueApiToken(
  owner: ApiClient,
  orgId: string,
  scopes: Grant[],
  limits: TokenLimits = {},
): Promise<IssuedApiToken> {
  const body = {
    name: limits.name ?? 'test token',
    scopes,
    rateLimitPerMinute: limits.rateLimitPerMinute ?? null,
    rateLimitPerHour: limits.rateLimitPerHour ?? null,
    rateLimitPerDay: limits.rateLimitPerDay ?? null,
    ...(limits.expiresAt === undefined ? {} : { expiresAt: limits.expiresAt }),
  };
  const res = await owner.post<ApiTokenBody>(`/orgs/${orgId}/api-tokens`, { body });
  if (res.status !== 201) throw new Error(`issue api token: ${res.status} ${res.text}`);
  return { id: res.body.id, token: res.body.token, body: res.body };
}
