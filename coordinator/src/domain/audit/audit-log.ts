import type { AuditAction, AuditEntryInput, AuditRepository, AuditTargetType } from '../model/audit.js';
import type { Clock } from '../../util/clock.js';

export type AuditRecord = Omit<AuditEntryInput, 'createdAt'>;

interface PendingEntry {
  entry: AuditEntryInput;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface Batch {
  entries: PendingEntry[];
  /** Given to the repository (its write may not have taken the entries yet). */
  handed: boolean;
}

/**
 * Writes audit entries, each `record()` resolving only after its entry is committed: a route that
 * awaits it answers after its audit entry is durable. Entries go to the repository in batches,
 * one statement each: a batch opens with the first entry recorded after the previous one was
 * taken, is handed to the repository at the end of the tick, and takes every entry recorded until
 * the repository's write runs. On SQLite that write is an operation of the group commit at the end
 * of the event-loop turn (db/writer/), so the entries of a burst of concurrent requests (one
 * handled per macrotask) are one INSERT of one operation instead of one each; on PostgreSQL it
 * runs at once, with the entries of the tick (docs/performance.md, "Token discovery").
 */
export class AuditLog {
  /** The batch that still takes entries (its write has not run yet), if any. */
  private open: Batch | null = null;
  /** Batches handed to the repository and not settled yet. */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly repo: AuditRepository,
    private readonly clock: Clock,
  ) {}

  record(entry: AuditRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const pending = { entry: { ...entry, createdAt: new Date(this.clock.now()).toISOString() }, resolve, reject };
      if (this.open) {
        this.open.entries.push(pending);
        return;
      }
      const batch: Batch = { entries: [pending], handed: false };
      this.open = batch;
      queueMicrotask(() => this.write(batch));
    });
  }

  /** Resolves once every entry recorded so far is committed (or its write failed). */
  async flush(): Promise<void> {
    if (this.open) this.write(this.open);
    await Promise.allSettled([...this.inFlight]);
  }

  private write(batch: Batch): void {
    if (batch.handed) return;
    batch.handed = true;
    const take = () => {
      // Later entries open a batch of their own; taking it again (a second run) gives the same ones.
      if (this.open === batch) this.open = null;
      return batch.entries.map((p) => p.entry);
    };
    const done = this.repo.insertTaken(take).then(
      () => {
        for (const p of batch.entries) p.resolve();
      },
      (error: unknown) => {
        // Failed before its write took it (a closed writer, a BEGIN that failed): later entries
        // must open a batch of their own, not join one that is over.
        if (this.open === batch) this.open = null;
        for (const p of batch.entries) p.reject(error);
      },
    );
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
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
  targetType: AuditTargetType,
  targetId: string,
  metadata: Record<string, unknown>,
): AuditRecord {
  return { orgId: actor.orgId, actorType: 'user', actorId: actor.userId, action, targetType, targetId, metadata };
}
