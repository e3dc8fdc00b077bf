import type { Command } from 'commander';
import { CliError } from '../errors.js';
import { Api } from '../http/api.js';
import type { Runtime } from '../runtime.js';
import { deleteSession, readSession } from '../session/store.js';
import { configDir } from '../settings.js';

export function configureLogoutCommand(program: Command, rt: Runtime): void {
  program
    .command('logout')
    .description('sign out: end the session on the coordinator and delete it here')
    .option('--everywhere', 'end every session of yours (other browsers and scripts too), then delete it here')
    .action(async (flags: { everywhere?: boolean }) => {
      const dir = configDir(rt);
      let session = null;
      try {
        session = readSession(dir);
      } catch (error) {
        if (!(error instanceof CliError)) throw error;
        // A damaged session file: nothing to sign out of, only a file to delete.
      }
      if (flags.everywhere) {
        if (session === null) throw new CliError('not signed in: sign in with `drover login` to sign out everywhere');
        // Unlike a plain sign-out, this one must reach the coordinator: nothing is deleted unless it did.
        await new Api(session.url, session.token, rt.signal).call('POST', '/auth/logout-everywhere');
        deleteSession(dir);
        rt.out(`Signed out of every session of ${session.email} on ${session.url}\n`);
        return;
      }
      if (session !== null) {
        try {
          await new Api(session.url, session.token, rt.signal).call('POST', '/auth/logout');
        } catch (error) {
          if (!(error instanceof CliError)) throw error;
          rt.err(`drover: could not end the session on ${session.url} (${error.message}); deleting it here\n`);
        }
      }
      const deleted = deleteSession(dir);
      rt.out(session ? `Signed out of ${session.url}\n` : deleted ? 'Deleted the session file\n' : 'Not signed in\n');
    });
}
