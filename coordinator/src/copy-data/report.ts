import path from 'node:path';
import type { CopyDataConfig } from '../config/copy-data-config.js';
import type { TableCopy } from '../db/copy/copy-database.js';
import type { BlobCopyResult } from '../storage/copy-blobs.js';
import type { DataDirKey } from './data-dir-keys.js';

/** What a copy did: the tables, the files, the keys, and how long each part took. */
export interface CopyDataReport {
  tables: TableCopy[];
  /** null without `--files-to`. */
  blobs: BlobCopyResult | null;
  /** The data directory's files that stayed there (without `--files-to`). */
  filesLeft: number;
  keys: DataDirKey[];
  /** How long the files, the database and the whole command took. */
  seconds: { files: number; database: number; total: number };
}

/** What the command prints once the copy is committed. */
export function reportLines(config: CopyDataConfig, report: CopyDataReport): string[] {
  const rows = report.tables.reduce((sum, t) => sum + t.rows, 0);
  const lines = [
    `copied ${report.tables.length} tables, ${rows} rows, into ${config.to.redactedUrl} in one transaction (${report.seconds.database.toFixed(1)} s); each table's row count matches the data directory's:`,
    ...report.tables.map((t) => `  ${t.table.padEnd(20)} ${t.rows}`),
  ];
  for (const t of report.tables) {
    for (const [column, n] of t.nulReplaced) {
      lines.push(
        `  warning: ${t.table}.${column}: ${n} value${n === 1 ? '' : 's'} held a NUL character (U+0000), which PostgreSQL cannot store: copied with U+FFFD in its place`,
      );
    }
  }
  if (report.blobs && config.filesTo) {
    const { copied, bytes, absent, anomalies } = report.blobs;
    lines.push(
      `copied ${copied} files (${formatBytes(bytes)}) into s3://${config.filesTo.bucket}/${config.filesTo.prefix} (${report.seconds.files.toFixed(1)} s), each object's size checked` +
        (absent > 0 ? `; ${absent} pending or being deleted had no blob, and need none` : ''),
      ...anomalies.map((a) => `  warning: file ${a.fileId}: ${a.problem} (copied as it was)`),
    );
  } else if (report.filesLeft > 0) {
    lines.push(
      `${report.filesLeft} files stay in ${path.join(config.dataDir, 'blobs')}: start the coordinator on this data directory, or copy them into a bucket (docs/scaling.md)`,
    );
  }
  if (report.keys.length > 0) {
    lines.push(
      `stored ${report.keys.map((k) => `${path.basename(k.file)} as ${k.name}`).join(' and ')} in the database's server_secrets`,
    );
  }
  lines.push(nextStep(config, report), `done in ${report.seconds.total.toFixed(1)} s`);
  return lines;
}

/** What to start: the coordinators read the server's keys from the database, the files decide where. */
function nextStep(config: CopyDataConfig, report: CopyDataReport): string {
  if (!config.filesTo && report.filesLeft > 0) {
    return `next: start the coordinator with DROVER_DATABASE_URL on ${config.dataDir}, which holds the files; it reads the server's keys from the database (docs/scaling.md, "Moving a coordinator")`;
  }
  return `next: start the coordinators with DROVER_DATABASE_URL${config.filesTo ? ' and DROVER_STORAGE_URL' : ''}, each on a data directory of its own (${config.dataDir} may be one); they read the server's keys from the database (docs/scaling.md, "Several coordinators")`;
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}
