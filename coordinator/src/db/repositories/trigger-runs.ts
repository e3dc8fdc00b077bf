import type { JobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../domain/model/chat-outbox.js';
import type { DecideLimits } from '../../domain/model/transaction-rules.js';
import type {
  AdmissionOutcome,
  AdmissionRequest,
  ChoosePoolAgent,
  PoolCandidate,
  TriggerRunRepository,
} from '../../domain/model/trigger-runs.js';
import type { RateWindow, ReadWindowCounts, WindowCounts } from '../../domain/model/rate-limits.js';
import { parseJsonColumn } from '../../util/json.js';
import { all, command, lock, one, query, run, values, type Database, type Flow } from '../sql/index.js';
import { CLAIM_OCCURRENCE } from './cron-occurrences.js';
import { jobsEnded } from './job-messages.js';
import { INSERT_JOB, jobInsertParams } from './job-rows.js';

/** Expired idempotency keys and past window counters are deleted at most this often (per coordinator). */
const PURGE_EVERY_MS = 60_000;

export type Scope = 'token' | 'workflow';
interface Windows {
  minute: number;
  hour: number;
  day: number;
}

/**
 * A key's earlier call: its body's hash, and what it made, a job or a batch (`is_job`: a key names
 * either, and the trigger may have moved between one agent and a selector since).
 */
export const FIND_KEY = query<{ hash: string; job_id: string; is_job: number }, [string, string, string, string]>(
  `SELECT k.request_hash AS hash, k.job_id,
     CASE WHEN EXISTS (SELECT 1 FROM jobs j WHERE j.id = k.job_id) THEN 1 ELSE 0 END AS is_job
   FROM idempotency_keys k
   WHERE k.trigger_id = ? AND k.workflow_name = ? AND k.key = ? AND k.expires_at > ?`,
);
export const SAVE_KEY = command<[string, string, string, string, string, string]>(
  `INSERT INTO idempotency_keys (trigger_id, workflow_name, key, request_hash, job_id, expires_at)
   VALUES (?, ?, ?, ?, ?, ?)
   ON CONFLICT (trigger_id, workflow_name, key) DO UPDATE SET
     request_hash = excluded.request_hash, job_id = excluded.job_id, expires_at = excluded.expires_at`,
);
/** A scope's counters up to now. */
interface CounterRow {
  window: RateWindow;
  start: number;
  count: number;
}
const COUNTERS = query<CounterRow, [Scope, string, number]>(
  `SELECT "window", window_start AS start, count FROM rate_counters
   WHERE scope = ? AND scope_id = ? AND window_start <= ?`,
);
export const BUMP_COUNTERS = command<{ scope: Scope; id: string } & Windows>(
  `INSERT INTO rate_counters (scope, scope_id, "window", window_start, count)
   VALUES (@scope, @id, 'minute', @minute, 1), (@scope, @id, 'hour', @hour, 1), (@scope, @id, 'day', @day, 1)
   ON CONFLICT (scope, scope_id, "window", window_start) DO UPDATE SET count = rate_counters.count + 1`,
);
export const INSERT_BLOCK = command(
  `INSERT INTO rate_limit_blocks (org_id, workflow_id, trigger_id, api_token_id, job_id, "window", limit_value,
     observed, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const PURGE_KEYS = command<[string]>('DELETE FROM idempotency_keys WHERE expires_at <= ?');
// Counters of windows the decision calls past (the previous window is kept: another coordinator
// whose clock is a little behind still counts in it); keys a minute past their expiry, for the same.
const PURGE_MARGIN_MS = 60_000;
const PURGE_COUNTERS = command<[number, number, number]>(
  `DELETE FROM rate_counters WHERE ("window" = 'minute' AND window_start < ?)
     OR ("window" = 'hour' AND window_start < ?) OR ("window" = 'day' AND window_start < ?)`,
);
/** Whether the trigger's latest scheduled job is still open (1) or not (0); null without one. */
const PREVIOUS_SCHEDULED_OPEN = values<number, [string, string]>(
  (d) => `SELECT status IN ('pending', 'queued', 'running') FROM jobs
    WHERE org_id = ${d.seekParameter} AND trigger_id = ${d.seekParameter} AND source = 'cron'
    ORDER BY seq DESC LIMIT 1`,
);
const RESULT = query<
  { status: JobStatus; exit_code: number | null; error_message: string | null; output: string | null },
  [string]
>('SELECT status, exit_code, error_message, output FROM jobs WHERE id = ?');

/** The open jobs handed to each of the agents (a JSON array of ids): a pool's candidates' load. */
const OPEN_COUNTS = query<{ agent_id: string; n: number }, [string]>(
  (d) => `SELECT agent_id, count(*) AS n FROM jobs
    WHERE agent_id ${d.inJsonArray('?')} AND status IN ('pending', 'queued', 'running')
      AND held = FALSE
    GROUP BY agent_id`,
);

/**
 * The agent a pool's job goes to, decided on the candidates' load as the write reads it: on
 * PostgreSQL under the organization's pool lock, which the claims of waiting jobs take too
 * (pools.ts), so decisions and claims take turns across coordinators.
 */
export function* choosePooled(
  orgId: string,
  candidates: readonly PoolCandidate[],
  choose: ChoosePoolAgent,
): Flow<PoolCandidate | null> {
  yield* lock('pool', orgId);
  if (candidates.length === 0) return null;
  const open = new Map(
    (yield* all(OPEN_COUNTS, [JSON.stringify(candidates.map((c) => c.agentId))])).map((r) => [r.agent_id, r.n]),
  );
  return choose(candidates.map((c) => ({ ...c, open: open.get(c.agentId) ?? 0 })));
}

/** The reader of a call without limits: the domain reads nothing (a limit is what makes it read). */
const NOTHING_COUNTED: ReadWindowCounts = () => ({ minute: 0, hour: 0, day: 0 });

/** Reads the counters of `limited` (up to `now`): the domain counts the one of each window the call falls in. */
export function* readCounts(limited: readonly { scope: Scope; id: string }[], now: number): Flow<ReadWindowCounts> {
  const counters: { scope: Scope; id: string; rows: CounterRow[] }[] = [];
  for (const { scope, id } of limited) counters.push({ scope, id, rows: yield* all(COUNTERS, [scope, id, now]) });
  const count = (scope: Scope, id: string, window: RateWindow, start: number): number => {
    const rows = counters.find((c) => c.scope === scope && c.id === id)?.rows ?? [];
    return rows.find((r) => r.window === window && r.start === start)?.count ?? 0;
  };
  return (scope, id, w): WindowCounts => ({
    minute: count(scope, id, 'minute', w.minute),
    hour: count(scope, id, 'hour', w.hour),
    day: count(scope, id, 'day', w.day),
  });
}

export const hasLimit = (l: { perMinute: number | null; perHour: number | null; perDay: number | null }) =>
  l.perMinute !== null || l.perHour !== null || l.perDay !== null;

/**
 * A call with nothing to decide under a lock: no idempotency key, no limit, not an occurrence, not
 * refused before the admission. Its statements need not commit together (atomic: false).
 */
const isPlain = (request: AdmissionRequest): boolean =>
  request.idempotency === null &&
  request.pool === undefined &&
  request.occurrence === undefined &&
  request.rejection === undefined &&
  request.job.workflowId !== null &&
  !(request.token && hasLimit(request.token.limits)) &&
  !hasLimit(request.workflowLimits);

/**
 * The admission of a trigger call (idempotency → occurrence claim → limits → job → counters),
 * written once: on SQLite an operation of the group commit, run serially, so its
 * read-decide-write needs no lock; on PostgreSQL one transaction, where transaction-scoped
 * advisory locks, taken in one order (the idempotency key, then the token's and the workflow's
 * windows) before what the decision rests on is read, make the read, the domain's decision
 * (`decideLimits`, on the counts read) and the write one step for calls that could collide across
 * coordinators: one job per idempotency key, never more jobs in a window than the limit. The
 * occurrence of a scheduled run is claimed by its row's primary key. A refused call's `rejected`
 * job enqueues its chat notification in the same transaction (job-messages.ts).
 */
export function createTriggerRunRepository(
  db: Database,
  decideLimits: DecideLimits,
  planMessages: PlanJobMessages,
  choosePoolAgent: ChoosePoolAgent,
): TriggerRunRepository {
  let nextPurgeAt = 0;

  function* saveKey(
    job: AdmissionRequest['job'],
    idempotency: NonNullable<AdmissionRequest['idempotency']>,
    now: number,
  ): Flow<void> {
    const expiresAt = new Date(now + idempotency.ttlMs).toISOString();
    yield* run(SAVE_KEY, [
      job.triggerId,
      job.workflowName,
      idempotency.key,
      idempotency.requestHash,
      job.id,
      expiresAt,
    ]);
  }

  function* admission(request: AdmissionRequest): Flow<AdmissionOutcome> {
    const { now, idempotency } = request;
    let { job } = request;
    const nowIso = job.createdAt;
    if (idempotency) {
      yield* lock('idempotency', job.triggerId, job.workflowName, idempotency.key);
      const earlier = yield* one(FIND_KEY, [job.triggerId, job.workflowName, idempotency.key, nowIso]);
      if (earlier) {
        if (Number(earlier.is_job) !== 1) return { outcome: 'idempotency_conflict', usedFor: 'batch' };
        return earlier.hash === idempotency.requestHash
          ? { outcome: 'repeated', jobId: earlier.job_id }
          : { outcome: 'idempotency_conflict' };
      }
    }

    if (request.occurrence) {
      // The claim: the occurrence's row, written once whoever tries (its primary key).
      const { scheduledAt, overlap } = request.occurrence;
      const skip = overlap === 'skip' && (yield* one(PREVIOUS_SCHEDULED_OPEN, [job.orgId, job.triggerId])) === 1;
      const claimed = yield* run(CLAIM_OCCURRENCE, {
        triggerId: job.triggerId,
        scheduledAt,
        orgId: job.orgId,
        outcome: skip ? 'skipped' : 'job_created',
        jobId: skip ? null : job.id,
        batchId: null,
        reason: skip ? 'overlap' : null,
        firstScheduledAt: null,
        recordedAt: nowIso,
      });
      if (claimed === 0) return { outcome: 'claimed_before' };
      if (skip) return { outcome: 'skipped_overlap' };
    }
    if (request.pool && request.rejection === undefined) {
      // A pool's job: its agent, and that agent's version of the workflow (its params, its
      // timeout), decided now.
      const chosen = yield* choosePooled(job.orgId, request.pool.candidates, choosePoolAgent);
      if (chosen) {
        const { agentId, workflowId, params, timeoutMs } = chosen;
        job = { ...job, agentId, workflowId, params, timeoutMs };
      } else job = { ...job, agentId: null };
    }
    if (request.rejection !== undefined || job.workflowId === null) {
      yield* run(INSERT_JOB, jobInsertParams(job, 'rejected', request.rejection ?? 'The workflow is unknown'));
      yield* jobsEnded(planMessages, [job.id], nowIso, { atAdmission: true });
      return { outcome: 'rejected', jobId: job.id };
    }
    const workflowId = job.workflowId;

    // The windows that may be read and counted, locked in one order before they are read.
    const limited: { scope: Scope; id: string }[] = [];
    if (request.token && hasLimit(request.token.limits)) limited.push({ scope: 'token', id: request.token.id });
    if (hasLimit(request.workflowLimits)) limited.push({ scope: 'workflow', id: workflowId });
    for (const { scope, id } of limited) yield* lock('rate', scope, id);
    const { windows, refused, counted, pastBefore } = decideLimits(
      { ...request, job: { ...job, workflowId } },
      limited.length === 0 ? NOTHING_COUNTED : yield* readCounts(limited, now),
    );
    if (now >= nextPurgeAt) {
      nextPurgeAt = now + PURGE_EVERY_MS;
      yield* run(PURGE_KEYS, [new Date(now - PURGE_MARGIN_MS).toISOString()]);
      yield* run(PURGE_COUNTERS, [pastBefore.minute, pastBefore.hour, pastBefore.day]);
    }
    if (refused) {
      yield* run(INSERT_JOB, jobInsertParams(job, 'rejected', refused.message));
      yield* jobsEnded(planMessages, [job.id], nowIso, { atAdmission: true });
      if (refused.scope === 'workflow') {
        yield* run(INSERT_BLOCK, [
          job.orgId,
          workflowId,
          job.triggerId,
          job.apiTokenId,
          job.id,
          refused.refusal.window,
          refused.refusal.limit,
          refused.refusal.observed,
          nowIso,
        ]);
      }
      // A chat delivery's key names its rejected job: the same message again is a repeat of it.
      if (idempotency?.keepRefused) yield* saveKey(job, idempotency, now);
      return { outcome: 'refused', jobId: job.id, ...refused };
    }

    for (const { scope, id } of counted) yield* run(BUMP_COUNTERS, { scope, id, ...windows });
    if (idempotency) yield* saveKey(job, idempotency, now);
    // Last: on PostgreSQL the job's number locks the organization's counter row until the commit.
    yield* run(INSERT_JOB, jobInsertParams(job, 'pending', null));
    return { outcome: 'admitted', jobId: job.id, agentId: job.agentId };
  }

  return {
    admit(request) {
      // A plain call on PostgreSQL is its job's INSERT alone, committed by itself: the
      // organization's counter row is locked for that one statement, not until a COMMIT's round
      // trip (which would cap an organization's admissions at one per round trip).
      return db.write(() => admission(request), { atomic: !isPlain(request) });
    },
    async jobResult(jobId) {
      const row = await db.one(RESULT, [jobId]);
      if (!row) return null;
      return {
        status: row.status,
        exitCode: row.exit_code,
        errorMessage: row.error_message,
        output: parseJsonColumn<Record<string, unknown>>(row.output, 'jobs.output'),
      };
    },
  };
}
