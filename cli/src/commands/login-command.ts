import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { CliError } from '../errors.js';
import { Api } from '../http/api.js';
import type { Runtime } from '../runtime.js';
import type { Org } from '../session/org.js';
import { promptSecret, readStdin } from '../session/prompt.js';
import { readSession, writeSession } from '../session/store.js';
import { loadSettings } from '../settings.js';

interface LoginFlags {
  email?: string;
  passwordStdin?: boolean;
}

type LoginAnswer = Schema<'SignInAnswer'>;

export function configureLoginCommand(program: Command, rt: Runtime): void {
  program
    .command('login')
    .description('sign in (a dashboard session) for the commands that manage an organization and follow jobs')
    .option('--email <email>', 'your email (env DROVER_EMAIL)')
    .option('--password-stdin', 'read the password from standard input (else env DROVER_PASSWORD, else asked)')
    .addHelpText(
      'after',
      '\nThe session is kept in $XDG_CONFIG_HOME/drover/session.json (else ~/.config/drover/), mode 0600,\n' +
        'until it expires (12 hours by default) or `drover logout`.\n',
    )
    .action(async (flags: LoginFlags, command: Command) => {
      const settings = loadSettings(command.optsWithGlobals(), rt);
      const url = settings.url ?? readSession(settings.configDir)?.url ?? null;
      if (url === null) throw new CliError('no coordinator URL: pass --url or set DROVER_URL');
      const email = (flags.email ?? rt.env.DROVER_EMAIL ?? '').trim();
      if (email === '') throw new CliError('no email: pass --email or set DROVER_EMAIL');
      const password = await passwordOf(rt, flags);
      const api = new Api(url, null, rt.signal);
      const answer = await api.post<LoginAnswer>('/auth/login', { email, password });
      const file = writeSession(settings.configDir, {
        url,
        token: answer.token,
        expiresAt: answer.expiresAt,
        email: answer.user.email,
        userId: answer.user.id,
      });
      const orgs = await new Api(url, answer.token, rt.signal).get<Org[]>('/orgs');
      const names = orgs.map((o) => `${o.name} (${o.role})`).join(', ') || 'none yet';
      rt.out(`Signed in to ${url} as ${answer.user.email} until ${answer.expiresAt}\nOrganizations: ${names}\n`);
      rt.err(`The session is kept in ${file}\n`);
    });
}

async function passwordOf(rt: Runtime, flags: LoginFlags): Promise<string> {
  if (flags.passwordStdin) return readStdin(rt);
  const fromEnv = rt.env.DROVER_PASSWORD;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return promptSecret(rt, 'Password: ', 'set DROVER_PASSWORD or pass --password-stdin');
}
