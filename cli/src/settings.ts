import path from 'node:path';
import { isAgentError, parseCoordinatorUrl } from '@drover/agent/client';
import { CliError } from './errors.js';
import type { Runtime } from './runtime.js';

/** The global options, each also read from its environment variable. */
export interface GlobalFlags {
  url?: string;
  token?: string;
  org?: string;
}

/**
 * Where and as whom a command calls: the coordinator (`--url`, `DROVER_URL`; a session's own
 * otherwise), the API token (`--token`, `DROVER_TOKEN`), the organization for session commands
 * (`--org`, `DROVER_ORG`) and the directory of the session file.
 */
export interface Settings {
  /** `http(s)://host[:port]`, or null when neither the flag nor the variable names one. */
  url: string | null;
  token: string | null;
  org: string | null;
  configDir: string;
}

export function loadSettings(flags: GlobalFlags, rt: Runtime): Settings {
  // An empty variable counts as unset; an empty flag is refused: it wins over its variable, and
  // `--token "$UNSET"` would otherwise drop DROVER_TOKEN and call with the session, as another caller.
  const given = (flag: string | undefined, flagName: string, expected: string, variable: string) => {
    if (flag !== undefined && flag.trim() === '') throw new CliError(`${flagName}: expected ${expected}, got nothing`);
    const value = (flag ?? rt.env[variable] ?? '').trim();
    return value === '' ? null : value;
  };
  const url = given(flags.url, '--url', "the coordinator's URL", 'DROVER_URL');
  return Object.freeze({
    url: url === null ? null : coordinatorUrl(url, flags.url !== undefined ? '--url' : 'DROVER_URL'),
    token: apiToken(given(flags.token, '--token', 'an API token (drv_...)', 'DROVER_TOKEN'), flags.token !== undefined),
    org: given(flags.org, '--org', "an organization's id or name", 'DROVER_ORG'),
    configDir: configDir(rt),
  });
}

/**
 * The token as given, refused when it holds a space or a control character: no token does, and an
 * HTTP header cannot carry one (a line break pasted with it would otherwise be reported as the
 * coordinator being out of reach).
 */
function apiToken(token: string | null, fromFlag: boolean): string | null {
  if (token === null || /^[\x21-\x7e]+$/.test(token)) return token;
  const source = fromFlag ? '--token' : 'DROVER_TOKEN';
  const what = /\s/.test(token) ? 'a space or a line break' : 'a character that is not printable ASCII';
  throw new CliError(`${source}: an API token (drv_...) is one word of printable ASCII; this one holds ${what}`);
}

/** `$XDG_CONFIG_HOME/drover` when that is an absolute path, else `~/.config/drover`. */
export function configDir(rt: Pick<Runtime, 'env' | 'homedir'>): string {
  const xdg = rt.env.XDG_CONFIG_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(rt.homedir, '.config');
  return path.join(base, 'drover');
}

function coordinatorUrl(value: string, source: string): string {
  try {
    return parseCoordinatorUrl(value);
  } catch (error) {
    if (isAgentError(error)) throw new CliError(`${source}: ${error.message}`);
    throw error;
  }
}
