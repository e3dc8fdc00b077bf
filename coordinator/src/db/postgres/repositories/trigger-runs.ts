import type { JobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../../domain/model/chat-outbox.js';
import type { DecideLimits } from '../../../domain/model/transaction-rules.js';
import type { AdmissionOutcome, AdmissionRequest, TriggerRunRepository } from '../../../domain/model/trigger-runs.js';
import type { WindowCounts } from '../../../domain/model/rate-limits.js';
import type { PgClient, PgPool, Queryable } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';
import { createOutboxWrites } from './chat-outbox.js';
import { claimOccurrence } from './cron-occurrences.js';
import { insertJob } from './job-rows.js';

/** Expired idempotency keys and past window counters are deleted at most this often (per coordinator). */
const PURGE_EVERY_MS = 60_000;

type Scope = 'token' | 'workflow';

const hasLimit = (l: { perMinute: number | null; perHour: number | null; perDay: number | null }) =>
  l.perMinute !== null || l.perHour !== null || l.perDay !== null;

/**
 * The admission of a trigger call in one transaction. What SQLite gets from its single writer,
 * several coordinators get here from transaction-scoped advisory locks, taken in one order
 * (the idempotency key, then the token's and the workflow's windows), so that the read, the
 * domain's decision (`decideLimits`, on the counts read under the locks) and the write are one
 * step for calls that could collide: one job per idempotency key, never more jobs in a window
 * than the limit. The occurrence of a scheduled run is claimed by its row's primary key.
 */
export function createTriggerRunRepository(
  pool: PgPool,
  decideLimits: DecideLimits,
  planMessages: PlanJobMessages,
): TriggerRunRepository {
  const jobsEnded = createOutboxWrites(planMessages);
  let nextPurgeAt = 0;

  /** A lock held until the transaction ends, named by `parts` (a JSON array: no two names collide). */
  const lock = (tx: PgClient, parts: string[]) =>
    one(tx, 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0)) AS locked', [JSON.stringify(parts)]);

  /**
   * The newest counter of each window of `scopes`; the domain's reader (below) counts it only when
   * it is of the window the call falls in (`windows`), so the window arithmetic stays the domain's.
   */
  async function newestCounters(tx: PgClient, scopes: { scope: Scope; id: string }[], now: number) {
    const counters = new Map<string, { start: number; count: number }>();
    if (scopes.length === 0) return counters;
    const rows = await all<{
      scope: Scope;
      scope_id: string;
      window: keyof WindowCounts;
      start: number;
      count: number;
    }>(
      tx,
      `SELECT DISTINCT ON (scope, scope_id, "window") scope, scope_id, "window", window_start AS start, count
       FROM rate_counters WHERE (scope, scope_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
         AND window_start <= $3
       ORDER BY scope, scope_id, "window", window_start DESC`,
      [scopes.map((s) => s.scope), scopes.map((s) => s.id), now],
    );
    for (const r of rows) counters.set(`${r.scope}:${r.scope_id}:${r.window}`, { start: r.start, count: r.count });
    return counters;
  }

  /** Expired idempotency keys and counters of past windows go (at most every PURGE_EVERY_MS). */
  async function purge(
    now: number,
    nowIso: string,
    windows: { minute: number; hour: number; day: number },
    db: Queryable = pool,
  ) {
    nextPurgeAt = now + PURGE_EVERY_MS;
    await run(db, 'DELETE FROM idempotency_keys WHERE expires_at <= $1', [nowIso]);
    await run(
      db,
      `DELETE FROM rate_counters WHERE ("window" = 'minute' AND window_start < $1)
         OR ("window" = 'hour' AND window_start < $2) OR ("window" = 'day' AND window_start < $3)`,
      [windows.minute, windows.hour, windows.day],
    );
  }

  const admitLocked = (request: AdmissionRequest) =>
    inTransaction(pool, async (tx): Promise<AdmissionOutcome> => {
      const { job, now, idempotency } = request;
      const nowIso = job.createdAt;
      if (idempotency) {
        await lock(tx, ['idempotency', job.triggerId, job.workflowName, idempotency.key]);
        const earlier = await one<{ hash: string; job_id: string }>(
          tx,
          `SELECT request_hash AS hash, job_id FROM idempotency_keys
           WHERE trigger_id = $1 AND workflow_name = $2 AND key = $3 AND expires_at > $4`,
          [job.triggerId, job.workflowName, idempotency.key, nowIso],
        );
        if (earlier) {
          return earlier.hash === idempotency.requestHash
            ? { outcome: 'repeated', jobId: earlier.job_id }
            : { outcome: 'idempotency_conflict' };
        }
      }

      if (request.occurrence) {
        const { scheduledAt, overlap } = request.occurrence;
        let skip = false;
        if (overlap === 'skip') {
          const previous = await one<{ open: boolean }>(
            tx,
            `SELECT status IN ('pending', 'queued', 'running') AS open FROM jobs
             WHERE org_id = $1 AND trigger_id = $2 AND source = 'cron' ORDER BY seq DESC LIMIT 1`,
            [job.orgId, job.triggerId],
          );
          skip = previous?.open === true;
        }
        const claimed = await claimOccurrence(tx, {
          triggerId: job.triggerId,
          scheduledAt,
          orgId: job.orgId,
          outcome: skip ? 'skipped' : 'job_created',
          jobId: skip ? null : job.id,
          reason: skip ? 'overlap' : null,
          firstScheduledAt: null,
          recordedAt: nowIso,
        });
        if (claimed === 0) return { outcome: 'claimed_before' };
        if (skip) return { outcome: 'skipped_overlap' };
      }
      if (request.rejection !== undefined || job.workflowId === null) {
        await insertJob(tx, job, 'rejected', request.rejection ?? 'The workflow is unknown');
        await jobsEnded(tx, [job.id], nowIso, { atAdmission: true });
        return { outcome: 'rejected', jobId: job.id };
      }
      const workflowId = job.workflowId;

      // The windows that may be read and counted, locked in one order before they are read.
      const limited: { scope: Scope; id: string }[] = [];
      if (request.token && hasLimit(request.token.limits)) limited.push({ scope: 'token', id: request.token.id });
      if (hasLimit(request.workflowLimits)) limited.push({ scope: 'workflow', id: workflowId });
      for (const s of limited) await lock(tx, ['rate', s.scope, s.id]);
      const counters = await newestCounters(tx, limited, now);
      const count = (key: string, start: number) => {
        const counter = counters.get(key);
        return counter?.start === start ? counter.count : 0;
      };
      const { windows, refused, counted } = decideLimits(
        { ...request, job: { ...job, workflowId } },
        (scope, id, w): WindowCounts => ({
          minute: count(`${scope}:${id}:minute`, w.minute),
          hour: count(`${scope}:${id}:hour`, w.hour),
          day: count(`${scope}:${id}:day`, w.day),
        }),
      );
      if (now >= nextPurgeAt) await purge(now, nowIso, windows, tx);
      if (refused) {
        await insertJob(tx, job, 'rejected', refused.message);
        await jobsEnded(tx, [job.id], nowIso, { atAdmission: true });
        if (refused.scope === 'workflow') {
          await run(
            tx,
            `INSERT INTO rate_limit_blocks (org_id, workflow_id, trigger_id, api_token_id, job_id, "window",
               limit_value, observed, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
            [
              job.orgId,
              workflowId,
              job.triggerId,
              job.apiTokenId,
              job.id,
              refused.refusal.window,
              refused.refusal.limit,
              refused.refusal.observed,
              nowIso,
            ],
          );
        }
        return { outcome: 'refused', jobId: job.id, ...refused };
      }

      for (const { scope, id } of counted) {
        await run(
          tx,
          `INSERT INTO rate_counters (scope, scope_id, "window", window_start, count)
           VALUES ($1, $2, 'minute', $3, 1), ($1, $2, 'hour', $4, 1), ($1, $2, 'day', $5, 1)
           ON CONFLICT (scope, scope_id, "window", window_start) DO UPDATE SET count = rate_counters.count + 1`,
          [scope, id, windows.minute, windows.hour, windows.day],
        );
      }
      if (idempotency) {
        await run(
          tx,
          `INSERT INTO idempotency_keys (trigger_id, workflow_name, key, request_hash, job_id, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (trigger_id, workflow_name, key) DO UPDATE SET
             request_hash = excluded.request_hash, job_id = excluded.job_id, expires_at = excluded.expires_at`,
          [
            job.triggerId,
            job.workflowName,
            idempotency.key,
            idempotency.requestHash,
            job.id,
            new Date(now + idempotency.ttlMs).toISOString(),
          ],
        );
      }
      // Last: the job's number locks the organization's counter row until the commit.
      await insertJob(tx, job, 'pending', null);
      return { outcome: 'admitted', jobId: job.id };
    });

  /**
   * A call with nothing to decide under a lock (no idempotency key, no limit, not an occurrence, not
   * refused before the admission) is its job's INSERT alone, committed by itself: the organization's
   * counter row is locked for that one statement, instead of from the INSERT to the COMMIT's round
   * trip (which caps an organization's admissions at one per round trip).
   */
  const admitPlain = async (request: AdmissionRequest): Promise<AdmissionOutcome | null> => {
    const { job, now } = request;
    if (request.idempotency || request.occurrence || request.rejection !== undefined || job.workflowId === null) {
      return null;
    }
    if ((request.token && hasLimit(request.token.limits)) || hasLimit(request.workflowLimits)) return null;
    const { windows, refused } = decideLimits({ ...request, job: { ...job, workflowId: job.workflowId } }, () => ({
      minute: 0,
      hour: 0,
      day: 0,
    }));
    if (refused) return null;
    if (now >= nextPurgeAt) await purge(now, job.createdAt, windows);
    await insertJob(pool, job, 'pending', null);
    return { outcome: 'admitted', jobId: job.id };
  };

  return {
    async admit(request) {
      return (await admitPlain(request)) ?? admitLocked(request);
    },
    async jobResult(jobId) {
      const row = await one<{
        status: JobStatus;
        exit_code: number | null;
        error_message: string | null;
        output: Record<string, unknown> | null;
      }>(pool, 'SELECT status, exit_code, error_message, output FROM jobs WHERE id = $1', [jobId]);
      if (!row) return null;
      return { status: row.status, exitCode: row.exit_code, errorMessage: row.error_message, output: row.output };
    },
  };
}
