import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { oneSelector, parseSelectorOption } from '../labels/selector.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { configureAppBindCommands } from './app-bind-command.js';
import { configureAppCreateCommands } from './app-create-command.js';
import { configureAppDevicesCommand } from './app-devices-command.js';
import { configureAppReleaseKeysCommand } from './app-release-keys-command.js';
import { configureAppWindowCommand } from './app-window-command.js';
import { findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type AppUpdate = Schema<'ApplicationUpdate'>;
type Preview = Schema<'DeviceGroupPreview'>;

interface DeviceGroupFlags {
  selector?: string;
  clear?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

const agentsWord = (n: number) => `${n} agent${n === 1 ? '' : 's'}`;
const bindingsWord = (n: number) => `${n} binding${n === 1 ? '' : 's'}`;

/**
 * `drover app`: the organization's over-the-air applications (a session): create, list, their
 * devices, maintenance window, release keys and device group (here: the agents a label selector
 * binds to it).
 */
export function configureAppCommand(program: Command, rt: Runtime): void {
  const app = program
    .command('app')
    .description("the organization's over-the-air applications: create, list, devices, window, keys (a session)");
  configureAppCreateCommands(app, rt);
  configureAppDevicesCommand(app, rt);
  configureAppBindCommands(app, rt);
  configureAppWindowCommand(app, rt);
  configureAppReleaseKeysCommand(app, rt);

  app
    .command('device-group')
    .description(
      'show, set (--selector) or remove (--clear) the label selector whose agents are bound to the application',
    )
    .argument('<app>', "the application's slug or id")
    .option(
      '--selector <selector>',
      "bind every agent it matches, e.g. 'role=kiosk,site=berlin' (docs/ota.md)",
      oneSelector,
    )
    .option('--clear', 'remove the device group: the bindings it made go, those made by hand stay')
    .option('--dry-run', 'with --selector: say what setting it would bind and remove now, changing nothing')
    .option('--json', "print the API's answer (the application, with deviceGroup; with --dry-run, the preview) as JSON")
    .action(async (name: string, flags: DeviceGroupFlags, command: Command) => {
      if (flags.selector !== undefined && flags.clear) throw new CliError('give --selector or --clear, not both');
      if (flags.dryRun && flags.selector === undefined) throw new CliError('--dry-run previews a --selector');
      // Checked here first, by the coordinator's rules: a caret under the position of a mistake.
      if (flags.selector !== undefined && parseSelectorOption(flags.selector).length === 0) {
        throw new CliError(
          '--selector: must select by at least one label (to bind every agent, select one they all have, such as `os`); --clear removes the device group',
        );
      }
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const found = await findApp(caller, name);
      const path = `/orgs/${await caller.orgId()}/apps/${found.id}`;
      // What a selector matches now, counted by the coordinator (a fleet is not read here).
      const preview = (selector: string) => caller.api.get<Preview>(`${path}/device-group/preview`, { selector });
      if (flags.selector === undefined && !flags.clear) {
        if (flags.json) return printJson(rt, found);
        if (found.deviceSelector === null) return rt.out(`${found.slug} has no device group\n`);
        const { matching } = await preview(found.deviceSelector);
        return rt.out(
          `Device group of ${found.slug}: ${found.deviceSelector} (${agentsWord(matching)} match${matching === 1 ? 'es' : ''} now)\n`,
        );
      }
      if (flags.dryRun) {
        const planned = await preview(flags.selector!);
        if (flags.json) return printJson(rt, planned);
        return rt.out(`${previewWords(found.slug, flags.selector!, planned)}\n`);
      }
      const updated = await caller.api.patch<AppUpdate>(path, { deviceSelector: flags.selector ?? null });
      if (flags.json) return printJson(rt, updated);
      rt.out(`${outcome(updated)}\n`);
    });
}

/**
 * `Device group of kiosk: role=kiosk would match 12 agents (gw-01, gw-02, …); 3 to bind, 1 to
 * remove; nothing changed`.
 */
function previewWords(slug: string, selector: string, p: Preview): string {
  const more = p.matching > p.names.length ? ', …' : '';
  const matches =
    p.matching === 0 ? 'would match no agent' : `would match ${agentsWord(p.matching)} (${p.names.join(', ')}${more})`;
  return `Device group of ${slug}: ${selector} ${matches}; ${p.toBind} to bind, ${p.toRemove} to remove; nothing changed`;
}

/** `Device group of kiosk: role=kiosk matches 2 agents; 2 bound, 0 removed`. */
function outcome(app: AppUpdate): string {
  const group = app.deviceGroup ?? { matching: 0, bound: 0, unbound: 0 };
  if (app.deviceSelector === null) {
    return `Device group of ${app.slug} removed: ${bindingsWord(group.unbound)} it made removed`;
  }
  const matches = group.matching === 0 ? 'matches no agent: nothing is bound' : `matches ${agentsWord(group.matching)}`;
  return `Device group of ${app.slug}: ${app.deviceSelector} ${matches}; ${group.bound} bound, ${group.unbound} removed`;
}
