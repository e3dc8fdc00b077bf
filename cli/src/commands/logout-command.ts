import type { Command } from 'commander';
import { ApiError, CliError, Interrupted } from '../errors.js';
import { Api } from '../http/api.js';
import { warnPlainHttp } from '../http/plain-http.js';
import type { Runtime } from '../runtime.js';
import { deleteSession, readSession, sessionExpired } from '../session/store.js';
import { configDir } from '../settings.js';

export function configureLogoutCommand(program: Command, rt: Runtime): void {
  program
    .command('logout')
    .description('sign out: end the session on the coordinator and delete it here')
    .option('--everywhere', 'end every session of yours (other browsers and scripts too), then delete it here')
    .option(
      '--force',
      'delete the session file even when the coordinator cannot end the session (it stays valid there until it expires)',
    )
    .action(async (flags: { everywhere?: boolean; force?: boolean }) => {
      const dir = configDir(rt);
      let session = null;
      try {
        session = readSession(dir);
      } catch (error) {
        if (!(error instanceof CliError)) throw error;
        // A damaged session file: nothing to sign out of, only a file to delete.
      }
      // Signing out sends the session, as every call of a session command does.
      if (session !== null) warnPlainHttp(rt, session.url, 'the session');
      if (flags.everywhere) {
        if (session === null) throw new CliError('not signed in: sign in with `drover login` to sign out everywhere');
        // Unlike a plain sign-out, this one must reach the coordinator: nothing is deleted unless it did
        // (or --force says to delete the file anyway).
        try {
          await new Api(session.url, session.token, rt.signal).call('POST', '/auth/logout-everywhere');
        } catch (error) {
          if (!flags.force || !(error instanceof CliError) || error instanceof Interrupted) throw error;
          rt.err(notEnded(session.url, session.expiresAt, error.message));
          deleteSession(dir);
          rt.out('Deleted the session file\n');
          return;
        }
        deleteSession(dir);
        rt.out(`Signed out of every session of ${session.email} on ${session.url}\n`);
        return;
      }
      if (session !== null) {
        try {
          await new Api(session.url, session.token, rt.signal).call('POST', '/auth/logout');
        } catch (error) {
          if (!(error instanceof CliError) || error instanceof Interrupted) throw error;
          // A 401, or a session past its expiry: it already ended there; only the file is left to delete.
          const ended = (error instanceof ApiError && error.status === 401) || sessionExpired(session);
          if (!ended) {
            if (!flags.force) {
              throw new CliError(
                `could not end the session on ${session.url} (${error.message}); the session file is kept: ` +
                  'retry `drover logout`, or pass --force to delete it here anyway ' +
                  `(the session stays valid on the coordinator until it expires, ${session.expiresAt})`,
              );
            }
            rt.err(notEnded(session.url, session.expiresAt, error.message));
            deleteSession(dir);
            rt.out('Deleted the session file\n');
            return;
          }
        }
      }
      const deleted = deleteSession(dir);
      rt.out(session ? `Signed out of ${session.url}\n` : deleted ? 'Deleted the session file\n' : 'Not signed in\n');
    });
}

/** What --force says when it deletes a session the coordinator may still accept. */
function notEnded(url: string, expiresAt: string, why: string): string {
  return (
    `drover: could not end the session on ${url} (${why}); deleting the file here anyway: ` +
    `the session may still be valid on the coordinator until it expires (${expiresAt})\n`
  );
}
