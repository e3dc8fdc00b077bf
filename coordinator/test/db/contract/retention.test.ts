import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { AuditEntryInput } from '../../../src/domain/model/audit.js';
import { RetentionService } from '../../../src/domain/retention/retention-service.js';
import { DEFAULT_RETENTION } from '../../../src/domain/retention/retention-settings.js';
import { noMetrics } from '../../../src/domain/metrics.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { insertJob, orgWithAgent } from './fixture.js';

const DAY = 86_400_000;
/** The clock the sweep reads: moved forward by each test. */
const START = Date.UTC(2030, 0, 1, 0, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const databases = databasesOfThisFile();

describe.each(DATABASES)('retention (%s)', (kind) => {
  const t = databases.use(kind);
  let now: number;
  let owner: { orgId: string; agentId: string; userId: string };
  let service: RetentionService;
  const logged: string[] = [];
  const errors: { orgId: string; field: string; msg: string }[] = [];

  beforeEach(async () => {
    now = START;
    owner = await orgWithAgent(t.repos, iso(START));
    logged.length = 0;
    service = new RetentionService(deps());
  });

  const deps = () => ({
    repo: t.repos.retention,
    defaults: DEFAULT_RETENTION,
    clock: { now: () => now },
    audit: {
      record: async (entry: Omit<AuditEntryInput, 'createdAt'>) =>
        t.repos.audit.insertMany([{ ...entry, createdAt: iso(now) }]),
    },
    logger: {
      info: (_obj: object, msg: string) => logged.push(msg),
      error: (obj: object, msg: string) => errors.push({ ...(obj as { orgId: string; field: string }), msg }),
    },
    metrics: noMetrics,
    sweepSeconds: 600,
  });

  /** A job of the organization that ended `daysAgo` (from START) as `status`, with `lines` log lines. */
  const endedJob = async (status: string, endedAt: number, lines = 2, org = owner) => {
    const job = await insertJob(t, org, { createdAt: iso(endedAt - 60_000), timeoutMs: null });
    if (lines > 0) {
      const logLines = Array.from({ length: lines }, (_, i) => ({
        seq: i + 1,
        at: iso(endedAt),
        stream: 'stdout' as const,
        text: `line ${i + 1}`,
      }));
      const cap = {
        maxBytes: 1 << 20,
        headBytes: 1 << 18,
        maxLines: 1 << 16,
        headLines: 1 << 14,
        gapText: () => 'gap',
      };
      await t.repos.jobs.appendLogs(org.agentId, job.id, logLines, cap);
    }
    await t.exec(`UPDATE jobs SET status = '${status}', finished_at = '${iso(endedAt)}' WHERE id = '${job.id}'`);
    return job.id;
  };
  const jobIds = async () => (await t.rows<{ id: string }>('SELECT id FROM jobs')).map((r) => r.id).sort();
  const count = async (table: string) =>
    Number((await t.rows<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);

  it('deletes ended jobs with their log lines past 90 days, failed ones past 180, and keeps the rest', async () => {
    const oldSuccess = await endedJob('success', START - 100 * DAY);
    const oldCancelled = await endedJob('cancelled', START - 91 * DAY);
    const recentSuccess = await endedJob('success', START - 89 * DAY);
    const oldFailed = await endedJob('failed', START - 100 * DAY);
    const veryOldTimedOut = await endedJob('timed_out', START - 181 * DAY);
    const open = await insertJob(t, owner, { createdAt: iso(START - 200 * DAY), timeoutMs: null });
    // The organization's newest job: it stays whatever its age (the next job's number follows it).
    const newest = await endedJob('success', START - 120 * DAY);

    const report = await service.sweep();

    expect(await jobIds()).toEqual([recentSuccess, oldFailed, open.id, newest].sort());
    expect(report.deleted).toMatchObject({ jobs: 3, logLines: 6 });
    for (const id of [oldSuccess, oldCancelled, veryOldTimedOut]) {
      expect(await t.rows(`SELECT job_id FROM job_logs WHERE job_id = '${id}'`)).toEqual([]);
      expect(await t.rows(`SELECT job_id FROM job_log_usage WHERE job_id = '${id}'`)).toEqual([]);
    }
    expect(await count('job_logs')).toBe(6);
    expect(logged).toEqual([expect.stringContaining('retention sweep deleted 9 rows')]);

    // A day later nothing more is due; 81 days later the failed job is.
    now = START + DAY;
    expect((await service.sweep()).deleted.jobs).toBe(0);
    expect(logged).toHaveLength(1);
    now = START + 81 * DAY;
    await service.sweep();
    expect(await jobIds()).toEqual([open.id, newest].sort());
  });

  it("applies an organization's overrides, lowered ones to existing data at the next sweep, and not to another organization", async () => {
    const other = await orgWithAgent(t.repos, iso(START));
    const mine = await endedJob('success', START - 20 * DAY);
    const theirs = await endedJob('success', START - 20 * DAY, 0, other);
    await endedJob('success', START - DAY); // newest of mine
    await endedJob('success', START - DAY, 0, other); // newest of theirs
    await service.sweep();
    expect(await jobIds()).toContain(mine);

    const effective = await service.update(owner.orgId, owner.userId, { jobsDays: 10, failedJobsDays: 30 });
    expect(effective).toEqual({ ...DEFAULT_RETENTION, jobsDays: 10, failedJobsDays: 30 });
    await service.sweep();
    const left = await jobIds();
    expect(left).not.toContain(mine);
    expect(left).toContain(theirs);

    // Back to the coordinator's setting; the view tells both.
    await service.update(owner.orgId, owner.userId, { jobsDays: null });
    const view = await service.view(owner.orgId);
    expect(view.retention).toEqual({ ...DEFAULT_RETENTION, failedJobsDays: 30 });
    expect(view.overrides).toEqual({ jobsDays: null, failedJobsDays: 30, auditDays: null, occurrencesDays: null });
    expect(view.database.engine).toBe(kind);
    expect(view.database.bytes).toBeGreaterThan(0);
    expect(view.lastSweep?.deleted.jobs).toBe(1);
    // Another organization's view tells only its own rows.
    expect((await service.view(other.orgId)).lastSweep?.deleted.jobs).toBe(0);
    const audit = await t.rows<{ action: string }>(`SELECT action FROM audit_log WHERE org_id = '${owner.orgId}'`);
    expect(audit.map((a) => a.action)).toEqual(['org.retention.update', 'org.retention.update']);
  });

  it("sweeps every other organization when one's stored setting is not a number of days (a damaged database), naming it", async () => {
    // Both organizations' jobs are due; the damaged one is swept first (by id) when it comes first.
    const other = await orgWithAgent(t.repos, iso(START));
    const [damaged, sound] = [owner, other].sort((a, b) => (a.orgId < b.orgId ? -1 : 1));
    const kept = await endedJob('success', START - 100 * DAY, 0, damaged!);
    await endedJob('success', START - DAY, 0, damaged!); // its newest
    const due = await endedJob('success', START - 100 * DAY, 0, sound!);
    await endedJob('success', START - DAY, 0, sound!); // its newest
    // Only a SQLite file holds text in an integer column; either database one out of range.
    for (const value of kind === 'sqlite' ? ["'forever'", '1000000000'] : ['1000000000']) {
      await t.exec(`UPDATE orgs SET retention_failed_jobs_days = ${value} WHERE id = '${damaged!.orgId}'`);
      errors.length = 0;
      await service.sweep();
      expect(await jobIds()).toContain(kept);
      expect(await jobIds()).not.toContain(due);
      expect(errors).toEqual([
        {
          orgId: damaged!.orgId,
          field: 'failedJobsDays',
          msg: "retention: an organization's stored setting is not a whole number of days; its data is not swept",
        },
      ]);
    }
  });

  it('keeps both of two changes of different fields made at once (two owners, two coordinators)', async () => {
    for (let i = 0; i < 5; i++) {
      await service.update(owner.orgId, owner.userId, { jobsDays: null, auditDays: null });
      // A second service: the other coordinator's, on the same database.
      await Promise.all([
        service.update(owner.orgId, owner.userId, { jobsDays: 30 }),
        new RetentionService(deps()).update(owner.orgId, owner.userId, { auditDays: 730 }),
      ]);
      expect((await service.view(owner.orgId)).overrides).toEqual({
        jobsDays: 30,
        failedJobsDays: null,
        auditDays: 730,
        occurrencesDays: null,
      });
    }
    expect(await service.update(newId(), owner.userId, { jobsDays: 30 }).catch((e: unknown) => e)).toMatchObject({
      statusCode: 404,
    });
  });

  it('refuses values that are not whole days from 1 to 3650, naming the field, and changes nothing', async () => {
    for (const [field, value] of [
      ['jobsDays', 0],
      ['failedJobsDays', -1],
      ['auditDays', 1.5],
      ['occurrencesDays', 3651],
      ['jobsDays', '30'],
      ['keepForever', 1],
    ] as const) {
      await expect(service.update(owner.orgId, owner.userId, { [field]: value })).rejects.toMatchObject({
        statusCode: 422,
        details: [{ path: `body.retention.${field}` }],
      });
    }
    expect((await service.view(owner.orgId)).overrides).toEqual({
      jobsDays: null,
      failedJobsDays: null,
      auditDays: null,
      occurrencesDays: null,
    });
  });

  it('deletes audit entries past 365 days (the newest stays), cron occurrences past 30 (each trigger keeps its newest)', async () => {
    const entry = (orgId: string | null, at: number, action: 'org.create' | 'member.add') => ({
      orgId,
      actorType: 'system' as const,
      actorId: null,
      action,
      targetType: null,
      targetId: null,
      metadata: {},
      createdAt: iso(at),
    });
    await t.repos.audit.insertMany([
      entry(owner.orgId, START - 400 * DAY, 'org.create'),
      entry(null, START - 366 * DAY, 'org.create'),
      entry(owner.orgId, START - 300 * DAY, 'member.add'),
    ]);
    const [a, b] = [newId(), newId()];
    const skipped = (triggerId: string, daysAgo: number) => ({
      triggerId,
      orgId: owner.orgId,
      scheduledAt: iso(START - daysAgo * DAY),
      reason: 'overlap' as const,
      firstScheduledAt: null,
      recordedAt: iso(START - daysAgo * DAY),
    });
    await t.repos.cronOccurrences.recordSkipped([
      skipped(a, 40),
      skipped(a, 35),
      skipped(a, 5),
      skipped(b, 60),
      skipped(b, 50),
    ]);

    const report = await service.sweep();
    expect(report.deleted).toMatchObject({ auditEntries: 2, occurrences: 3 });
    expect((await t.rows<{ action: string }>('SELECT action FROM audit_log')).map((r) => r.action)).toEqual([
      'member.add',
    ]);
    const left = await t.rows<{ trigger_id: string }>('SELECT trigger_id FROM cron_occurrences ORDER BY trigger_id');
    expect(left.map((r) => r.trigger_id).sort()).toEqual([a, b].sort());
    expect(await t.repos.cronOccurrences.latestScheduledAt(b)).toBe(iso(START - 50 * DAY));
  });

  it('deletes a batch once its jobs are gone, keeping the newest batch, and no job of a batch still open', async () => {
    const batch = (id: string, number: number, endedAt: number | null, createdAt = START - 100 * DAY) =>
      t.exec(
        `INSERT INTO batches (id, org_id, number, trigger_id, workflow_name, selector, source, job_count, created_at, ended_at)
         VALUES ('${id}', '${owner.orgId}', ${number}, 't', 'deploy', 'role=gateway', 'webhook', 2, '${iso(createdAt)}',
           ${endedAt === null ? 'NULL' : `'${iso(endedAt)}'`})`,
      );
    const [gone, withFailedJob, open, newest] = [newId(), newId(), newId(), newId()];
    await batch(gone, 1, START - 100 * DAY);
    await batch(withFailedJob, 2, START - 100 * DAY);
    // Open for 100 days (a job waits for its agent): its ended job stays, its counts and message come from it.
    await batch(open, 3, null, START - 101 * DAY);
    await batch(newest, 4, START - 100 * DAY);
    const failed = await endedJob('failed', START - 100 * DAY);
    await t.exec(`UPDATE jobs SET batch_id = '${withFailedJob}' WHERE id = '${failed}'`);
    const ofOpen = await endedJob('success', START - 100 * DAY);
    await t.exec(`UPDATE jobs SET batch_id = '${open}' WHERE id = '${ofOpen}'`);
    await endedJob('success', START); // the newest job

    await service.sweep();
    const left = (await t.rows<{ id: string }>('SELECT id FROM batches')).map((r) => r.id).sort();
    expect(left).toEqual([withFailedJob, open, newest].sort());
    expect(await jobIds()).toContain(ofOpen);
  });

  it('sweeps by itself once started, then at every interval, and stops', async () => {
    const old = await endedJob('success', START - 100 * DAY);
    await endedJob('success', START);
    const timed = new RetentionService({ ...deps(), sweepSeconds: 0.05 });
    timed.start();
    try {
      await vi.waitFor(async () => expect(await jobIds()).not.toContain(old), { timeout: 5000, interval: 20 });
      const again = await endedJob('cancelled', START - 100 * DAY);
      await endedJob('success', START);
      await vi.waitFor(async () => expect(await jobIds()).not.toContain(again), { timeout: 5000, interval: 20 });
    } finally {
      await timed.stop();
    }
  });

  it('deletes in batches that each hold the database briefly, the rate-limit refusals with their jobs', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 250; i++) ids.push(await endedJob('rejected', START - 100 * DAY - i * 1000, 1));
    // A log longer than a batch goes over several, before its job.
    const long = await endedJob('failed', START - 200 * DAY, 450);
    await t.exec(
      `INSERT INTO rate_limit_blocks (org_id, workflow_id, job_id, "window", limit_value, observed, created_at)
       VALUES ('${owner.orgId}', 'w', '${ids[0]}', 'minute', 1, 2, '${iso(START - 100 * DAY)}')`,
    );
    await endedJob('success', START);
    const report = await service.sweep();
    expect(report.deleted).toMatchObject({ jobs: 251, logLines: 700 });
    expect(report.batches).toBeGreaterThan(4);
    expect(await jobIds()).not.toContain(long);
    expect(await count('rate_limit_blocks')).toBe(0);
    expect(await count('jobs')).toBe(1);
  });

  it('counts the log lines it deleted, not those the usage said when another sweep took some first', async () => {
    const job = await endedJob('success', START - 100 * DAY, 5);
    // What another coordinator's sweep leaves between this one's read of the usage and its delete.
    await t.exec(`DELETE FROM job_logs WHERE job_id = '${job}' AND seq <= 3`);
    await endedJob('success', START, 0);
    const report = await service.sweep();
    expect(report.deleted).toMatchObject({ jobs: 1, logLines: 2 });
    expect(await count('job_logs')).toBe(0);
  });
});
