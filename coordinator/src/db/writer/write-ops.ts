import type { Db } from '../database.js';
import { createNonceWrites } from '../repositories/agents.js';
import { createAuditWrites } from '../repositories/audit.js';
import { createJobWrites } from '../repositories/jobs.js';
import { createAdmissionWrites } from '../repositories/trigger-runs.js';

/**
 * The hot writes, as named operations over prepared statements: trigger-run admissions, agents'
 * job reports and log lines, the deadline sweeps, audit entries and request nonces. Each takes
 * one argument and returns one value, both plain data, so that where they run is the executor's
 * business (executor.ts): a writer thread with its own connection was built and measured, and
 * lost on this hardware (docs/performance.md), but needs nothing more than these operations.
 *
 * Operations are synchronous and must not await: they run inside the group commit's transaction.
 */
export function createWriteOps(db: Db) {
  const admission = createAdmissionWrites(db);
  const jobs = createJobWrites(db);
  const audit = createAuditWrites(db);
  const nonces = createNonceWrites(db);
  return {
    admitTriggerRun: admission.admit,
    moveJob: jobs.move,
    appendJobLogs: jobs.appendLogs,
    failOverdueJobs: jobs.failOverdue,
    failOpenJobsOfAgent: jobs.failOpenOfAgent,
    insertAuditEntries: audit.insertMany,
    rememberNonce: nonces.remember,
  };
}

export type WriteOps = ReturnType<typeof createWriteOps>;
export type WriteOpName = keyof WriteOps;
export type WriteArg<K extends WriteOpName> = Parameters<WriteOps[K]>[0];
export type WriteResult<K extends WriteOpName> = ReturnType<WriteOps[K]>;
