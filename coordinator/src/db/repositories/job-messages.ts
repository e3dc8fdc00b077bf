import type { NewOutboxMessage, PlanJobMessages } from '../../domain/model/chat-outbox.js';
import type { ChatProvider, NotifyOn } from '../../domain/model/triggers.js';
import { all, command, one, query, run, type Flow, type Named } from '../sql/index.js';
import { toJob, type JobRow } from './job-rows.js';

/** A job row with its trigger's name and notification settings (null when it posts none). */
type EndedJobRow = JobRow & {
  n_trigger_name: string;
  n_provider: ChatProvider | null;
  n_team_id: string | null;
  n_channel_id: string | null;
  n_on: NotifyOn;
  n_deleted_at: string | null;
};

// A deleted trigger notifies no more; a chat run still answers the person who started it. A job of
// a batch posts nothing of its own: its batch does, once it ended (docs/fleets.md).
const ENDED = `SELECT j.*, t.name AS n_trigger_name, t.notify_provider AS n_provider, t.notify_team_id AS n_team_id,
    t.notify_channel_id AS n_channel_id, t.notify_on AS n_on, t.deleted_at AS n_deleted_at
  FROM jobs j JOIN triggers t ON t.id = j.trigger_id`;
const POSTS = `j.batch_id IS NULL AND (j.chat_origin IS NOT NULL OR (t.deleted_at IS NULL AND t.notify_provider IS NOT NULL
    AND t.notify_on <> 'none' AND t.notify_team_id IS NOT NULL AND t.notify_channel_id IS NOT NULL))`;
const ENDED_JOB = query<EndedJobRow, [string]>(`${ENDED} WHERE j.id = ? AND ${POSTS}`);
const ENDED_JOBS = query<EndedJobRow, [string]>(
  (d) => `${ENDED} WHERE j.id ${d.inJsonArray('?')} AND ${POSTS} ORDER BY j.seq`,
);

/** A message into the outbox, once per `dedupe_key`. */
export const ENQUEUE_MESSAGE = command<Named>(
  `INSERT INTO chat_outbox (org_id, dedupe_key, job_id, provider, target, payload, status, next_attempt_at, created_at)
   VALUES (@orgId, @dedupeKey, @jobId, @provider, @target, @payload, 'pending', @createdAt, @createdAt)
   ON CONFLICT (dedupe_key) DO NOTHING`,
);

export const enqueueParams = (m: NewOutboxMessage): Named => ({
  orgId: m.orgId,
  dedupeKey: m.dedupeKey,
  jobId: m.jobId,
  provider: m.provider,
  target: JSON.stringify(m.target),
  payload: JSON.stringify(m.payload),
  createdAt: m.createdAt,
});

/**
 * The chat messages of jobs that just ended, written in the transaction (or group-commit
 * operation) that ends them: for each, the domain decides (`plan`) which messages it posts (its
 * trigger's notification, the answer to a chat run's writer). A job of a trigger that posts
 * nothing costs one indexed read; several jobs are read in one statement.
 */
export function* jobsEnded(
  plan: PlanJobMessages,
  ids: readonly string[],
  at: string,
  options?: { atAdmission: boolean },
): Flow<void> {
  if (ids.length === 0) return;
  let rows: EndedJobRow[];
  if (ids.length === 1) {
    const row = yield* one(ENDED_JOB, [ids[0] as string]);
    rows = row ? [row] : [];
  } else {
    rows = yield* all(ENDED_JOBS, [JSON.stringify(ids)]);
  }
  for (const row of rows) {
    // A chat run of a deleted trigger is read for its answer to the writer: its trigger's
    // notification goes no more.
    const notifies =
      row.n_deleted_at === null &&
      row.n_provider !== null &&
      row.n_team_id !== null &&
      row.n_channel_id !== null &&
      row.n_on !== 'none';
    const messages = plan(
      {
        job: toJob(row),
        triggerName: row.n_trigger_name,
        notify: notifies
          ? {
              notifyProvider: row.n_provider as ChatProvider,
              notifyTeamId: row.n_team_id as string,
              notifyChannelId: row.n_channel_id as string,
              notifyOn: row.n_on,
            }
          : null,
        atAdmission: options?.atAdmission ?? false,
      },
      at,
    );
    for (const message of messages) yield* run(ENQUEUE_MESSAGE, enqueueParams(message));
  }
}
