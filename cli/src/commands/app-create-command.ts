import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { SLUG } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type App = Schema<'Application'>;

interface CreateFlags {
  workflow: string;
  channel?: string;
  releaseKey?: string[];
  json?: boolean;
}

/**
 * `drover app create <slug>` and `drover app list`: the organization's over-the-air applications
 * (docs/ota.md, "Applications"), which releases, rollouts and devices belong to.
 */
export function configureAppCreateCommands(app: Command, rt: Runtime): void {
  app
    .command('create')
    .description('create an application (its releases go to the devices bound to it); prints its id')
    .argument('<slug>', 'its slug, unique in the organization: lowercase letters, digits and -, e.g. firmware')
    .requiredOption('--workflow <name>', 'the workflow that installs a release on a device (the update workflow)')
    .option('--channel <channel>', 'its default channel, of its releases and devices (default stable)')
    .option(
      '--release-key <public-key>',
      'a public key one of which must sign every release (`drover release keygen` prints it); repeatable',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--json', "print the API's answer (the application) as JSON")
    .action(async (slug: string, flags: CreateFlags, command: Command) => {
      // Checked here first, in words (the coordinator's schema would only quote its pattern).
      if (!SLUG.test(slug)) {
        throw new CliError(
          `\`${slug}\` is not a slug: 1 to 63 lowercase letters, digits and -, starting with a letter or digit (firmware, kiosk-2)`,
        );
      }
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const created = await caller.api.post<App>(`/orgs/${await caller.orgId()}/apps`, {
        slug,
        updateWorkflowName: flags.workflow,
        ...(flags.channel === undefined ? {} : { defaultChannel: flags.channel }),
        ...(flags.releaseKey === undefined ? {} : { releaseKeys: flags.releaseKey }),
      } satisfies RequestBody<'createApp'>);
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.id}\n`);
      const signed = created.releaseKeys === null ? '' : ', its releases signed';
      rt.err(
        `Created the application ${created.slug} (update workflow ${created.updateWorkflowName}, ` +
          `channel ${created.defaultChannel}${signed}). Bind devices with ` +
          `\`drover app device-group ${created.slug} --selector <selector>\`, then publish a release with ` +
          `\`drover release create <version> --app ${created.slug} --artifact <file> --publish\`\n`,
      );
    });

  app
    .command('list')
    .description("the organization's applications, oldest first")
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const apps = await caller.api.get<App[]>(`/orgs/${await caller.orgId()}/apps`);
      if (flags.json) return printJson(rt, apps);
      if (apps.length === 0) {
        return rt.out('No applications: create one with drover app create <slug> --workflow <update-workflow>\n');
      }
      const rows = apps.map((a) => [
        a.id,
        a.slug,
        a.updateWorkflowName,
        a.defaultChannel,
        a.deviceSelector,
        windowCell(a),
        a.releaseKeys === null ? 'no' : 'yes',
        shortTime(a.createdAt),
      ]);
      rt.out(formatTable(['ID', 'SLUG', 'WORKFLOW', 'CHANNEL', 'DEVICE GROUP', 'WINDOW', 'SIGNED', 'CREATED'], rows));
    });
}

/** A maintenance window in a cell: `0 2 * * * Europe/Berlin, 120 min`; none is `-`. */
function windowCell(app: App): string | null {
  const w = app.maintenanceWindow;
  return w === null ? null : `${w.cron} ${w.timezone}, ${w.durationMinutes} min`;
}
