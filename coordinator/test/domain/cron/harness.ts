import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowDefinition } from '@drover/shared';
import { createCoordinator, type Coordinator } from '../../../src/coordinator.js';
import { loadConfig } from '../../../src/config/config.js';
import { withHashedBootstrap } from '../../bootstrap-hash.js';
import { createLogger } from '../../../src/logger.js';
import type { Timers } from '../../../src/domain/cron/scheduler.js';
import type { UserActor } from '../../../src/domain/audit/audit-log.js';
import type { TriggerInput } from '../../../src/domain/triggers/triggers.js';
import type { Clock } from '../../../src/util/clock.js';
import { enrollAgent } from '../../db/fixture.js';
import { postgresTestSql, sqliteTestSql, type TestSql } from '../../db/test-sql.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * A clock and a timer source moved by hand: `advanceTo` runs every timer due on the way, in
 * order, each at its own instant, and waits for the schedulers to finish what it started.
 */
export class ManualTime implements Clock, Timers {
  private at: number;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private ids = 0;
  readonly schedulers: { idle(): Promise<void> }[] = [];

  constructor(start: string) {
    this.at = Date.parse(start);
  }

  now(): number {
    return this.at;
  }

  set(fn: () => void, ms: number): unknown {
    const id = ++this.ids;
    this.timers.set(id, { at: this.at + ms, fn });
    return id;
  }

  clear(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  async advanceTo(iso: string): Promise<void> {
    const target = Date.parse(iso);
    for (;;) {
      await this.settle();
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (!next || entry[1].at < next[1].at) next = entry;
      if (!next || next[1].at > target) break;
      this.timers.delete(next[0]);
      this.at = Math.max(this.at, next[1].at);
      next[1].fn();
    }
    this.at = Math.max(this.at, target);
    await this.settle();
  }

  /**
   * Steps the wall clock (an NTP correction) while the coordinator runs: its timers, which wait
   * for an amount of time and not for an instant, keep what is left of their wait.
   */
  async stepTo(iso: string): Promise<void> {
    const delta = Date.parse(iso) - this.at;
    this.at += delta;
    for (const timer of this.timers.values()) timer.at += delta;
    await this.settle();
  }

  /** Jumps without running timers (the coordinator was down meanwhile). */
  jumpTo(iso: string): void {
    this.at = Date.parse(iso);
    this.timers.clear();
  }

  private async settle(): Promise<void> {
    for (const scheduler of this.schedulers) await scheduler.idle();
  }
}

export const WORKFLOW: WorkflowDefinition = {
  name: 'nightly',
  description: null,
  version: null,
  paramsSchema: [
    { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
    { name: 'replicas', type: 'number', default: 2 },
  ],
  secretsKeys: [],
  timeout: 600_000,
  steps: [{ run: 'true' }],
};

export interface CronWorld {
  coordinator: Coordinator;
  dataDir: string;
  actor: UserActor;
  agentId: string;
  /** Creates a cron trigger for the workflow `nightly` (params `{env: 'staging'}` unless told). */
  cron(fields: TriggerInput): Promise<string>;
  jobs(
    triggerId: string,
  ): Promise<{ id: string; status: string; source: string; params: string; error_message: string | null }[]>;
  occurrences(triggerId: string): Promise<
    {
      scheduled_at: string;
      outcome: string;
      job_id: string | null;
      reason: string | null;
      first_scheduled_at: string | null;
    }[]
  >;
  /** Its database, past the repositories (test-sql.ts). */
  sql: TestSql;
  /** The messages of the warnings and errors it logged (JSON lines, their `msg`). */
  warnings: string[];
  /** The errors it logged, whole (JSON lines). */
  errors: Record<string, unknown>[];
  close(): Promise<void>;
}

export const OWNER = 'owner@example.test';

/**
 * The PostgreSQL database of each data directory, in the PostgreSQL pass
 * (`DROVER_TEST_DATABASE=postgres`, vitest.postgres.config.ts): a world started again on a data
 * directory finds the database of the one before.
 */
export const onPostgres = process.env.DROVER_TEST_DATABASE === 'postgres';
const databases = new Map<string, TestDatabase>();

/** Removes a world's data directory and drops its PostgreSQL database, once no world runs on them. */
export async function removeWorldData(dataDir: string): Promise<void> {
  fs.rmSync(dataDir, { recursive: true, force: true });
  const database = databases.get(dataDir);
  databases.delete(dataDir);
  await database?.drop();
}

/**
 * A real coordinator (SQLite file in `dataDir`, or in the PostgreSQL pass the data directory's
 * own PostgreSQL database) on the manual time, with an agent reporting `nightly`.
 */
export async function startCronWorld(time: ManualTime, dataDir?: string): Promise<CronWorld> {
  const dir = dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cron-'));
  let database: TestDatabase | undefined;
  if (onPostgres) {
    database = databases.get(dir) ?? (await freshPostgresDatabase({ migrated: true }));
    databases.set(dir, database);
  }
  const config = await withHashedBootstrap(
    loadConfig(
      {
        DROVER_BOOTSTRAP_EMAIL: OWNER,
        DROVER_BOOTSTRAP_PASSWORD: 'correct horse battery',
        DROVER_BOOTSTRAP_ORG: 'acme',
        ...(database ? { DROVER_DATABASE_URL: database.url } : {}),
      },
      { port: '0', host: '127.0.0.1', dataDir: dir, logLevel: process.env.DROVER_TEST_LOG ?? 'warn' },
    ),
  );
  const warnings: string[] = [];
  const errors: Record<string, unknown>[] = [];
  const logger = createLogger(config.logLevel, {
    destination: {
      write(line: string) {
        const record = JSON.parse(line) as { level: number; msg: string };
        if (record.level >= 40) warnings.push(record.msg);
        if (record.level >= 50) errors.push(record);
        if (process.env.DROVER_TEST_LOG) process.stdout.write(line);
      },
    },
  });
  const coordinator = await createCoordinator(config, logger, time, time);
  time.schedulers.push(coordinator.scheduler);
  const { repos } = coordinator.ctx;
  const user = await repos.users.findByEmail(OWNER);
  const orgs = await repos.orgs.listForUser(user!.id);
  const actor: UserActor = { orgId: orgs[0]!.id, userId: user!.id };
  const sql = database ? postgresTestSql(database.url) : sqliteTestSql(() => coordinator.db);
  let agentId = (await sql.get<{ id: string }>('SELECT id FROM agents LIMIT 1'))?.id;
  if (!agentId) {
    agentId = await enrollAgent(repos, actor.orgId, new Date(time.now()).toISOString());
    await repos.workflows.replaceForAgent(actor.orgId, agentId, [WORKFLOW], new Date(time.now()).toISOString());
  }
  const agent = agentId;
  return {
    coordinator,
    dataDir: dir,
    actor,
    agentId: agent,
    async cron(fields) {
      const trigger = await coordinator.ctx.triggers.create(actor, {
        name: 'nightly',
        type: 'cron',
        agentId: agent,
        scopeType: 'workflow',
        workflowName: 'nightly',
        responseMode: 'async',
        params: { env: 'staging' },
        ...fields,
      });
      await coordinator.scheduler.idle();
      return trigger.id;
    },
    jobs: (triggerId) =>
      sql.all(
        'SELECT id, status, source, params, error_message FROM jobs WHERE trigger_id = ? ORDER BY seq',
        triggerId,
      ),
    occurrences: (triggerId) =>
      sql.all(
        `SELECT scheduled_at, outcome, job_id, reason, first_scheduled_at FROM cron_occurrences
         WHERE trigger_id = ? ORDER BY scheduled_at`,
        triggerId,
      ),
    sql,
    warnings,
    errors,
    async close() {
      time.schedulers.splice(time.schedulers.indexOf(coordinator.scheduler), 1);
      await sql.close();
      await coordinator.close();
    },
  };
}
