import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { ApiError, CliError, CliExit, Interrupted } from '../errors.js';
import { EXIT } from '../exit-codes.js';
import { filesPath } from '../files/stored-file.js';
import { uploadLocalFile } from '../files/upload.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import { describeRollout, type Rollout } from '../releases/format-rollout.js';
import { releaseId, releasesPath } from '../releases/lookup.js';
import {
  ROLLOUT_OPTIONS,
  rolloutPlan,
  rolloutRefusal,
  type RolloutFlags,
  type RolloutPlan,
} from '../releases/rollout-plan.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';
import { configureReleaseKeyCommands } from './release-keys-command.js';

type Release = Schema<'Release'>;

interface CreateFlags extends RolloutFlags {
  app: string;
  artifact?: string;
  file?: string;
  channel?: string;
  mandatory?: boolean;
  notes?: string;
  publish?: boolean;
  sequence?: string;
  signature?: string;
  json?: boolean;
}

/**
 * `drover release create|publish|yank|list`: over-the-air releases of an application, for release
 * pipelines (a session); `keygen|sign|rotate-keys`: release keys, offline.
 */
export function configureReleaseCommand(program: Command, rt: Runtime): void {
  const release = program
    .command('release')
    .description(
      "an application's over-the-air releases: create, publish, yank, list (a session); keygen, sign, rotate-keys (offline)",
    );

  const create = release
    .command('create')
    .description('create a draft release from an artifact (uploaded here, or a persistent file); prints its id')
    .argument('<version>', "the release's version label, e.g. 1.4.0")
    .requiredOption('--app <slug-or-id>', 'the application')
    .option('--artifact <path>', 'upload this file (persistent) as the artifact')
    .option('--file <id>', 'use this stored file (uploaded with --persistent) as the artifact')
    .option('--channel <channel>', "the channel (default: the application's)")
    .option('--mandatory', 'devices below it must update (default: optional)')
    .option('--notes <text>', 'release notes')
    .option('--publish', 'publish it at once (wave by wave with --waves)')
    .option('--sequence <n>', 'the sequence it was signed with (an application with release keys needs it)')
    .option('--signature <base64>', 'its signature (`drover release sign`): an application with release keys needs it');
  for (const [flag, what] of ROLLOUT_OPTIONS) create.option(flag, what);
  create
    .option('--json', "print the API's answer (the release) as JSON")
    .action(async (version: string, flags: CreateFlags, command: Command) => {
      if ((flags.artifact === undefined) === (flags.file === undefined)) {
        throw new CliError('give the artifact with --artifact <path> or --file <id> (one of them)');
      }
      const plan = rolloutPlan(flags);
      if (plan !== null && !flags.publish) throw new CliError('--waves needs --publish (a draft has no rollout yet)');
      const sequence = flags.sequence === undefined ? undefined : sequenceOption(flags.sequence);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = await releasesPath(caller, flags.app);
      let artifactFileId = flags.file;
      if (flags.artifact !== undefined) {
        const uploaded = await uploadLocalFile(rt, caller, { file: flags.artifact, cleanupRule: 'persistent' });
        artifactFileId = uploaded.file.id;
        rt.err(`Uploaded the artifact as file ${artifactFileId} (SHA-256 ${uploaded.sha256})\n`);
      }
      let created: Release;
      try {
        created = await caller.api.post<Release>(base, {
          version,
          artifactFileId,
          ...(flags.channel === undefined ? {} : { channel: flags.channel }),
          updatePolicy: flags.mandatory ? 'mandatory' : 'optional',
          ...(flags.notes === undefined ? {} : { notes: flags.notes }),
          ...(sequence === undefined ? {} : { sequence }),
          ...(flags.signature === undefined ? {} : { signature: flags.signature }),
        });
      } catch (error) {
        if (flags.artifact !== undefined && error instanceof ApiError) {
          await removeUnusedArtifact(rt, caller, artifactFileId!);
        }
        throw error;
      }
      if (flags.publish) {
        try {
          created = await publish(caller, base, created.id, plan);
        } catch (error) {
          throw draftLeft(rt, created, flags, plan !== null, error);
        }
      }
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.id}\n`);
      rt.err(`${describe(created)}\n`);
      if (plan !== null) await showRollout(rt, caller, base, created, { ref: created.id, app: flags.app }, 'err');
    });

  const publishCommand = release
    .command('publish')
    .description('publish a release: devices of its channel converge to it, at once or wave by wave (--waves)')
    .argument('<release>', 'the release: its id, or its version when no other release has it')
    .requiredOption('--app <slug-or-id>', 'the application');
  for (const [flag, what] of ROLLOUT_OPTIONS) publishCommand.option(flag, what);
  publishCommand
    .option('--json', "print the API's answer (the release) as JSON")
    .action(async (value: string, flags: RolloutFlags & { app: string; json?: boolean }, command: Command) => {
      const plan = rolloutPlan(flags);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = await releasesPath(caller, flags.app);
      const published = await publish(caller, base, await releaseId(caller, base, value), plan);
      if (flags.json) return printJson(rt, published);
      rt.out(`${describe(published)}\n`);
      if (plan !== null) await showRollout(rt, caller, base, published, { ref: value, app: flags.app }, 'out');
    });

  release
    .command('yank')
    .description('yank a release: devices on it go back to the previous published release of its channel')
    .argument('<release>', 'the release: its id, or its version when no other release has it')
    .requiredOption('--app <slug-or-id>', 'the application')
    .option('--json', "print the API's answer (the release) as JSON")
    .action(async (value: string, flags: { app: string; json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = await releasesPath(caller, flags.app);
      const yanked = await caller.api.post<Release>(`${base}/${await releaseId(caller, base, value)}/yank`);
      if (flags.json) return printJson(rt, yanked);
      rt.out(`${describe(yanked)}\n`);
    });

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

  configureReleaseKeyCommands(release, rt);
}

/** Publishes a draft, at once or with a rollout plan; the coordinator's 422 on the plan names the options. */
async function publish(caller: SessionCaller, base: string, id: string, plan: RolloutPlan | null): Promise<Release> {
  if (plan === null) return caller.api.post<Release>(`${base}/${id}/publish`);
  try {
    return await caller.api.post<Release>(`${base}/${id}/publish`, { rollout: plan });
  } catch (error) {
    throw rolloutRefusal(error);
  }
}

/** After a publish wave by wave: where the rollout stands, and how to follow it. */
async function showRollout(
  rt: Runtime,
  caller: SessionCaller,
  base: string,
  release: Release,
  follow: { ref: string; app: string },
  to: 'out' | 'err',
): Promise<void> {
  const rollout = await caller.api.get<Rollout>(`${base}/${release.id}/rollout`);
  rt[to](`${describeRollout(rollout, release.version)}\n`);
  rt.err(`Follow it with: drover rollout status ${follow.ref} --app ${follow.app}\n`);
}

/**
 * `release create --publish` whose publish was refused: the release exists, as a draft. Says so,
 * with its id (alone on stdout, or the draft as JSON, as a create prints it) and how to publish
 * it, so that a retry does not create a second release of the version; exit 2 (130 interrupted).
 */
/**
 * The artifact `--artifact` uploaded for a release the API refused: persistent, it would stay
 * stored for good, and each retry would upload another. It is deleted (the refusal left it
 * unused); when that fails, standard error says how to use it instead of uploading it again.
 */
async function removeUnusedArtifact(rt: Runtime, caller: SessionCaller, fileId: string): Promise<void> {
  try {
    await caller.api.delete(`${await filesPath(caller)}/${fileId}`);
    rt.err(`Deleted the artifact uploaded for it (file ${fileId}): the release was not created\n`);
  } catch {
    rt.err(`The artifact stays stored as file ${fileId} (persistent): create the release with --file ${fileId}\n`);
  }
}

function draftLeft(rt: Runtime, draft: Release, flags: CreateFlags, waves: boolean, error: unknown): CliExit {
  if (flags.json) printJson(rt, draft);
  else rt.out(`${draft.id}\n`);
  const why = error instanceof Error ? error.message : String(error);
  rt.err(
    `drover: the publish was refused: ${why}\n` +
      `drover: release ${draft.version} was created as a draft, ${draft.id}; publish it with ` +
      `\`drover release publish ${draft.id} --app ${flags.app}${waves ? ' --waves ...' : ''}\` (\`release create\` again would make another ${draft.version})\n`,
  );
  return new CliExit(error instanceof Interrupted ? EXIT.interrupted : EXIT.usage);
}

function sequenceOption(value: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError(`--sequence: expected a whole number from 1, got \`${value}\``);
  return n;
}

function describe(r: Release): string {
  return `Release ${r.version} (#${r.sequence}, ${r.updatePolicy}) on channel ${r.channel}: ${r.status}`;
}
