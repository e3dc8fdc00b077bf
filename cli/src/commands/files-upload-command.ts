import type { Command } from 'commander';
import { formatBytes } from '@drover/agent/client';
import { anyCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { CliError } from '../errors.js';
import { storageGrantRefusal } from '../files/storage-refusal.js';
import { uploadLocalFile } from '../files/upload.js';
import { printJson } from '../output/json.js';
import { bindingId } from '../session/lookups.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

/** The coordinator's bounds of a file's `ttlSeconds`: one minute to 90 days. */
const TTL_BOUNDS = { minMs: 60_000, maxMs: 90 * 86_400_000 };

interface UploadFlags {
  binding?: string;
  ttl?: string;
  persistent?: boolean;
  json?: boolean;
}

export function configureFilesUploadCommand(files: Command, rt: Runtime): void {
  files
    .command('upload')
    .description('upload a file (streamed, SHA-256 checked); prints the new file id')
    .argument('<path>', 'the file to upload')
    .option('--binding <id>', 'the storage binding, by id (or name, with a session); needed when several may be used')
    .option('--ttl <duration>', 'delete the file this long after the upload: 60s to 90d (default 1d)')
    .option('--persistent', 'keep the file until it is deleted (release artifacts must be)')
    .option('--json', "print the file's metadata as the API answers it")
    .action(async (file: string, flags: UploadFlags, command: Command) => {
      if (flags.ttl !== undefined && flags.persistent) throw new CliError('choose --ttl or --persistent, not both');
      const ttlSeconds =
        flags.ttl === undefined ? undefined : Math.round(parseDuration(flags.ttl, '--ttl', TTL_BOUNDS) / 1000);
      const caller = anyCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const binding =
        flags.binding !== undefined && caller.kind === 'session'
          ? await bindingId(caller, flags.binding)
          : flags.binding;
      const uploaded = await uploadLocalFile(rt, caller, {
        file,
        bindingId: binding,
        cleanupRule: flags.persistent ? 'persistent' : 'ttl',
        ttlSeconds,
      }).catch((error: unknown) => Promise.reject(storageGrantRefusal(error, 'read,write')));
      if (flags.json) return printJson(rt, uploaded.file);
      const f = uploaded.file;
      const kept = f.cleanupRule === 'persistent' ? 'kept until deleted' : `kept until ${f.expiresAt}`;
      const checked = uploaded.checkedByServer ? 'the same on the coordinator' : 'the storage reported no checksum';
      rt.out(`${f.id}\n`);
      rt.err(`Uploaded ${f.filename} (${formatBytes(f.size)}), ${kept}\nSHA-256 ${uploaded.sha256} (${checked})\n`);
    });
}
