/**
 * What a coordinator does with the migrations a database records, on SQLite and on PostgreSQL
 * alike (docs/scaling.md, "Upgrading several coordinators"): it applies those of its build the
 * database lacks, and it runs beside migrations it does not know (applied by a newer
 * drover-coordinator) unless one of them is a breaking change, which it refuses.
 */

/** The first line that marks a migration as breaking older coordinators, as graphile-worker's. */
export const BREAKING_MARKER = '--! breaking-change';

/** A migration of this build: `coordinator/migrations[/postgres]/NNNN_name.sql`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Whether coordinators of earlier versions must not run on the schema it leaves: the file's
   * first line is `--! breaking-change` (docs/scaling.md, "Breaking migrations").
   */
  breaking: boolean;
}

/** A row of `schema_migrations`: a migration applied to the database, by this build or another. */
export interface RecordedMigration {
  version: number;
  name: string;
  /** As the build that applied it marked it (or a later build that knew it: `remark`). */
  breaking: boolean;
}

export interface MigrationPlan {
  /** This build's migrations the database lacks, in order. */
  pending: Migration[];
  /** Migrations the database records that this build does not know; none of them is breaking. */
  newer: RecordedMigration[];
  /**
   * Versions this build marks breaking that the database records as not breaking (marked after
   * they were applied): recorded as breaking now, so that older builds refuse them too.
   */
  remark: number[];
  /** The database recorded no migration: a new one, where no older coordinator can be running. */
  fromEmpty: boolean;
}

export interface MigrationResult {
  applied: Migration[];
  /** Migrations of a newer drover-coordinator the database has (none breaking); this build runs beside them. */
  newer: RecordedMigration[];
  /** The database's version: the highest migration it records. */
  current: number;
  /** The database recorded no migration before (a new one): breaking or not, nothing ran on it. */
  fromEmpty: boolean;
}

/** `0021_job_log_cap`, as the migration's file is named. */
export const migrationLabel = (m: { version: number; name: string }): string =>
  `${String(m.version).padStart(4, '0')}_${m.name}`;

/** Refused: the database has a breaking migration this build does not know. */
export class NewerSchemaError extends Error {
  constructor(readonly breaking: RecordedMigration[]) {
    const which = breaking.map(migrationLabel).join(', ');
    super(
      `the database has ${breaking.length === 1 ? 'migration' : 'migrations'} ${which} of a newer ` +
        `drover-coordinator, a breaking change this one does not know: upgrade this drover-coordinator`,
    );
    this.name = 'NewerSchemaError';
  }
}

/**
 * The plan for a database that records `recorded`, given this build's `migrations`; throws
 * NewerSchemaError when a migration it does not know is breaking, before anything is applied.
 */
export function planMigrations(
  recorded: readonly RecordedMigration[],
  migrations: readonly Migration[],
): MigrationPlan {
  const known = new Map(migrations.map((m) => [m.version, m]));
  const done = new Set(recorded.map((r) => r.version));
  const unknown = recorded.filter((r) => !known.has(r.version)).sort((a, b) => a.version - b.version);
  const breaking = unknown.filter((r) => r.breaking);
  if (breaking.length > 0) throw new NewerSchemaError(breaking);
  return {
    pending: migrations.filter((m) => !done.has(m.version)),
    newer: unknown,
    remark: recorded.filter((r) => !r.breaking && known.get(r.version)?.breaking === true).map((r) => r.version),
    fromEmpty: recorded.length === 0,
  };
}

/** The database's version once this build's migrations are applied: the highest it then records. */
export const versionAfter = (recorded: readonly RecordedMigration[], migrations: readonly Migration[]): number =>
  Math.max(0, ...recorded.map((r) => r.version), ...migrations.map((m) => m.version));

/** What a breaking migration means for the coordinators on the database, after its name. */
export const BREAKING_NOTE =
  'a breaking change: coordinators of earlier versions cannot run on this database once it is applied; ' +
  'stop any still running on it (docs/scaling.md, "Upgrading several coordinators")';

/** The line a coordinator logs before applying a breaking migration. */
export const applyingBreaking = (m: Migration): string => `applying ${migrationLabel(m)}, ${BREAKING_NOTE}`;

/** The line that says a coordinator runs on a database with migrations of a newer one. */
export const runningBeside = (newer: readonly RecordedMigration[]): string =>
  newer.length === 1
    ? `the database has migration ${migrationLabel(newer[0]!)} of a newer drover-coordinator, not a breaking ` +
      'change: this one runs on it, and should be upgraded'
    : `the database has migrations ${newer.map(migrationLabel).join(', ')} of a newer drover-coordinator, none ` +
      'of them a breaking change: this one runs on it, and should be upgraded';

/**
 * A migration file's text: its first line may be `--! breaking-change`; any other `--!` first
 * line is refused (a misspelt marker must not pass for a safe migration).
 */
export function isBreaking(file: string, sql: string): boolean {
  const first = sql.split('\n', 1)[0]!.trimEnd();
  if (!first.startsWith('--!')) return false;
  if (first === BREAKING_MARKER) return true;
  throw new Error(`${file}: unknown marker "${first}" on its first line (the one marker is "${BREAKING_MARKER}")`);
}
