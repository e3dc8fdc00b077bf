import type { Answer } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { promptSecret, readStdin } from '../session/prompt.js';
import { writeSession } from '../session/store.js';
import { loadSettings } from '../settings.js';

interface PasswordFlags {
  passwordStdin?: boolean;
}

type PasswordAnswer = Answer<'changePassword'>;

const INSTEAD = 'pass --password-stdin (the current password, then the new one, one a line)';

/** `drover password`: changes the signed-in user's password; their other sessions are signed out. */
export function configurePasswordCommand(program: Command, rt: Runtime): void {
  program
    .command('password')
    .description('change your password: your other sessions (browsers, scripts) are signed out, this one is renewed')
    .option(
      '--password-stdin',
      'read the current password and the new one from standard input, one a line (else both are asked, without echo)',
    )
    .action(async (flags: PasswordFlags, command: Command) => {
      const settings = loadSettings(command.optsWithGlobals(), rt);
      const caller = sessionCaller(settings, rt);
      const { currentPassword, newPassword } = flags.passwordStdin ? await fromStdin(rt) : await asked(rt);
      const answer = await caller.api.post<PasswordAnswer>('/auth/password', { currentPassword, newPassword });
      writeSession(settings.configDir, { ...caller.session, token: answer.token, expiresAt: answer.expiresAt });
      rt.out(`Changed the password of ${caller.session.email}; your other sessions are signed out\n`);
    });
}

async function fromStdin(rt: Runtime): Promise<{ currentPassword: string; newPassword: string }> {
  const lines = (await readStdin(rt)).split(/\r?\n/);
  if (lines.length !== 2) {
    throw new CliError(
      `--password-stdin: expected two lines (the current password, then the new one), got ${lines.length}`,
    );
  }
  return { currentPassword: lines[0]!, newPassword: lines[1]! };
}

async function asked(rt: Runtime): Promise<{ currentPassword: string; newPassword: string }> {
  const currentPassword = await promptSecret(rt, 'Current password: ', INSTEAD);
  const newPassword = await promptSecret(rt, 'New password: ', INSTEAD);
  if ((await promptSecret(rt, 'New password again: ', INSTEAD)) !== newPassword) {
    throw new CliError('the new password was not typed the same twice; nothing changed');
  }
  return { currentPassword, newPassword };
}
