import os from 'node:os';
import path from 'node:path';
import { AgentError } from '../errors.js';

/** Files of the agent's state directory. */
export const STATE_FILES = {
  /** `{url, agentId, orgId, serverPublicKey, enrolledAt}`, mode 0600. */
  enrollment: 'agent.json',
  /** The agent's Ed25519 private seed, standard base64 and a newline, mode 0600. */
  privateKey: 'agent-ed25519.key',
} as const;

/**
 * Where the agent keeps its key and enrollment: `$DROVER_AGENT_STATE_DIR` when set, else
 * `/var/lib/drover-agent` for root (a system service), else `~/.drover-agent`.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.()): string {
  const fromEnv = env.DROVER_AGENT_STATE_DIR;
  if (fromEnv) {
    // Only blanks is no path: it would be a directory named ` ` in the current one.
    if (fromEnv.trim() === '') throw noDirectory('DROVER_AGENT_STATE_DIR', fromEnv);
    return path.resolve(fromEnv);
  }
  if (uid === 0) return '/var/lib/drover-agent';
  return path.join(os.homedir(), '.drover-agent');
}

/**
 * The state directory of a command: its `--state-dir` when given, else the default above. An
 * empty or blank one is refused naming the flag (else `Cannot create the state directory : ENOENT`).
 */
export function stateDirOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag === undefined ? defaultStateDir(env) : givenDir('--state-dir', flag);
}

/** A directory given as a flag (`--workflows-dir`): empty or blank is refused, as it is no path (else the current directory). */
export function givenDir(flag: string, value: string): string {
  if (value.trim() === '') throw noDirectory(flag, value);
  return value;
}

const noDirectory = (setting: string, value: string) =>
  new AgentError('bad_config', `${setting} expects a directory path, got \`${value}\``);

export const statePath = (stateDir: string, file: keyof typeof STATE_FILES): string =>
  path.join(stateDir, STATE_FILES[file]);
