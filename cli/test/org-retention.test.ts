import { describe, expect, it } from 'vitest';
import { describeRetention, retentionChange } from '../src/commands/org-command.js';

const DEFAULTS = { jobsDays: 90, failedJobsDays: 180, auditDays: 365, occurrencesDays: 30 };

describe('drover org retention', () => {
  it('reads each value option as whole days, `default` as null, anything else refused naming the option', () => {
    expect(retentionChange({})).toBeNull();
    expect(retentionChange({ json: true })).toBeNull();
    expect(retentionChange({ jobsDays: '30', auditDays: 'default', occurrencesDays: ' 7 ' })).toEqual({
      jobsDays: 30,
      auditDays: null,
      occurrencesDays: 7,
    });
    for (const bad of ['2.5', '-1', 'forever', '', '1e3']) {
      expect(() => retentionChange({ failedJobsDays: bad })).toThrow(
        `--failed-jobs-days: expected a whole number of days or \`default\`, got \`${bad}\``,
      );
    }
  });

  it('prints the last sweep: when, what it deleted by kind, how long, its longest batch', () => {
    const now = Date.parse('2026-11-29T10:05:00.000Z');
    const text = describeRetention(
      {
        retention: { ...DEFAULTS, jobsDays: 30 },
        overrides: { jobsDays: 30, failedJobsDays: null, auditDays: null, occurrencesDays: null },
        defaults: DEFAULTS,
        database: { engine: 'postgres', bytes: 52_428_800, freeBytes: null },
        lastSweep: {
          startedAt: '2026-11-29T10:00:00.000Z',
          deleted: { jobs: 1200, logLines: 36_000, auditEntries: 0, occurrences: 14, batches: 3, rolloutEvents: 0 },
          durationMs: 812.4,
          longestBatchMs: 21.63,
          batches: 41,
        },
      },
      now,
    );
    expect(text).toBe(
      [
        'KEPT              FOR       SET BY',
        'ended jobs        30 days   organization (coordinator default 90 days)',
        'failed jobs       180 days  coordinator default',
        'audit entries     365 days  coordinator default',
        'cron occurrences  30 days   coordinator default',
        '',
        'Database:    PostgreSQL, 52.4 MB on disk',
        'Last sweep:  2026-11-29 10:00:00Z (5m ago)',
        'Deleted:     37217 rows: 1200 jobs, 36000 log lines, 14 cron occurrences, 3 batches',
        'Took:        812 ms in 41 batches, the longest 22 ms',
        '',
      ].join('\n'),
    );
  });
});
