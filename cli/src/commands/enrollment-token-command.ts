import type { Answer } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

type EnrollmentToken = Answer<'createEnrollmentToken', 201>;

/** The coordinator's bounds of an enrollment token's `expiresInSeconds`: one minute to 30 days. */
const EXPIRES_IN_BOUNDS = { minMs: 60_000, maxMs: 30 * 86_400_000 };

export function configureEnrollmentTokenCommand(program: Command, rt: Runtime): void {
  const group = program
    .command('enrollment-token')
    .description('single-use tokens that enroll a machine as an agent (a session)');
  group
    .command('create')
    .description('create one; prints the token (shown only now) and how to enroll with it')
    .option('--name <name>', 'a label for the audit log')
    .option('--expires-in <duration>', 'how long it may be used: 60s to 30d (default 1h)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { name?: string; expiresIn?: string; json?: boolean }, command: Command) => {
      const expiresInSeconds =
        flags.expiresIn === undefined
          ? undefined
          : Math.round(parseDuration(flags.expiresIn, '--expires-in', EXPIRES_IN_BOUNDS) / 1000);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const created = await caller.api.post<EnrollmentToken>(`/orgs/${await caller.orgId()}/enrollment-tokens`, {
        ...(flags.name === undefined ? {} : { name: flags.name }),
        ...(expiresInSeconds === undefined ? {} : { expiresInSeconds }),
      });
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.token}\n`);
      rt.err(
        `Single use, until ${created.expiresAt}. On the machine:\n` +
          `  drover-agent enroll --url ${caller.api.origin} --token ${created.token}\n`,
      );
    });
}
