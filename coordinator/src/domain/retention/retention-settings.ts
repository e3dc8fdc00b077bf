import { invalid } from '../../errors.js';
import type { Retention, RetentionOverrides } from '../model/retention.js';

export type { Retention, RetentionOverrides } from '../model/retention.js';

export const RETENTION_FIELDS = ['jobsDays', 'failedJobsDays', 'auditDays', 'occurrencesDays'] as const;

/** The coordinator's settings when the environment sets none. */
export const DEFAULT_RETENTION: Readonly<Retention> = Object.freeze({
  jobsDays: 90,
  failedJobsDays: 180,
  auditDays: 365,
  occurrencesDays: 30,
});

/** Every value is a whole number of days in this range. */
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 3650;

/** The environment variable of each coordinator setting. */
export const RETENTION_ENV: Readonly<Record<keyof Retention, string>> = Object.freeze({
  jobsDays: 'DROVER_RETENTION_JOBS_DAYS',
  failedJobsDays: 'DROVER_RETENTION_FAILED_JOBS_DAYS',
  auditDays: 'DROVER_RETENTION_AUDIT_DAYS',
  occurrencesDays: 'DROVER_RETENTION_OCCURRENCES_DAYS',
});

export const NO_OVERRIDES: Readonly<RetentionOverrides> = Object.freeze({
  jobsDays: null,
  failedJobsDays: null,
  auditDays: null,
  occurrencesDays: null,
});

/** What applies: the organization's value where it has one, the coordinator's otherwise. */
export function effectiveRetention(defaults: Retention, overrides: RetentionOverrides): Retention {
  return {
    jobsDays: overrides.jobsDays ?? defaults.jobsDays,
    failedJobsDays: overrides.failedJobsDays ?? defaults.failedJobsDays,
    auditDays: overrides.auditDays ?? defaults.auditDays,
    occurrencesDays: overrides.occurrencesDays ?? defaults.occurrencesDays,
  };
}

/** Whether `value` is a whole number of days in range. */
export function isRetentionDays(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= MIN_RETENTION_DAYS && (value as number) <= MAX_RETENTION_DAYS;
}

/**
 * An owner's change (`PATCH /orgs/:orgId {retention}`): the fields given, each to replace the
 * organization's value (null returns one to the coordinator's setting). 422 naming the field for
 * anything but a whole number of days from 1 to 3650 or null, or a field that is not one of them.
 */
export function retentionChange(change: Record<string, unknown>): Partial<RetentionOverrides> {
  const fields: Partial<RetentionOverrides> = {};
  for (const [field, value] of Object.entries(change)) {
    const path = `body.retention.${field}`;
    if (!(RETENTION_FIELDS as readonly string[]).includes(field)) {
      throw invalid(path, `expected one of ${RETENTION_FIELDS.join(', ')}`);
    }
    if (value !== null && !isRetentionDays(value)) {
      throw invalid(
        path,
        `expected a whole number of days from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}, or null for the coordinator's setting; got ${JSON.stringify(value)}`,
      );
    }
    fields[field as keyof Retention] = value as number | null;
  }
  return fields;
}

/** The instant before which a row of this age is past its retention. */
export function retentionCutoff(nowMs: number, days: number): string {
  return new Date(nowMs - days * 86_400_000).toISOString();
}
