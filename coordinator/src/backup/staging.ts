import fs from 'node:fs';
import path from 'node:path';

/**
 * The staging directory of a restore, `.restore-<random>` inside the data directory (restore.ts):
 * the archive is read into it, then its entries are renamed into place, the database last. One a
 * killed restore left is removed by the next. Its own module: `start` checks for one without
 * loading the restore's.
 */
export const STAGING = /^\.restore-[0-9a-f]{8}$/;

/**
 * The staging directory of a restore into `dataDir` that was stopped before it finished, still
 * holding some of the backup; null when there is none. A coordinator must not start there
 * (cli/common.ts): it would make a new, empty database beside the keys the restore had moved.
 * Under the data directory's lock, or a running restore's would be taken for one.
 */
export function unfinishedRestore(dataDir: string): string | null {
  let names: string[];
  try {
    names = fs.readdirSync(dataDir);
  } catch {
    return null; // missing or unreadable: said when it is used
  }
  for (const name of names.filter((n) => STAGING.test(n)).sort()) {
    try {
      if (fs.readdirSync(path.join(dataDir, name)).length > 0) return name;
    } catch {
      // not a directory, or gone: not a restore's
    }
  }
  return null;
}
