import type {
  PausedReason,
  Rollout,
  RolloutEvent,
  RolloutEventName,
  RolloutRepository,
  RolloutStatus,
  StartRollout,
  WaveCounts,
  YankRelease,
} from '../../domain/model/rollouts.js';
import { mapSoundRows, parseJsonColumnOf } from '../../util/json.js';
import { all, command, json, jsonRecords, one, query, run, values, type Database, type Flow } from '../sql/index.js';
import { lockApplication } from './parent-locks.js';
import { IN_APP, IN_APP_LOCKED, PUBLISH, toRelease, YANK } from './releases.js';

interface RolloutRow {
  release_id: string;
  org_id: string;
  application_id: string;
  channel: string;
  status: RolloutStatus;
  waves: string;
  soak_seconds: number;
  max_failure_rate: number;
  min_attempts: number;
  device_count: number;
  current_wave: number;
  accepted_wave: number;
  paused_reason: PausedReason | null;
  wave_times: string;
  created_at: string;
  ended_at: string | null;
}

/** A plan's waves: increasing percentages of the devices, integers. */
// Percentages above 0 and at most 100, whole or not (a 0.5 % canary of a large fleet), as the
// rollout's rules take them (domain/ota/rollout-rules.ts).
const isWaves = (v: unknown): v is number[] =>
  Array.isArray(v) && v.every((w) => typeof w === 'number' && Number.isFinite(w) && w > 0 && w <= 100);
/** Each started wave's start and end (null while it runs), ISO timestamps. */
const isWaveTimes = (v: unknown): v is Rollout['waveTimes'] =>
  Array.isArray(v) &&
  v.every(
    (t) =>
      Array.isArray(t) && t.length === 2 && typeof t[0] === 'string' && (t[1] === null || typeof t[1] === 'string'),
  );

const toRollout = (r: RolloutRow): Rollout => ({
  releaseId: r.release_id,
  orgId: r.org_id,
  applicationId: r.application_id,
  channel: r.channel,
  status: r.status,
  plan: {
    waves: parseJsonColumnOf(r.waves, 'rollouts.waves', isWaves) as number[],
    soakSeconds: r.soak_seconds,
    maxFailureRate: r.max_failure_rate,
    minAttempts: r.min_attempts,
  },
  deviceCount: r.device_count,
  currentWave: r.current_wave,
  acceptedWave: r.accepted_wave,
  pausedReason: r.paused_reason,
  waveTimes: parseJsonColumnOf(r.wave_times, 'rollouts.wave_times', isWaveTimes) as Rollout['waveTimes'],
  createdAt: r.created_at,
  endedAt: r.ended_at,
});

const BY_RELEASE = query<RolloutRow, [string]>('SELECT * FROM rollouts WHERE release_id = ?');
const BY_RELEASE_LOCKED = query<RolloutRow, [string]>(
  (d) => `SELECT * FROM rollouts WHERE release_id = ? ${d.forUpdate}`,
);
const WITHHOLDING_OF_APP = values<number, [string]>(
  "SELECT 1 FROM rollouts WHERE application_id = ? AND status <> 'completed' LIMIT 1",
);
const RUNNING = query<RolloutRow, []>("SELECT * FROM rollouts WHERE status = 'running' ORDER BY created_at");
const IN_PROGRESS = query<RolloutRow & { application_slug: string; version: string }, [string]>(
  `SELECT r.*, a.slug AS application_slug, rel.version FROM applications a
     JOIN rollouts r ON r.application_id = a.id AND r.status <> 'completed'
     JOIN releases rel ON rel.id = r.release_id
   WHERE a.org_id = ? AND a.deleted_at IS NULL AND r.status IN ('running', 'paused')
   ORDER BY r.created_at DESC, r.release_id`,
);
/** The devices a rollout's waves are made of: the channel's, revoked agents aside (they get no update). */
const CHANNEL_BINDINGS = values<string, [string, string]>(
  `SELECT b.id FROM device_bindings b JOIN agents a ON a.id = b.agent_id
   WHERE b.application_id = ? AND b.channel = ? AND a.status <> 'revoked' ORDER BY b.id`,
);
const INSERT = command<Record<string, unknown>>(
  `INSERT INTO rollouts (release_id, org_id, application_id, channel, status, waves, soak_seconds, max_failure_rate,
     min_attempts, device_count, current_wave, accepted_wave, paused_reason, wave_times, created_at, ended_at)
   SELECT r.id, a.org_id, r.application_id, r.channel, 'running', @waves, @soakSeconds, @maxFailureRate,
     @minAttempts, @deviceCount, 0, -1, NULL, @waveTimes, @at, NULL
   FROM releases r JOIN applications a ON a.id = r.application_id WHERE r.id = @releaseId`,
);
const DEVICE = { binding_id: 'text', wave: 'bigint' };
const INSERT_DEVICES = command<[string, string]>(
  (d) => `INSERT INTO rollout_devices (release_id, binding_id, wave)
   SELECT ?, t.binding_id, t.wave FROM ${d.jsonRecords('?', 't', DEVICE)}`,
);
const INSERT_EVENT = command<[string, string, string, RolloutEventName, string, string | null]>(
  `INSERT INTO rollout_events (release_id, seq, at, event, by, detail)
   VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM rollout_events WHERE release_id = ?), ?, ?, ?, ?)`,
);
const HISTORY = query<{ at: string; event: RolloutEventName; by: string; detail: string | null }, [string]>(
  'SELECT at, event, by, detail FROM rollout_events WHERE release_id = ? ORDER BY seq',
);
const MOVE = command<Record<string, unknown>>(
  `UPDATE rollouts SET status = @status, current_wave = @currentWave, accepted_wave = @acceptedWave,
     paused_reason = @pausedReason, wave_times = @waveTimes, ended_at = @endedAt
   WHERE release_id = @releaseId AND status = @fromStatus AND current_wave = @fromWave`,
);
/** Ends the release's unfinished rollout, whichever move came last (PostgreSQL checks the status again on the row). */
const ABORT = query<RolloutRow, [string, string]>(
  `UPDATE rollouts SET status = 'aborted', paused_reason = NULL, ended_at = ?
   WHERE release_id = ? AND status IN ('running', 'paused') RETURNING *`,
);
/**
 * The channel's unfinished rollouts of releases published before its newest published release:
 * earlier, or at the same instant with a lower sequence. Each publish ends them after its own
 * commit; whichever of two publishes at once runs this last sees both, and ends the older one's
 * rollout even when that is its own (the newer publish committed and ran it first).
 */
const UNFINISHED_OF_CHANNEL = values<string, [string, string]>(
  (d) => `SELECT release_id FROM rollouts WHERE application_id = ? AND channel = ?
     AND status IN ('running', 'paused')
     AND EXISTS (SELECT 1 FROM releases o JOIN releases n
         ON n.application_id = o.application_id AND n.channel = o.channel AND n.status = 'published'
       WHERE o.id = rollouts.release_id
         AND (o.published_at < n.published_at OR (o.published_at = n.published_at AND o.sequence < n.sequence)))
     ORDER BY release_id ${d.forUpdate}`,
);
const SUPERSEDE = command<[string, string]>(
  `UPDATE rollouts SET status = 'superseded', paused_reason = NULL, ended_at = ?
   WHERE release_id = ? AND status IN ('running', 'paused')`,
);
const BOUND_SINCE = values<string, [string]>(
  `SELECT b.id FROM rollouts r JOIN device_bindings b ON b.application_id = r.application_id AND b.channel = r.channel
   WHERE r.release_id = ? AND NOT EXISTS (
     SELECT 1 FROM rollout_devices rd WHERE rd.release_id = r.release_id AND rd.binding_id = b.id)
   ORDER BY b.id`,
);
const WAVE_BINDINGS = values<string, [string, number]>(
  'SELECT binding_id FROM rollout_devices WHERE release_id = ? AND wave = ? ORDER BY binding_id',
);

/**
 * The devices new in each wave (or in one, `@wave`), counted: those that run the release (or a
 * later one: their sequence is at least its), and of the others those whose update to it failed
 * (an update job for it ended `failed`, `timed_out` or `rejected`). A binding removed since is no
 * longer counted, nor is one moved to another channel (the release is not desired there: its
 * update never comes), nor is a revoked device: revocation fails its update job, which says
 * nothing of the release.
 */
const COUNTS = (oneWave: boolean) =>
  query<{ wave: number; devices: number; succeeded: number; failed: number }, Record<string, unknown>>(
    `SELECT rd.wave AS wave, count(*) AS devices,
       SUM(CASE WHEN COALESCE(b.current_sequence, 0) >= @sequence THEN 1 ELSE 0 END) AS succeeded,
       SUM(CASE WHEN COALESCE(b.current_sequence, 0) < @sequence AND ${UPDATE_FAILED} THEN 1 ELSE 0 END) AS failed
     FROM ${WAVE_DEVICES}
     WHERE rd.release_id = @releaseId ${oneWave ? 'AND rd.wave = @wave' : ''} AND a.status <> 'revoked'
     GROUP BY rd.wave ORDER BY rd.wave`,
  );
/** A rollout's devices (`rd`) still bound on its channel (`b`), with their agents (`a`) (COUNTS, FAILED_DEVICES). */
const WAVE_DEVICES = `rollout_devices rd JOIN rollouts r ON r.release_id = rd.release_id
  JOIN device_bindings b ON b.id = rd.binding_id AND b.channel = r.channel JOIN agents a ON a.id = b.agent_id`;
/** The update to the release failed for the rollout device `rd` (COUNTS, FAILED_DEVICES). */
const UPDATE_FAILED = `EXISTS (SELECT 1 FROM update_jobs u JOIN jobs j ON j.id = u.job_id
  WHERE u.binding_id = rd.binding_id AND u.release_id = rd.release_id AND j.status IN ('failed', 'timed_out', 'rejected'))`;
const FAILED_DEVICES = values<string, Record<string, unknown>>(
  (d) => `SELECT a.name FROM ${WAVE_DEVICES}
   WHERE rd.release_id = @releaseId AND rd.wave = @wave AND a.status <> 'revoked'
     AND COALESCE(b.current_sequence, 0) < @sequence AND ${UPDATE_FAILED}
   ORDER BY a.name${d.byteOrder} LIMIT @limit`,
);
const ALL_COUNTS = COUNTS(false);
const WAVE_COUNTS = COUNTS(true);

/**
 * The releases that do not count yet for each binding: those of its application whose rollout
 * has not completed and whose waves so far do not hold the binding (bound after the publish, or
 * in a later wave).
 */
const WITHHELD = query<{ binding_id: string; release_id: string }, [string]>(
  (d) => `SELECT b.id AS binding_id, r.release_id FROM device_bindings b
   JOIN rollouts r ON r.application_id = b.application_id AND r.status <> 'completed'
   WHERE b.id ${d.inJsonArray('?')}
     AND NOT EXISTS (SELECT 1 FROM rollout_devices rd
       WHERE rd.release_id = r.release_id AND rd.binding_id = b.id AND rd.wave <= r.current_wave)`,
);

const counts = (r: { devices: number; succeeded: number; failed: number }): WaveCounts => ({
  devices: Number(r.devices),
  succeeded: Number(r.succeeded ?? 0),
  failed: Number(r.failed ?? 0),
});

/** Staged rollouts (docs/ota.md, "Staged rollouts"). */
export function createRolloutRepository(db: Database): RolloutRepository {
  function* event(releaseId: string, e: RolloutEvent): Flow<void> {
    yield* run(INSERT_EVENT, [releaseId, releaseId, e.at, e.event, e.by, e.detail]);
  }

  return {
    publish({ applicationId, releaseId, plan, at, by, assign }) {
      return db.transaction(
        function* (): Flow<StartRollout> {
          yield* lockApplication(applicationId);
          const before = yield* one(IN_APP_LOCKED, [applicationId, releaseId]);
          if (!before) return { outcome: 'not_found' };
          if ((yield* run(PUBLISH, [at, applicationId, releaseId])) !== 1) {
            return { outcome: 'conflict', release: toRelease(before) };
          }
          const release = toRelease((yield* one(IN_APP, [applicationId, releaseId]))!);
          const devices = assign(yield* all(CHANNEL_BINDINGS, [applicationId, release.channel]));
          yield* run(INSERT, {
            releaseId,
            waves: json(plan.waves),
            soakSeconds: plan.soakSeconds,
            maxFailureRate: plan.maxFailureRate,
            minAttempts: plan.minAttempts,
            deviceCount: devices.length,
            waveTimes: json([[at, null]]),
            at,
          });
          if (devices.length > 0) {
            yield* run(INSERT_DEVICES, [
              releaseId,
              jsonRecords(
                DEVICE,
                devices.map((d) => ({ binding_id: d.bindingId, wave: d.wave })),
              ),
            ]);
          }
          yield* event(releaseId, {
            at,
            event: 'start',
            by,
            detail: `${devices.length} devices in waves of ${plan.waves.join(', ')} %`,
          });
          return { outcome: 'started', release, rollout: toRollout((yield* one(BY_RELEASE, [releaseId]))!) };
        },
        { immediate: true },
      );
    },
    yank({ applicationId, releaseId, at, by }) {
      return db.transaction(
        function* (): Flow<YankRelease> {
          if (!(yield* one(IN_APP_LOCKED, [applicationId, releaseId]))) return { outcome: 'not_found' };
          const applied = (yield* run(YANK, [at, applicationId, releaseId])) === 1;
          const release = toRelease((yield* one(IN_APP, [applicationId, releaseId]))!);
          if (!applied) return { outcome: 'conflict', release };
          const aborted = yield* one(ABORT, [at, releaseId]);
          if (aborted) yield* event(releaseId, { at, event: 'abort', by, detail: 'the release was yanked' });
          return { outcome: 'applied', release, aborted: aborted ? toRollout(aborted) : null };
        },
        { immediate: true },
      );
    },
    async find(releaseId) {
      const row = await db.one(BY_RELEASE, [releaseId]);
      return row ? toRollout(row) : null;
    },
    async withholdsAny(applicationId) {
      return (await db.one(WITHHOLDING_OF_APP, [applicationId])) !== null;
    },
    async listRunning() {
      const { sound, damaged } = mapSoundRows(await db.all(RUNNING, []), toRollout, (r) => r.release_id);
      return { rollouts: sound, damaged };
    },
    async listInProgress(orgId) {
      return (await db.all(IN_PROGRESS, [orgId])).map((r) => ({
        ...toRollout(r),
        applicationSlug: r.application_slug,
        version: r.version,
      }));
    },
    async waveCounts(releaseId, sequence) {
      const rows = await db.all(ALL_COUNTS, { releaseId, sequence });
      return new Map(rows.map((r) => [Number(r.wave), counts(r)]));
    },
    async countsOfWave(releaseId, sequence, wave) {
      const row = await db.one(WAVE_COUNTS, { releaseId, sequence, wave });
      return row ? counts(row) : { devices: 0, succeeded: 0, failed: 0 };
    },
    move(releaseId, m) {
      return db.transaction(
        function* (): Flow<Rollout | null> {
          const row = yield* one(BY_RELEASE_LOCKED, [releaseId]);
          if (!row) return null;
          const r = toRollout(row);
          const next = { ...r, ...m.to };
          const moved = yield* run(MOVE, {
            releaseId,
            status: next.status,
            currentWave: next.currentWave,
            acceptedWave: next.acceptedWave,
            pausedReason: next.pausedReason,
            waveTimes: json(next.waveTimes),
            endedAt: next.endedAt,
            fromStatus: m.from.status,
            fromWave: m.from.currentWave,
          });
          if (moved !== 1) return null;
          yield* event(releaseId, m.event);
          return next;
        },
        { immediate: true },
      );
    },
    boundSince(releaseId) {
      return db.all(BOUND_SINCE, [releaseId]);
    },
    bindingsOfWave(releaseId, wave) {
      return db.all(WAVE_BINDINGS, [releaseId, wave]);
    },
    failedDevicesOfWave(releaseId, sequence, wave, limit) {
      return db.all(FAILED_DEVICES, { releaseId, sequence, wave, limit });
    },
    async history(releaseId) {
      return db.all(HISTORY, [releaseId]);
    },
    supersede(applicationId, channel, at) {
      return db.transaction(
        function* (): Flow<string[]> {
          const ended: string[] = [];
          for (const releaseId of yield* all(UNFINISHED_OF_CHANNEL, [applicationId, channel])) {
            if ((yield* run(SUPERSEDE, [at, releaseId])) !== 1) continue;
            yield* event(releaseId, {
              at,
              event: 'supersede',
              by: 'system',
              detail: 'another release was published on the channel',
            });
            ended.push(releaseId);
          }
          return ended;
        },
        { immediate: true },
      );
    },
    withheld(bindingIds) {
      return db.read(() => withheldOf(bindingIds));
    },
  };
}

/** The withheld releases of the bindings, read inside a flow (an evaluation's). */
export function* withheldOf(bindingIds: readonly string[]): Flow<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  if (bindingIds.length === 0) return out;
  for (const r of yield* all(WITHHELD, [JSON.stringify(bindingIds)])) {
    let set = out.get(r.binding_id);
    if (!set) out.set(r.binding_id, (set = new Set()));
    set.add(r.release_id);
  }
  return out;
}
