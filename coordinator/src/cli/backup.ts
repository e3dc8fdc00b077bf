import path from 'node:path';
import type { Command } from 'commander';
import { exitWith } from './common.js';
import { ConfigError } from '../config/config.js';
import { loadBackupConfig, type BackupConfig, type BackupConfigFlags } from '../config/backup-config.js';
import { BackupError } from '../backup/backup-error.js';
import { progressOn } from '../backup/progress.js';
import { backupReportLines } from '../backup/report.js';

interface BackupFlags extends BackupConfigFlags {
  to?: string;
  force?: boolean;
  withoutBlobs?: boolean;
  keysOnly?: boolean;
}

/**
 * `drover-coordinator backup --to <file>` (docs/operations.md, "Backup and restore"; the work is
 * in ../backup/): while the coordinator runs, without its lock. Exit status: 0 written, 1 failed
 * (nothing left under the file's name), 2 refused before anything was written (bad flags, the
 * file exists or is in the data directory, not a data directory, PostgreSQL without --keys-only).
 */
export function configureBackupCommand(program: Command): void {
  program
    .command('backup')
    .description("write a consistent backup of a coordinator's database, keys and files to one archive, while it runs")
    .requiredOption('--to <file>', 'the archive to write (a .tar.gz, mode 0600: it holds the keys)')
    .option('--force', 'replace the file when it exists')
    .option('--without-blobs', "leave the local storage backend's files out")
    .option('--keys-only', "only the server key and the secrets key (beside pg_dump's dump on PostgreSQL)")
    .option('--data-dir <dir>', 'the data directory of the coordinator (env DROVER_DATA_DIR, default ./data)')
    .option(
      '--database-url <url>',
      "the coordinator's PostgreSQL database, if it has one (env DROVER_DATABASE_URL): only --keys-only applies",
    )
    .option(
      '--storage-url <url>',
      "the coordinator's bucket, if it keeps its files in one (env DROVER_STORAGE_URL): they are not in the backup",
    )
    .action(async (flags: BackupFlags) => {
      let config: BackupConfig;
      try {
        config = loadBackupConfig(process.env, flags);
      } catch (error) {
        if (error instanceof ConfigError) exitWith(2, error.message);
        throw error;
      }
      const to = path.resolve(flags.to!);
      try {
        // Loaded by this command only: PostgreSQL's driver and tar are no part of `start`.
        const { backup } = await import('../backup/backup.js');
        const report = await backup({
          config,
          to,
          force: flags.force === true,
          withoutBlobs: flags.withoutBlobs === true,
          keysOnly: flags.keysOnly === true,
          progress: progressOn(process.stderr),
        });
        for (const line of backupReportLines(config, report)) process.stdout.write(`${line}\n`);
      } catch (error) {
        if (error instanceof BackupError) exitWith(error.code === 'refused' ? 2 : 1, error.message);
        throw error;
      }
    });
}
