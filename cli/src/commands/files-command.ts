import type { Command } from 'commander';
import type { Runtime } from '../runtime.js';
import { configureFilesDownloadCommand } from './files-download-command.js';
import { configureFilesListCommand } from './files-list-command.js';
import { configureFilesUploadCommand } from './files-upload-command.js';

export function configureFilesCommand(program: Command, rt: Runtime): void {
  const files = program
    .command('files')
    .description('upload, download and list stored files (an API token with a storage grant, or a session)');
  configureFilesUploadCommand(files, rt);
  configureFilesDownloadCommand(files, rt);
  configureFilesListCommand(files, rt);
}
