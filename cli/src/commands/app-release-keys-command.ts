import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { readInput } from '../input-file.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type App = Schema<'Application'>;

interface ReleaseKeysFlags {
  key?: string[];
  rotation?: string;
  json?: boolean;
}

/** `drover app release-keys <app>`: show an application's release keys, set the first ones, or apply a rotation. */
export function configureAppReleaseKeysCommand(app: Command, rt: Runtime): void {
  app
    .command('release-keys')
    .description(
      "show an application's release keys, set the first ones (--key), or change them with a signed rotation (--rotation)",
    )
    .argument('<app>', "the application's slug or id")
    .option(
      '--key <public-key>',
      'a public key (`drover release keygen` prints it); repeat it for several; only while the application has none',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--rotation <file>', 'a rotation statement made by `drover release rotate-keys` (- for standard input)')
    .option('--json', "print the API's answer (the application) as JSON")
    .action(async (name: string, flags: ReleaseKeysFlags, command: Command) => {
      if (flags.key !== undefined && flags.rotation !== undefined)
        throw new CliError('give --key or --rotation, not both');
      const rotation = flags.rotation === undefined ? undefined : await readRotation(rt, flags.rotation);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const found = await findApp(caller, name);
      let shown: App = found;
      if (flags.key !== undefined || rotation !== undefined) {
        shown = await caller.api.patch<App>(`/orgs/${await caller.orgId()}/apps/${found.id}`, {
          ...(flags.key === undefined ? {} : { releaseKeys: flags.key }),
          ...(rotation === undefined ? {} : { releaseKeyRotation: rotation }),
        });
      }
      if (flags.json) return printJson(rt, shown);
      if (shown.releaseKeys === null) return rt.out(`${shown.slug} has no release keys: its releases are not signed\n`);
      rt.out(`Release keys of ${shown.slug} (generation ${shown.releaseKeyGeneration}):\n`);
      for (const key of shown.releaseKeys) rt.out(`  ${key}\n`);
    });
}

async function readRotation(rt: Runtime, file: string): Promise<unknown> {
  const text = await readInput(rt, file, 'the rotation');
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${file} is not a rotation statement: not JSON (\`drover release rotate-keys\` prints one)`);
  }
}
