import { localBlobs, type BackupConfig } from '../config/backup-config.js';
import { formatBytes } from '../copy-data/report.js';
import type { BackupReport } from './backup.js';

/** What `drover-coordinator backup` prints on stdout once the archive is in place. */
export function backupReportLines(config: BackupConfig, report: BackupReport): string[] {
  const parts: string[] = [];
  if (report.database) {
    parts.push(`the database (schema version ${report.database.schemaVersion}, ${formatBytes(report.database.bytes)})`);
  }
  parts.push(...report.keys);
  if (report.blobs === 'included') parts.push(`${report.files.copied} files (${formatBytes(report.files.bytes)})`);
  const last = parts.pop()!;
  const what = parts.length > 0 ? `${parts.join(', ')} and ${last}` : last;
  const lines = [`backed up ${what} to ${report.file} (${formatBytes(report.bytes)}, ${report.seconds.toFixed(1)} s)`];
  if (report.blobs === 'in the bucket' && config.storage.kind === 's3') {
    lines.push(
      `the files are in the bucket s3://${config.storage.bucket}/${config.storage.prefix}, not in this backup: back the bucket up with the store's own tools (versioning, replication)`,
    );
  }
  if (report.files.vanished > 0) {
    lines.push(
      `${report.files.vanished} files were deleted after the snapshot, before their blob was copied: restored, they are listed without content`,
    );
  }
  if (config.database.kind === 'postgres') {
    lines.push(`the database is not in this backup: back it up with pg_dump (${config.database.redactedUrl})`);
    if (config.storage.kind === 'disk') {
      lines.push(
        `the files are in ${localBlobs(config)}, not in this backup: back that directory up after the database (tar -C ${config.dataDir} -czf <file> blobs)`,
      );
    }
  }
  return lines;
}
