import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type App = Schema<'Application'>;
type MaintenanceWindow = NonNullable<App['maintenanceWindow']>;

interface WindowFlags {
  cron?: string;
  timezone?: string;
  duration?: string;
  clear?: boolean;
  json?: boolean;
}

/**
 * `drover app window <app>`: show, set or clear an application's maintenance window (docs/ota.md,
 * "Maintenance windows"). Options not given keep the current window's values; a new window needs
 * --cron and --duration, its zone is UTC unless --timezone says otherwise. The coordinator checks
 * the window (a 422 names the field).
 */
export function configureAppWindowCommand(app: Command, rt: Runtime): void {
  app
    .command('window')
    .description(
      "show, set or clear an application's maintenance window: optional updates start only inside it (docs/ota.md)",
    )
    .argument('<app>', 'the application, by slug or id')
    .option('--cron <expression>', 'a window opens at each occurrence: 5 fields, as a cron trigger (0 2 * * *)')
    .option('--timezone <zone>', 'the IANA zone the expression is read in (default UTC)')
    .option('--duration <duration>', 'how long each window stays open: minutes (120), or 90m, 2h, 1d')
    .option('--clear', 'remove the window: updates start at once')
    .option('--json', "print the API's answer (the application) as JSON")
    .action(async (value: string, flags: WindowFlags, command: Command) => {
      const setting = flags.cron !== undefined || flags.timezone !== undefined || flags.duration !== undefined;
      if (setting && flags.clear)
        throw new CliError('--clear removes the window: give it without --cron, --timezone or --duration');
      const durationMinutes = flags.duration === undefined ? undefined : parseMinutes(flags.duration);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      let app = await findApp(caller, value);
      const path = `/orgs/${await caller.orgId()}/apps/${app.id}`;
      if (flags.clear) {
        app = await caller.api.patch<App>(path, { maintenanceWindow: null } satisfies RequestBody<'updateApp'>);
      } else if (setting) {
        const current = app.maintenanceWindow;
        const cron = flags.cron ?? current?.cron;
        const minutes = durationMinutes ?? current?.durationMinutes;
        if (cron === undefined || minutes === undefined) {
          throw new CliError(`${app.slug} has no maintenance window yet: give at least --cron and --duration`);
        }
        const maintenanceWindow: MaintenanceWindow = {
          cron,
          timezone: flags.timezone ?? current?.timezone ?? 'UTC',
          durationMinutes: minutes,
        };
        app = await caller.api.patch<App>(path, { maintenanceWindow } satisfies RequestBody<'updateApp'>);
      }
      if (flags.json) return printJson(rt, app);
      rt.out(describeWindow(app));
    });
}

/** `120` is minutes; `90m`, `2h`, `1d`, `1h30m` too, in whole minutes. */
export function parseMinutes(text: string): number {
  if (/^\s*\d+\s*$/.test(text)) return Number(text);
  const ms = parseDuration(text, '--duration');
  if (ms % 60_000 !== 0) throw new CliError(`--duration: expected whole minutes, got \`${text}\``);
  return ms / 60_000;
}

const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
const local = (iso: string, zone: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} ${zone}`;

/** The window in words and its next windows, one per line. */
export function describeWindow(app: App): string {
  const w = app.maintenanceWindow;
  if (!w) return `${app.slug} has no maintenance window: updates start as soon as a release is published.\n`;
  const lines = [
    `Maintenance window of ${app.slug}: \`${w.cron}\` in ${w.timezone}, open ${w.durationMinutes} min`,
    'Optional updates start only inside a window; mandatory and forced ones at once.',
    'Next windows:',
    ...app.nextWindows.map(
      (n) =>
        `  ${utc(n.opensAt)} to ${utc(n.closesAt)}${w.timezone === 'UTC' ? '' : ` (opens ${local(n.localOpensAt, w.timezone)})`}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
