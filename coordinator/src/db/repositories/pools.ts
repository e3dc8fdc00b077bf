import type { Job } from '../../domain/model/jobs.js';
import type { PoolRepository, PoolTaker } from '../../domain/model/pools.js';
import { lock, query, values, all, one, type Database, type Flow } from '../sql/index.js';
import { parseJsonColumn } from '../../util/json.js';
import { toJob, type JobRow } from './job-rows.js';

/** The organization's triggers on a selector (few): those whose selector the agent meets are its pools. */
const SELECTOR_TRIGGERS = query<{ id: string; selector: string }, [string]>(
  'SELECT id, agent_selector AS selector FROM triggers WHERE org_id = ? AND agent_selector IS NOT NULL',
);
/**
 * The organization's jobs waiting in the agent's pools (of the triggers given) for a workflow it
 * reports, the oldest `LIMIT` of them. On PostgreSQL their rows are locked, skipping those another
 * claim holds.
 */
const WAITING = query<{ id: string; workflow_name: string; params: string }, [string, string, string, number]>(
  (d) => `SELECT id, workflow_name, params FROM jobs
    WHERE org_id = ? AND agent_id IS NULL AND status = 'pending'
      AND trigger_id ${d.inJsonArray('?')} AND workflow_name ${d.inJsonArray('?')}
    ORDER BY seq LIMIT ? ${d.forUpdateSkipLocked}`,
);
/** The open jobs given to the agent and not held back by a batch: what fills its queue (as trigger-runs.ts counts). */
const OPEN_OF_AGENT = values<number, [string]>(
  `SELECT count(*) FROM jobs WHERE agent_id = ? AND status IN ('pending', 'queued', 'running') AND held = FALSE`,
);
/** Both on the partial index of jobs waiting in a pool (jobs_pooled): as many rows read as jobs wait. */
const ANY_WAITING = values<number, [string]>(
  `SELECT 1 FROM jobs WHERE org_id = ? AND agent_id IS NULL AND status = 'pending' LIMIT 1`,
);
const WAITING_ORGS = values<string, []>(
  `SELECT DISTINCT org_id FROM jobs WHERE agent_id IS NULL AND status = 'pending'`,
);
/** On the partial index of jobs waiting in a pool, as ANY_WAITING: the trigger's are few of them. */
const WAITING_OF = query<JobRow, [string, string]>(
  `SELECT * FROM jobs WHERE org_id = ? AND agent_id IS NULL AND status = 'pending' AND trigger_id = ? ORDER BY seq`,
);
const TAKE = query<JobRow, [string, string, number | null, string]>(
  `UPDATE jobs SET agent_id = ?, workflow_id = ?, timeout_ms = ? WHERE id = ? AND agent_id IS NULL AND status = 'pending'
   RETURNING *`,
);
/**
 * A disconnected agent's jobs of pools it has not started, back to their pool: only while it is
 * still `disconnected` (its stream may have opened again on another coordinator meanwhile), and
 * each only from `pending` or `queued`, so that a start committed first keeps it (the agent runs
 * it) and a start committed after finds it no longer the agent's (the agent does not run it).
 * A job of a pool is one of a trigger on a selector outside a batch, whatever the trigger's fanout
 * is now (as a claim takes it): one made a batch since the call keeps its pool's jobs.
 */
const RELEASE = query<JobRow, [string, string]>(
  `UPDATE jobs SET agent_id = NULL, status = 'pending', queued_at = NULL, deadline_at = NULL
   WHERE agent_id = ? AND status IN ('pending', 'queued') AND batch_id IS NULL AND kind = 'trigger'
     AND trigger_id IN (SELECT id FROM triggers WHERE agent_selector IS NOT NULL)
     AND EXISTS (SELECT 1 FROM agents WHERE id = ? AND status = 'disconnected')
   RETURNING *`,
);
/**
 * How many more waiting jobs than it has room for a claim reads: the jobs its versions of their
 * workflows refuse are passed over, and those behind them still reach it.
 */
const PASSED_OVER = 100;

/**
 * Pools (docs/fleets.md): the jobs of `fanout: one` triggers that found no agent with room wait
 * without one; an agent that connects, or frees a place in its queue, claims them here, those its
 * version of their workflow takes the params of. The claim
 * takes the organization's pool lock on PostgreSQL (as a pool's admission does,
 * trigger-runs.ts), and each job is taken by a conditional UPDATE: once, by one agent. The room
 * the claim is asked for (its stream's count) is capped by the agent's open jobs as the database
 * holds them under that lock: a job an admission gave the agent a moment ago, whose event has not
 * reached the stream yet, takes its place, so the agent is never sent more than its capacity.
 */
export function createPoolRepository(db: Database): PoolRepository {
  function* claim(taker: PoolTaker, room: number): Flow<Job[]> {
    yield* lock('pool', taker.orgId);
    const free = Math.min(room, taker.capacity - ((yield* one(OPEN_OF_AGENT, [taker.id])) ?? 0));
    if (free <= 0) return [];
    const pools = (yield* all(SELECTOR_TRIGGERS, [taker.orgId])).filter((t) => taker.matches(t.selector));
    if (pools.length === 0) return [];
    const waiting = yield* all(WAITING, [
      taker.orgId,
      JSON.stringify(pools.map((t) => t.id)),
      JSON.stringify([...taker.workflows.keys()]),
      free + PASSED_OVER,
    ]);
    const taken: Job[] = [];
    for (const job of waiting) {
      if (taken.length === free) break;
      const version = taker.workflows.get(job.workflow_name)!;
      if (!version.takes(parseJsonColumn<Record<string, unknown>>(job.params, 'jobs.params') ?? {})) continue;
      const row = yield* one(TAKE, [taker.id, version.id, version.timeoutMs, job.id]);
      if (row) taken.push(toJob(row));
    }
    return taken;
  }
  return {
    async claim(taker, room) {
      if (room <= 0 || taker.workflows.size === 0) return [];
      return db.write(() => claim(taker, room));
    },
    async anyWaiting(orgId) {
      return (await db.one(ANY_WAITING, [orgId])) !== null;
    },
    waitingOrgs() {
      return db.all(WAITING_ORGS, []);
    },
    async waitingOf(orgId, triggerId) {
      return (await db.all(WAITING_OF, [orgId, triggerId])).map(toJob);
    },
    async release(agentId) {
      return (await db.write(() => all(RELEASE, [agentId, agentId]))).map(toJob);
    },
  };
}
