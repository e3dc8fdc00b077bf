import type { Command } from 'commander';
import { formatBytes } from '@drover/agent/client';
import { anyCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { storageGrantRefusal } from '../files/storage-refusal.js';
import { filesPath, type StoredFile } from '../files/stored-file.js';
import { printJson } from '../output/json.js';
import { sayNextPage } from '../output/next-page.js';
import { formatTable } from '../output/table.js';
import { ago } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { idFlag } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

const FILE_STATUSES: readonly StoredFile['status'][] = ['pending', 'active', 'deleting', 'deleted', 'delete_failed'];

interface ListFlags {
  binding?: string;
  status?: string;
  cursor?: string;
  json?: boolean;
}

/**
 * `drover files list`: the stored files, newest first, 200 a page (the API's); the command to
 * read the next page is said on stderr when more follow, as `drover batch list` does.
 */
export function configureFilesListCommand(files: Command, rt: Runtime): void {
  files
    .command('list')
    .description("the stored files, newest first, 200 at a time (an API token's bindings, or the organization's)")
    .option('--binding <binding-id>', 'only the files of this storage binding')
    .option('--status <status>', `only files in this status (${FILE_STATUSES.join(', ')})`)
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: ListFlags, command: Command) => {
      if (flags.status !== undefined && !(FILE_STATUSES as readonly string[]).includes(flags.status)) {
        throw new CliError(`--status: expected one of ${FILE_STATUSES.join(', ')}, got \`${flags.status}\``);
      }
      const bindingId = idFlag('--binding', 'storage binding', flags.binding);
      const caller = anyCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const answer = await caller.api
        .call<StoredFile[]>('GET', await filesPath(caller), {
          query: { bindingId, status: flags.status, cursor: flags.cursor },
        })
        .catch((error: unknown) => Promise.reject(storageGrantRefusal(error, 'read')));
      if (flags.json) printJson(rt, answer.body);
      else rt.out(answer.body.length === 0 ? 'No files.\n' : fileTable(answer.body));
      sayNextPage(rt, answer.headers, 'files', 'drover files list', { binding: bindingId, status: flags.status });
    });
}

function fileTable(files: StoredFile[]): string {
  const rows = files.map((f) => [
    f.id,
    f.filename,
    f.status,
    f.status === 'active' ? formatBytes(f.size) : null,
    ago(f.createdAt),
  ]);
  return formatTable(['ID', 'NAME', 'STATUS', 'SIZE', 'CREATED'], rows);
}
