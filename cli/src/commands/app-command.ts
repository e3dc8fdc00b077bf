import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { oneSelector, parseSelectorOption } from '../labels/selector.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { configureAppCreateCommands } from './app-create-command.js';
import { configureAppDevicesCommand } from './app-devices-command.js';
import { configureAppReleaseKeysCommand } from './app-release-keys-command.js';
import { configureAppWindowCommand } from './app-window-command.js';
import { findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type AppUpdate = Schema<'ApplicationUpdate'>;

interface DeviceGroupFlags {
  selector?: string;
  clear?: boolean;
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
    .option('--json', "print the API's answer (the application, with deviceGroup) as JSON")
    .action(async (name: string, flags: DeviceGroupFlags, command: Command) => {
      if (flags.selector !== undefined && flags.clear) throw new CliError('give --selector or --clear, not both');
      // Checked here first, by the coordinator's rules: a caret under the position of a mistake.
      if (flags.selector !== undefined && parseSelectorOption(flags.selector).length === 0) {
        throw new CliError(
          '--selector: must select by at least one label (to bind every agent, select one they all have, such as `os`); --clear removes the device group',
        );
      }
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const found = await findApp(caller, name);
      const path = `/orgs/${await caller.orgId()}/apps/${found.id}`;
      if (flags.selector === undefined && !flags.clear) {
        if (flags.json) return printJson(rt, found);
        if (found.deviceSelector === null) return rt.out(`${found.slug} has no device group\n`);
        const agents = await caller.api.get<Schema<'Agent'>[]>(`/orgs/${await caller.orgId()}/agents`, {
          selector: found.deviceSelector,
        });
        const matching = agents.filter((a) => a.status !== 'revoked').length;
        return rt.out(`Device group of ${found.slug}: ${found.deviceSelector} (${agentsWord(matching)} match now)\n`);
      }
      const updated = await caller.api.patch<AppUpdate>(path, { deviceSelector: flags.selector ?? null });
      if (flags.json) return printJson(rt, updated);
      rt.out(`${outcome(updated)}\n`);
    });
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
