import { ROLES } from '../../../domain/model/orgs.js';
import {
  DEFAULT_RETENTION,
  MAX_RETENTION_DAYS,
  MIN_RETENTION_DAYS,
  RETENTION_FIELDS,
} from '../../../domain/retention/retention-settings.js';
import { timestamp, uuid } from '../../schemas/common.js';
import { orgExample } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';

/** An organization's retention (docs/operations.md, "Retention"): the org view's, the settings page's. */

const DESCRIPTIONS = {
  jobsDays: 'days an ended job (success, cancelled, rejected) is kept after its end, with its log lines',
  failedJobsDays: 'days a failed or timed-out job is kept after its end, with its log lines',
  auditDays: 'days an audit entry is kept (and the history of a rollout that ended)',
  occurrencesDays: "days a cron trigger's occurrence is kept (its newest always stays)",
} as const;

const days = (field: keyof typeof DESCRIPTIONS) => ({ type: 'integer', description: DESCRIPTIONS[field] }) as const;

const retention = {
  type: 'object',
  description: 'Whole days, each from 1 to 3650',
  examples: [{ ...DEFAULT_RETENTION }],
  required: [...RETENTION_FIELDS],
  properties: {
    jobsDays: days('jobsDays'),
    failedJobsDays: days('failedJobsDays'),
    auditDays: days('auditDays'),
    occurrencesDays: days('occurrencesDays'),
  },
} as const;

const override = (field: keyof typeof DESCRIPTIONS) =>
  ({ type: ['integer', 'null'], description: `${DESCRIPTIONS[field]}; null: the coordinator's setting` }) as const;

const OVERRIDE_PROPERTIES = {
  jobsDays: override('jobsDays'),
  failedJobsDays: override('failedJobsDays'),
  auditDays: override('auditDays'),
  occurrencesDays: override('occurrencesDays'),
} as const;

/** The organization with the caller's role and the retention that applies to it. */
export const OrgViewSchema = named('OrgView', {
  type: 'object',
  examples: [{ ...orgExample, retention: { ...DEFAULT_RETENTION } }],
  required: ['id', 'name', 'role', 'createdAt', 'retention'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    role: { type: 'string', enum: ROLES },
    createdAt: timestamp,
    retention,
  },
} as const);

export interface OrgPatchBody {
  retention: Record<string, unknown>;
}

/** `PATCH /orgs/:orgId`: the fields given change; the domain checks each value (a 422 names the field). */
export const OrgPatchBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['retention'],
  examples: [{ retention: { jobsDays: 30, failedJobsDays: null } }],
  properties: {
    retention: {
      type: 'object',
      description: `Whole days from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}, or null to return a value to the coordinator's setting; fields left out are unchanged`,
      // Numbers of any kind reach the domain, whose message says what was expected and what came.
      additionalProperties: false,
      properties: Object.fromEntries(
        RETENTION_FIELDS.map((field) => [field, { type: ['number', 'null'], description: DESCRIPTIONS[field] }]),
      ),
    },
  },
} as const;

const deleted = {
  type: 'object',
  required: ['jobs', 'logLines', 'auditEntries', 'occurrences', 'batches', 'rolloutEvents'],
  properties: {
    jobs: { type: 'integer' },
    logLines: { type: 'integer' },
    auditEntries: { type: 'integer' },
    occurrences: { type: 'integer' },
    batches: { type: 'integer' },
    rolloutEvents: { type: 'integer' },
  },
} as const;

export const RetentionViewSchema = named('RetentionView', {
  type: 'object',
  examples: [
    {
      retention: { ...DEFAULT_RETENTION, jobsDays: 30 },
      overrides: { jobsDays: 30, failedJobsDays: null, auditDays: null, occurrencesDays: null },
      defaults: { ...DEFAULT_RETENTION },
      database: { engine: 'sqlite', bytes: 52_428_800, freeBytes: 1_048_576 },
      lastSweep: null,
    },
  ],
  required: ['retention', 'overrides', 'defaults', 'database', 'lastSweep'],
  properties: {
    retention,
    overrides: {
      type: 'object',
      description: "The organization's own values; null: the coordinator's setting applies",
      required: [...RETENTION_FIELDS],
      properties: OVERRIDE_PROPERTIES,
    },
    defaults: retention,
    database: {
      type: 'object',
      required: ['engine', 'bytes', 'freeBytes'],
      properties: {
        engine: { type: 'string', enum: ['sqlite', 'postgres'] },
        bytes: { type: 'integer', description: "the database's size on disk" },
        freeBytes: {
          type: ['integer', 'null'],
          description: 'SQLite: free pages inside the file, which VACUUM would return to the disk; null on PostgreSQL',
        },
      },
    },
    lastSweep: {
      type: ['object', 'null'],
      description:
        "The last retention sweep of the coordinator that answered, since it started (`deleted`: this organization's rows; the times and batches: the whole sweep's); null before its first",
      required: ['startedAt', 'deleted', 'durationMs', 'longestBatchMs', 'batches'],
      properties: {
        startedAt: timestamp,
        deleted,
        durationMs: { type: 'number' },
        longestBatchMs: { type: 'number', description: 'the longest a deleting batch held the database' },
        batches: { type: 'integer' },
      },
    },
  },
} as const);
