import type { DeviceState } from '@drover/shared';
import type {
  BindInput,
  BindResult,
  DeviceBinding,
  DeviceBindingRepository,
  EvaluateBinding,
  RemovedBinding,
} from '../../domain/model/device-bindings.js';
import { all, command, isSet, one, query, run, values, type Database, type Dialect, type Flow } from '../sql/index.js';
import { evaluateBindings } from './device-binding-evaluation.js';
import { toDeviceBinding, type DeviceBindingRow } from './device-binding-rows.js';
import { lockApplication } from './parent-locks.js';

const ALREADY_BOUND = query<{ agent_id: string }, [string, string]>(
  (d) => `SELECT agent_id FROM device_bindings
   WHERE application_id = ? AND agent_id ${d.inJsonArray('?')}`,
);
/** The application, not deleted (read once its row is locked: a deletion that went first is seen). */
const APP_LIVE = query<{ one: number }, [string]>(
  'SELECT 1 AS one FROM applications WHERE id = ? AND deleted_at IS NULL',
);
const INSERT = query<DeviceBindingRow, [string, string, string, string, string, string]>(
  `INSERT INTO device_bindings (id, org_id, application_id, agent_id, channel, created_at)
   VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
);
const IN_APP = query<DeviceBindingRow, [string, string]>(
  'SELECT * FROM device_bindings WHERE application_id = ? AND id = ?',
);
const IN_APP_LOCKED = query<DeviceBindingRow, [string, string]>(
  (d) => `SELECT * FROM device_bindings WHERE application_id = ? AND id = ? ${d.forUpdate}`,
);
/** A listed binding's row: its insertion key too (its place in bind order, a page's cursor). */
const OF_APP = query<DeviceBindingRow & { list_key: number }, [string]>(
  (d) =>
    `SELECT *, ${d.insertionOrder} AS list_key FROM device_bindings WHERE application_id = ? ORDER BY ${d.insertionOrder}`,
);
/** A page of the application's bindings in bind order, after a list key (0: from the first). */
const PAGE_OF_APP = query<DeviceBindingRow & { list_key: number }, [string, number, number]>(
  (d) =>
    `SELECT *, ${d.insertionOrder} AS list_key FROM device_bindings WHERE application_id = ? AND ${d.insertionOrder} > ?
     ORDER BY ${d.insertionOrder} LIMIT ?`,
);
const COUNT_OF_APP = values<number, [string]>('SELECT count(*) FROM device_bindings WHERE application_id = ?');
/** `seekParameter`: every signed manifest reads this, ~4 µs with it against ~25 µs re-prepared without. */
const OF_AGENT = (d: Dialect) => `SELECT b.* FROM device_bindings b
  JOIN applications a ON a.id = b.application_id AND a.deleted_at IS NULL WHERE b.agent_id = ${d.seekParameter}`;
const OF_AGENT_ORDERED = query<DeviceBindingRow, [string]>((d) => `${OF_AGENT(d)} ORDER BY b.${d.insertionOrder}`);
const FOR_AGENT = query<DeviceBindingRow, [string, string]>((d) => `${OF_AGENT(d)} AND b.application_id = ?`);
const SET_CHANNEL = command<[string, string, string]>(
  'UPDATE device_bindings SET channel = ? WHERE application_id = ? AND id = ?',
);
/** Cancels the update jobs still `pending` among some (a JSON array); gives their ids. */
const CANCEL_PENDING = query<{ id: string }, [string, string, string]>(
  (d) => `UPDATE jobs SET status = 'cancelled', error_message = ?, finished_at = ?
   WHERE id ${d.inJsonArray('?')} AND status = 'pending' RETURNING id`,
);
const REMOVE = command<[string]>((d) => `DELETE FROM device_bindings WHERE id ${d.inJsonArray('?')}`);
/**
 * The bindings a publish or a yank concerns, in the order of their agents: the update jobs their
 * evaluation issues, 250 to a transaction, then sit next to each other in the jobs' indexes that
 * begin with the agent, so a transaction writes a few pages of each rather than one per job (a
 * publish to 100,000 devices: 9.5 s instead of 11.5, docs/performance.md, "OTA at 100,000 devices").
 */
const CONCERNED = query<{ id: string; agent_id: string }, { appId: string; channel: string; releaseId: string }>(
  `SELECT id, agent_id FROM device_bindings WHERE application_id = @appId AND channel = @channel
   UNION SELECT id, agent_id FROM device_bindings WHERE application_id = @appId AND current_release_id = @releaseId
   ORDER BY agent_id`,
);
/**
 * Due on time: a retry, a maintenance window opening for a held update, the end of the window of a
 * pending update job (withdrawn if the agent has not taken it).
 */
const DUE = query<{ id: string }, { now: string; limit: number }>(
  `SELECT id FROM device_bindings WHERE retry_at IS NOT NULL AND retry_at <= @now AND active_job_id IS NULL
   UNION
   SELECT id FROM device_bindings WHERE window_opens_at IS NOT NULL AND window_opens_at <= @now
   UNION
   SELECT id FROM device_bindings WHERE window_closes_at IS NOT NULL AND window_closes_at <= @now
   LIMIT @limit`,
);
/**
 * The next `size` bindings with an update job in progress, in the order of its id after `after`
 * (null: from the first), each with whether that job has ended: one that has was not settled (its
 * end's evaluation was lost with a coordinator that stopped in between).
 */
const ACTIVE_WINDOW = query<{ id: string; job_id: string; ended: number }, { after: string | null; size: number }>(
  `SELECT w.id, w.active_job_id AS job_id,
     CASE WHEN j.status IN ('pending', 'queued', 'running') THEN 0 ELSE 1 END AS ended
   FROM (SELECT id, active_job_id FROM device_bindings
         WHERE active_job_id IS NOT NULL AND (active_job_id > @after OR @after IS NULL)
         ORDER BY active_job_id LIMIT @size) w
   JOIN jobs j ON j.id = w.active_job_id
   ORDER BY w.active_job_id`,
);
/**
 * How many bindings with an update job in progress one sweep looks at for an end that was not
 * settled: a publish to 100,000 devices leaves that many in progress, and looking at all of them
 * at every sweep held the database (and, on SQLite, the event loop) for ~0.3 s each time. The
 * sweeps go through them a window at a time, from where the last one stopped.
 */
export const ACTIVE_WINDOW_SIZE = 2_000;
const PER_STATE = query<{ state: DeviceState | null; count: number }, []>(
  `SELECT b.state AS state, count(*) AS count FROM device_bindings b
     JOIN applications a ON a.id = b.application_id WHERE a.deleted_at IS NULL GROUP BY b.state`,
);
const OF_ACTIVE_JOB = query<{ id: string }, [string]>('SELECT id FROM device_bindings WHERE active_job_id = ?');
const APPS_OF_JOBS = query<{ jobId: string; applicationId: string }, [string]>(
  (d) => `SELECT job_id AS "jobId", application_id AS "applicationId" FROM update_jobs
   WHERE job_id ${d.inJsonArray('?')}`,
);

const orNull = (row: DeviceBindingRow | null) => (row ? toDeviceBinding(row) : null);

/**
 * Removes bindings its caller read and locked (in id order), as `DELETE .../devices/:deviceId`
 * does: each one's update job is cancelled with `message` if it is still `pending` (one the agent
 * took runs to its end and is ignored). A device group's pass removes its bindings so too.
 */
export function* removeBindings(
  rows: readonly DeviceBindingRow[],
  at: string,
  message: string,
): Flow<RemovedBinding[]> {
  if (rows.length === 0) return [];
  const jobIds = rows.flatMap((r) => (r.active_job_id ? [r.active_job_id] : []));
  const cancelled = new Set(
    jobIds.length === 0 ? [] : (yield* all(CANCEL_PENDING, [message, at, JSON.stringify(jobIds)])).map((r) => r.id),
  );
  yield* run(REMOVE, [JSON.stringify(rows.map((r) => r.id))]);
  return rows.map((r) => ({
    binding: toDeviceBinding(r),
    cancelledJobId: r.active_job_id !== null && cancelled.has(r.active_job_id) ? r.active_job_id : null,
  }));
}

/**
 * `evaluateBinding` decides each evaluation (the domain's, domain/ota/evaluate-binding.ts; the flow
 * is device-binding-evaluation.ts). Binding agents locks the application's row (PostgreSQL): two
 * coordinators binding the same agent take turns (the unique index on (application, agent) backs
 * it). Unbinding locks the binding's row. On SQLite each takes the write lock at BEGIN.
 */
export function createDeviceBindingRepository(db: Database, evaluateBinding: EvaluateBinding): DeviceBindingRepository {
  /** Where the next sweep's look at the update jobs in progress begins (ACTIVE_WINDOW). */
  let activeAfter: string | null = null;
  function* bind(input: BindInput): Flow<BindResult> {
    yield* lockApplication(input.applicationId);
    if (!(yield* one(APP_LIVE, [input.applicationId]))) return { outcome: 'not_found' };
    const ids = input.bindings.map((b) => b.agentId);
    const taken = (yield* all(ALREADY_BOUND, [input.applicationId, JSON.stringify(ids)])).map((r) => r.agent_id);
    if (taken.length > 0) return { outcome: 'already_bound', agentIds: ids.filter((id) => taken.includes(id)) };
    const bindings: DeviceBinding[] = [];
    for (const b of input.bindings) {
      const row = yield* one(INSERT, [b.id, input.orgId, input.applicationId, b.agentId, input.channel, input.at]);
      bindings.push(toDeviceBinding(row!));
    }
    return { outcome: 'bound', bindings };
  }

  function* unbind(appId: string, id: string, at: string, message: string): Flow<RemovedBinding | null> {
    const row = yield* one(IN_APP_LOCKED, [appId, id]);
    if (!row) return null;
    const [removed] = yield* removeBindings([row], at, message);
    return removed ?? null;
  }

  return {
    bind(input) {
      return db.transaction(() => bind(input), { immediate: true });
    },
    async findInApp(applicationId, id) {
      return orNull(await db.one(IN_APP, [applicationId, id]));
    },
    async listByApp(applicationId) {
      return (await db.all(OF_APP, [applicationId])).map((r) => ({
        ...toDeviceBinding(r),
        listKey: Number(r.list_key),
      }));
    },
    async pageByApp(applicationId, after, limit) {
      const rows = await db.all(PAGE_OF_APP, [applicationId, after, limit]);
      return rows.map((r) => ({ ...toDeviceBinding(r), listKey: Number(r.list_key) }));
    },
    async countByApp(applicationId) {
      return Number((await db.one(COUNT_OF_APP, [applicationId])) ?? 0);
    },
    async listByAgent(agentId) {
      return (await db.all(OF_AGENT_ORDERED, [agentId])).map(toDeviceBinding);
    },
    async findForAgent(agentId, applicationId) {
      return orNull(await db.one(FOR_AGENT, [agentId, applicationId]));
    },
    async changeChannel(applicationId, id, channel) {
      await db.run(SET_CHANNEL, [channel, applicationId, id]);
      return orNull(await db.one(IN_APP, [applicationId, id]));
    },
    unbind(applicationId, id, at, message) {
      return db.transaction(() => unbind(applicationId, id, at, message), { immediate: true });
    },
    async idsToEvaluate(applicationId, channel, releaseId) {
      return (await db.all(CONCERNED, { appId: applicationId, channel, releaseId })).map((r) => r.id);
    },
    async idsDue(now, limit) {
      const due = new Set((await db.all(DUE, { now, limit })).map((r) => r.id));
      const window = await db.all(ACTIVE_WINDOW, { after: activeAfter, size: ACTIVE_WINDOW_SIZE });
      // The next sweep goes on after what this one looked at, or from the first again once it
      // reached the last.
      let after = activeAfter;
      let reachedLast = window.length < ACTIVE_WINDOW_SIZE;
      for (const r of window) {
        if (isSet(r.ended)) {
          if (due.size >= limit) {
            reachedLast = false;
            break;
          }
          due.add(r.id);
        }
        after = r.job_id;
      }
      activeAfter = reachedLast ? null : after;
      return [...due];
    },
    countByState() {
      return db.all(PER_STATE, []);
    },
    async bindingOfActiveJob(jobId) {
      return (await db.one(OF_ACTIVE_JOB, [jobId]))?.id ?? null;
    },
    async applicationsOfUpdateJobs(jobIds) {
      if (jobIds.length === 0) return [];
      return db.all(APPS_OF_JOBS, [JSON.stringify(jobIds)]);
    },
    evaluate(requests, now) {
      return db.transaction(() => evaluateBindings(requests, now, evaluateBinding), { immediate: true });
    },
  };
}
