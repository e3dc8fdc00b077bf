import os from 'node:os';
import { pause } from '@drover/agent/client';
import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { ApiError, CliError, Interrupted } from '../errors.js';
import { Api, clockOffsetOf, type ApiAnswer } from '../http/api.js';
import { warnPlainHttp } from '../http/plain-http.js';
import type { Runtime } from '../runtime.js';
import type { Org } from '../session/org.js';
import { promptSecret, readStdinLine } from '../session/prompt.js';
import { readSession, writeSession } from '../session/store.js';
import { loadSettings } from '../settings.js';
import { CLI_VERSION } from '../version.js';

interface LoginFlags {
  email?: string;
  passwordStdin?: boolean;
  browser?: boolean;
}

type LoginAnswer = Schema<'SignInAnswer'>;
type DeviceStart = Schema<'DeviceSignInStart'>;
/** `POST /v1/auth/device/token` while nobody approved yet (202). */
type DevicePending = Schema<'DeviceSignInPending'>;

/** The pause between two polls when the coordinator names none (RFC 8628's default). */
const DEFAULT_INTERVAL_S = 5;

export function configureLoginCommand(program: Command, rt: Runtime): void {
  program
    .command('login')
    .description('sign in (a dashboard session) for the commands that manage an organization and follow jobs')
    .option('--email <email>', 'your email (env DROVER_EMAIL)')
    .option(
      '--password-stdin',
      'read the password from the first line of standard input (else env DROVER_PASSWORD, else asked)',
    )
    .option('--browser', 'sign in through a browser where you are signed in (single sign-on or password) instead')
    .addHelpText(
      'after',
      '\nWith --browser, drover prints a page address and a code: open the page in a browser where you are\n' +
        'signed in to Drover, check that it shows the same code and approve (within 10 minutes). It works\n' +
        'for single sign-on accounts and when password sign-in is turned off.\n' +
        '\nThe session is kept in $XDG_CONFIG_HOME/drover/session.json (else ~/.config/drover/), mode 0600,\n' +
        'until it expires (12 hours by default) or `drover logout`.\n',
    )
    .action(async (flags: LoginFlags, command: Command) => {
      if (flags.browser && (flags.email !== undefined || flags.passwordStdin)) {
        throw new CliError('--browser takes no --email or --password-stdin: you sign in in the browser');
      }
      const settings = loadSettings(command.optsWithGlobals(), rt);
      const url = settings.url ?? readSession(settings.configDir)?.url ?? null;
      if (url === null) throw new CliError('no coordinator URL: pass --url or set DROVER_URL');
      const signedIn = flags.browser ? await signInInBrowser(rt, url) : await signInWithPassword(rt, url, flags);
      await keepSession(rt, settings.configDir, url, signedIn);
    });
}

/** A sign-in's answer, with the coordinator's clock minus this machine's as that answer showed it. */
interface SignedIn {
  answer: LoginAnswer;
  clockOffsetMs: number | undefined;
}

/** `call`, with the clock offset its answer's `Date` header shows. */
async function timedCall<T>(
  api: Api,
  path: string,
  body: unknown,
): Promise<{ answer: ApiAnswer<T>; clockOffsetMs: number | undefined }> {
  const sentAt = Date.now();
  const answer = await api.call<T>('POST', path, { body });
  return { answer, clockOffsetMs: clockOffsetOf(answer.headers, sentAt, Date.now()) };
}

/** `POST /v1/auth/login` with the email and password; passwords turned off is an error naming `--browser`. */
async function signInWithPassword(rt: Runtime, url: string, flags: LoginFlags): Promise<SignedIn> {
  const email = (flags.email ?? rt.env.DROVER_EMAIL ?? '').trim();
  if (email === '') throw new CliError('no email: pass --email or set DROVER_EMAIL (or sign in with --browser)');
  const password = await passwordOf(rt, flags);
  warnPlainHttp(rt, url, 'the password');
  try {
    const { answer, clockOffsetMs } = await timedCall<LoginAnswer>(new Api(url, null, rt.signal), '/auth/login', {
      email,
      password,
    });
    return { answer: answer.body, clockOffsetMs };
  } catch (error) {
    if (error instanceof ApiError && error.code === 'password_sign_in_off') {
      throw new CliError(
        `password sign-in is turned off on ${url}: sign in through the browser with \`drover login --browser\``,
      );
    }
    throw error;
  }
}

/**
 * Device sign-in (RFC 8628): asks the coordinator for a code, shows its page and the code, and
 * polls every `interval` seconds until a user signed in to the dashboard approves it (the answer
 * is then a session of theirs, as a password sign-in gives), denies it, or it expires. Ctrl-C
 * (`rt.signal`) ends the wait.
 */
async function signInInBrowser(rt: Runtime, url: string): Promise<SignedIn> {
  const api = new Api(url, null, rt.signal);
  const start = await api.post<DeviceStart>('/auth/device', { client: `drover ${CLI_VERSION} on ${os.hostname()}` });
  rt.err(
    `Sign in at ${start.verificationUriComplete}\n` +
      'Open it in a browser where you are signed in to Drover (single sign-on or password), check that the page ' +
      `shows the code ${start.userCode} and approve; it expires at ${start.expiresAt}.\n` +
      'Waiting for the approval (Ctrl-C to stop)...\n',
  );
  let interval = seconds(start.interval);
  let wait = interval;
  for (;;) {
    try {
      await pause(wait * 1000, rt.signal);
    } catch {
      throw new Interrupted();
    }
    let answer: ApiAnswer<LoginAnswer | DevicePending>;
    let clockOffsetMs: number | undefined;
    try {
      ({ answer, clockOffsetMs } = await timedCall<LoginAnswer | DevicePending>(api, '/auth/device/token', {
        deviceCode: start.deviceCode,
      }));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.status === 429) {
        // Polled too soon (a clock or a proxy retrying): wait as asked, else one interval more.
        wait = Math.max(error.retryAfterSeconds ?? interval + DEFAULT_INTERVAL_S, 1);
        continue;
      }
      if (error.code === 'device_sign_in_denied') throw new CliError('the sign-in was denied in the browser');
      if (error.status === 410) throw new CliError('no approval within 10 minutes: run `drover login --browser` again');
      throw error;
    }
    if (answer.status === 200) return { answer: answer.body as LoginAnswer, clockOffsetMs };
    interval = seconds((answer.body as DevicePending).interval);
    wait = interval;
  }
}

/** A poll interval the coordinator gave, in whole seconds (at least 1), else the default. */
function seconds(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 1 ? Math.ceil(value) : DEFAULT_INTERVAL_S;
}

/**
 * Keeps a session however it was signed in (the same file and fields), then says as whom, until
 * when, and in which organizations.
 */
async function keepSession(rt: Runtime, configDir: string, url: string, signedIn: SignedIn): Promise<void> {
  const { answer, clockOffsetMs } = signedIn;
  const file = writeSession(configDir, {
    url,
    token: answer.token,
    expiresAt: answer.expiresAt,
    email: answer.user.email,
    userId: answer.user.id,
    ...(clockOffsetMs === undefined ? {} : { clockOffsetMs }),
  });
  const orgs = await new Api(url, answer.token, rt.signal).get<Org[]>('/orgs');
  const names = orgs.map((o) => `${o.name} (${o.role})`).join(', ') || 'none yet';
  rt.out(`Signed in to ${url} as ${answer.user.email} until ${answer.expiresAt}\nOrganizations: ${names}\n`);
  rt.err(`The session is kept in ${file}\n`);
}

async function passwordOf(rt: Runtime, flags: LoginFlags): Promise<string> {
  if (flags.passwordStdin) return readStdinLine(rt);
  const fromEnv = rt.env.DROVER_PASSWORD;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return promptSecret(rt, 'Password: ', 'set DROVER_PASSWORD or pass --password-stdin');
}
