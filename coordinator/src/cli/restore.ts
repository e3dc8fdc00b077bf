import path from 'node:path';
import type { Command } from 'commander';
import { exitWith } from './common.js';
import { ConfigError } from '../config/config.js';
import { loadBackupConfig } from '../config/backup-config.js';
import { BackupError } from '../backup/backup-error.js';
import { progressOn } from '../backup/progress.js';
import { formatBytes } from '../copy-data/report.js';

/**
 * `drover-coordinator restore --from <file>` (docs/operations.md, "Backup and restore"; the work
 * is in ../backup/): a backup into an empty or absent data directory. Exit status: 0 restored, 1
 * failed or the data directory in use (left as it was), 2 refused before anything was written
 * (not a backup, damaged, of a newer format or schema, a data directory that holds anything).
 */
export function configureRestoreCommand(program: Command): void {
  program
    .command('restore')
    .description('restore a backup made by drover-coordinator backup into an empty data directory')
    .requiredOption('--from <file>', 'the backup archive')
    .option('--data-dir <dir>', 'the empty or new data directory to fill (env DROVER_DATA_DIR, default ./data)')
    .action(async (flags: { from: string; dataDir?: string }) => {
      let dataDir: string;
      try {
        // Only the data directory: the database and storage settings are the coordinator's business.
        ({ dataDir } = loadBackupConfig({ DROVER_DATA_DIR: process.env.DROVER_DATA_DIR }, flags));
      } catch (error) {
        if (error instanceof ConfigError) exitWith(2, error.message);
        throw error;
      }
      const from = path.resolve(flags.from);
      try {
        const { restore } = await import('../backup/restore.js'); // tar: loaded by this command only
        const { manifest, files, bytes, seconds } = await restore({
          from,
          dataDir,
          progress: progressOn(process.stderr),
        });
        const what = [
          ...(manifest.schemaVersion !== null ? [`the database (schema version ${manifest.schemaVersion})`] : []),
          ...manifest.members.filter((m) => !m.path.startsWith('blobs/') && m.path.endsWith('.key')).map((m) => m.path),
          ...(manifest.blobs === 'included' ? [`${files} files`] : []),
        ];
        const say = (line: string) => process.stdout.write(`${line}\n`);
        say(
          `restored ${what.join(', ')} from ${from} (made by drover-coordinator ${manifest.coordinatorVersion} at ${manifest.createdAt}; ${formatBytes(bytes)}, every checksum verified, ${seconds.toFixed(1)} s) into ${dataDir}`,
        );
        if (manifest.blobs === 'left out') say('the backup was made without the files: their downloads will fail');
        if (manifest.blobs === 'in the bucket')
          say('the files were in a bucket: start the coordinator with the same DROVER_STORAGE_URL');
        if (manifest.database === 'postgres') {
          say('the backup holds the keys only: restore the database from its pg_dump, then start the coordinators');
        } else {
          say(`next: drover-coordinator start --data-dir ${dataDir}`);
        }
      } catch (error) {
        if (error instanceof BackupError) exitWith(error.code === 'refused' ? 2 : 1, error.message);
        throw error;
      }
    });
}
