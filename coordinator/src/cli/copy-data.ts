import type { Command } from 'commander';
import { exitWith } from './common.js';
import { ConfigError } from '../config/config.js';
import { loadCopyDataConfig, type CopyDataConfig, type CopyDataFlags } from '../config/copy-data-config.js';
import { CopyDataError } from '../copy-data/copy-data-error.js';
import { reportLines } from '../copy-data/report.js';

/**
 * `drover-coordinator copy-data --data-dir <dir> --to postgres://... [--files-to s3://...]`
 * (docs/scaling.md, "Moving a coordinator"; the work is in ../copy-data/). Exit status: 0
 * copied, 1 failed (nothing committed), 2 refused before anything was written (bad flags, not a
 * coordinator's data directory, a coordinator running on it, a target that holds data).
 */
export function configureCopyDataCommand(program: Command): void {
  program
    .command('copy-data')
    .description(
      "copy a stopped SQLite coordinator's data into an empty PostgreSQL database, and its files into a bucket",
    )
    .option('--data-dir <dir>', 'the data directory to copy from (env DROVER_DATA_DIR, default ./data); left unchanged')
    .option('--to <url>', 'the empty PostgreSQL database to copy into: postgres://user:password@host:port/database')
    .option(
      '--files-to <url>',
      "the bucket for the data directory's files, as DROVER_STORAGE_URL will name it: s3://<bucket>[/<prefix>]?endpoint=...&region=...",
    )
    .action(async (flags: CopyDataFlags) => {
      let config: CopyDataConfig;
      try {
        config = loadCopyDataConfig(process.env, flags);
      } catch (error) {
        if (error instanceof ConfigError) exitWith(2, error.message);
        throw error;
      }
      const say = (line: string) => process.stdout.write(`${line}\n`);
      try {
        // Loaded by this command only: PostgreSQL's driver and the S3 client are no part of `start`.
        const { copyData } = await import('../copy-data/copy-data.js');
        const report = await copyData(config, say);
        for (const line of reportLines(config, report)) say(line);
      } catch (error) {
        if (error instanceof CopyDataError) exitWith(error.code === 'refused' ? 2 : 1, error.message);
        throw error;
      }
    });
}
