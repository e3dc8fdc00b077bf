import type { Command } from 'commander';
import { formatBytes } from '@drover/agent/client';
import { anyCaller } from '../callers.js';
import { downloadStoredFile, STANDARD_OUTPUT } from '../files/download.js';
import { storageGrantRefusal } from '../files/storage-refusal.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

interface DownloadFlags {
  output?: string;
  sha256?: string;
  force?: boolean;
}

export function configureFilesDownloadCommand(files: Command, rt: Runtime): void {
  files
    .command('download')
    .description('download a file (streamed, SHA-256 checked); running it again resumes a download that stopped')
    .argument('<file-id>', 'the file to download')
    .option(
      '-o, --output <path>',
      "where to write it: a file, a directory (default: the file's name, here), or - for standard output",
    )
    .option('--sha256 <hex>', 'the SHA-256 the file must have')
    .option('--force', "without -o: replace a file of the file's name in the current directory")
    .action(async (fileId: string, flags: DownloadFlags, command: Command) => {
      const caller = anyCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const got = await downloadStoredFile(rt, caller, {
        fileId,
        output: flags.output,
        sha256: flags.sha256,
        force: flags.force,
      }).catch((error: unknown) => Promise.reject(storageGrantRefusal(error, 'read')));
      const checks = [
        got.recordedSha256 !== null ? 'the checksum the storage recorded' : null,
        flags.sha256 !== undefined ? '--sha256' : null,
      ].filter((c) => c !== null);
      const verified =
        checks.length > 0
          ? `matches ${checks.join(' and ')}`
          : `the storage recorded no checksum: only the size (${got.file.size} bytes) was checked`;
      if (got.target !== STANDARD_OUTPUT) rt.out(`${got.target}\n`);
      rt.err(
        `Downloaded ${got.file.id} (${formatBytes(got.file.size)})${got.resumedFrom > 0 ? `, resumed at ${formatBytes(got.resumedFrom)}` : ''}\n` +
          `SHA-256 ${got.sha256} (${verified})\n`,
      );
    });
}
