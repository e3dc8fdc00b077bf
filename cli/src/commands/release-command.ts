import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { uploadLocalFile } from '../files/upload.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { findApp, isUuid, pick } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type Release = Schema<'Release'>;

interface CreateFlags {
  app: string;
  artifact?: string;
  file?: string;
  channel?: string;
  mandatory?: boolean;
  notes?: string;
  publish?: boolean;
  json?: boolean;
}

/** `drover release create|publish|yank|list`: over-the-air releases of an application, for release pipelines. */
export function configureReleaseCommand(program: Command, rt: Runtime): void {
  const release = program
    .command('release')
    .description("an application's over-the-air releases: create, publish, yank, list (a session)");

  release
    .command('create')
    .description('create a draft release from an artifact (uploaded here, or a persistent file); prints its id')
    .argument('<version>', "the release's version label, e.g. 1.4.0")
    .requiredOption('--app <slug-or-id>', 'the application')
    .option('--artifact <path>', 'upload this file (persistent) as the artifact')
    .option('--file <id>', 'use this stored file (uploaded with --persistent) as the artifact')
    .option('--channel <channel>', "the channel (default: the application's)")
    .option('--mandatory', 'devices below it must update (default: optional)')
    .option('--notes <text>', 'release notes')
    .option('--publish', 'publish it at once')
    .option('--json', "print the API's answer (the release) as JSON")
    .action(async (version: string, flags: CreateFlags, command: Command) => {
      if ((flags.artifact === undefined) === (flags.file === undefined)) {
        throw new CliError('give the artifact with --artifact <path> or --file <id> (one of them)');
      }
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = await releasesPath(caller, flags.app);
      let artifactFileId = flags.file;
      if (flags.artifact !== undefined) {
        const uploaded = await uploadLocalFile(rt, caller, { file: flags.artifact, cleanupRule: 'persistent' });
        artifactFileId = uploaded.file.id;
        rt.err(`Uploaded the artifact as file ${artifactFileId} (SHA-256 ${uploaded.sha256})\n`);
      }
      let created = await caller.api.post<Release>(base, {
        version,
        artifactFileId,
        ...(flags.channel === undefined ? {} : { channel: flags.channel }),
        updatePolicy: flags.mandatory ? 'mandatory' : 'optional',
        ...(flags.notes === undefined ? {} : { notes: flags.notes }),
      });
      if (flags.publish) created = await caller.api.post<Release>(`${base}/${created.id}/publish`);
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.id}\n`);
      rt.err(`${describe(created)}\n`);
    });

  for (const [move, done] of [
    ['publish', 'devices of its channel converge to it'],
    ['yank', 'devices on it go back to the previous published release of its channel'],
  ] as const) {
    release
      .command(move)
      .description(`${move} a release: ${done}`)
      .argument('<release>', 'the release: its id, or its version when no other release has it')
      .requiredOption('--app <slug-or-id>', 'the application')
      .option('--json', "print the API's answer (the release) as JSON")
      .action(async (value: string, flags: { app: string; json?: boolean }, command: Command) => {
        const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
        const base = await releasesPath(caller, flags.app);
        const id = isUuid(value)
          ? value
          : pick(await caller.api.get<Release[]>(base), value, 'release', (r) => r.version).id;
        const moved = await caller.api.post<Release>(`${base}/${id}/${move}`);
        if (flags.json) return printJson(rt, moved);
        rt.out(`${describe(moved)}\n`);
      });
  }

  release
    .command('list')
    .description("the application's releases, highest sequence first")
    .requiredOption('--app <slug-or-id>', 'the application')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { app: string; json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const releases = await caller.api.get<Release[]>(await releasesPath(caller, flags.app));
      if (flags.json) return printJson(rt, releases);
      if (releases.length === 0) return rt.out('No releases.\n');
      const rows = releases.map((r) => [
        r.id,
        r.version,
        `#${r.sequence}`,
        r.channel,
        r.updatePolicy,
        r.status,
        shortTime(r.publishedAt),
      ]);
      rt.out(formatTable(['ID', 'VERSION', 'SEQUENCE', 'CHANNEL', 'POLICY', 'STATUS', 'PUBLISHED'], rows));
    });
}

/** `/orgs/:orgId/apps/:appId/releases` of the application named by slug or id. */
async function releasesPath(caller: SessionCaller, app: string): Promise<string> {
  return `/orgs/${await caller.orgId()}/apps/${(await findApp(caller, app)).id}/releases`;
}

function describe(r: Release): string {
  return `Release ${r.version} (#${r.sequence}, ${r.updatePolicy}) on channel ${r.channel}: ${r.status}`;
}
