import type { AuditAction, AuditEntryInput, AuditRepository } from '../model/audit.js';
import type { Clock } from '../../util/clock.js';

export type AuditRecord = Omit<AuditEntryInput, 'createdAt'>;

/**
 * Writes audit entries: entries recorded in the same tick go to the repository as one batch, and
 * each `record()` resolves only after its entry is committed. A route that awaits it answers
 * after its audit entry is durable. The repository's inserts are group-committed with every
 * other hot write of the same event-loop turn (db/writer/), so a burst of concurrent requests
 * pays for one commit instead of one each; batching here waits no longer than the current tick,
 * so an entry does not wait one more turn before reaching that commit (docs/performance.md).
 */
export class AuditLog {
  private pending: { entry: AuditEntryInput; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;

  constructor(
    private readonly repo: AuditRepository,
    private readonly clock: Clock,
  ) {}

  record(entry: AuditRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ entry: { ...entry, createdAt: new Date(this.clock.now()).toISOString() }, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  /** Commits everything recorded so far. */
  async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    try {
      await this.repo.insertMany(batch.map((p) => p.entry));
      for (const p of batch) p.resolve();
    } catch (error) {
      for (const p of batch) p.reject(error);
    }
  }
}

/** A signed-in user acting in one organization (as `requireOrgRole` answers it). */
export interface UserActor {
  orgId: string;
  userId: string;
}

/** The audit entry of an action a user took on one target of their organization. */
export function userAction(
  actor: UserActor,
  action: AuditAction,
  targetType: string,
  targetId: string,
  metadata: Record<string, unknown>,
): AuditRecord {
  return { orgId: actor.orgId, actorType: 'user', actorId: actor.userId, action, targetType, targetId, metadata };
}
