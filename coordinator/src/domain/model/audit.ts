export type ActorType = 'user' | 'api_token' | 'agent' | 'system';

export interface AuditEntryInput {
  orgId: string | null;
  actorType: ActorType;
  actorId: string | null;
  action: string;
  targetType?: string | null;
  targetId?: string | null;
  metadata?: Record<string, unknown>;
  createdAt: string;
}

export interface AuditEntry {
  id: number;
  orgId: string | null;
  actorType: ActorType;
  actorId: string | null;
  action: string;
  targetType: string | null;
  targetId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
}

export interface AuditQuery {
  action?: string | undefined;
  actorType?: ActorType | undefined;
  actorId?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
  /** Stored times (UTC ISO): entries created at or after `createdAfter` and before `createdBefore`. */
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  limit: number;
  /** Entries with an id below this one (the previous page's last id). */
  before?: number | undefined;
}

export interface AuditRepository {
  /** Inserts all entries in one transaction. */
  insertMany(entries: readonly AuditEntryInput[]): Promise<void>;
  /** Newest first. */
  list(orgId: string, query: AuditQuery): Promise<AuditEntry[]>;
}
