import type { ApiClient } from './http.js';

/** An audit entry as `GET /v1/orgs/:orgId/audit` answers it. */
export interface AuditEntry {
  id: number;
  action: string;
  actorType: string;
  actorId: string | null;
  targetType: string | null;
  targetId: string | null;
  metadata: Record<string, any>;
  createdAt: string;
}

/**
 * The audit log of an organization through the API (an owner's client), newest first, only the
 * entries of `action` when given: every page, following the `x-next-cursor` header.
 */
export async function auditEntries(owner: ApiClient, orgId: string, action?: string): Promise<AuditEntry[]> {
  const entries: AuditEntry[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: '200' });
    if (action !== undefined) query.set('action', action);
    if (cursor !== null) query.set('cursor', cursor);
    const res = await owner.get<AuditEntry[]>(`/orgs/${orgId}/audit?${query}`);
    if (res.status !== 200) throw new Error(`audit log: ${res.status} ${res.text}`);
    entries.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
  } while (cursor !== null);
  return entries;
}
