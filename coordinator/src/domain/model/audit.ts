import type { ActorType, AuditAction, AuditTargetType } from '@drover/shared';

export {
  AUDIT_ACTIONS,
  AUDIT_ACTOR_TYPES,
  AUDIT_TARGET_TYPES,
  type ActorType,
  type AuditAction,
  type AuditTargetType,
} from '@drover/shared';

export interface AuditEntryInput {
  orgId: string | null;
  actorType: ActorType;
  actorId: string | null;
  action: AuditAction;
  targetType?: AuditTargetType | null;
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
  /** Inserts the entries in one statement. */
  insertMany(entries: readonly AuditEntryInput[]): Promise<void>;
  /**
   * `insertMany` of the entries `take` returns, called when the write runs: on SQLite in the group
   * commit at the end of the event-loop turn (so what was recorded until then goes in too), on
   * PostgreSQL at once. It may be called twice (the group commit may run an operation again) and
   * must then return the same entries.
   */
  insertTaken(take: () => readonly AuditEntryInput[]): Promise<void>;
  /** Newest first. */
  list(orgId: string, query: AuditQuery): Promise<AuditEntry[]>;
}
