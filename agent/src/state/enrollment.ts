import fs from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { AGENT_ID_PATTERN, decodeRawKey, privateKeyFromBase64 } from '@drover/shared';
import { AgentError } from '../errors.js';
import { parseCoordinatorUrl } from '../http/coordinator-url.js';
import { describeFileError, readFileIfExists, writeFileAtomic } from './files.js';
import { userNameOf } from '@drover/shared';
import { currentUid, isPermissionError, userLabel } from './owner.js';
import { statePath } from './paths.js';

/** What the agent remembers about its enrollment (`<state-dir>/agent.json`). */
export interface Enrollment {
  /** The coordinator's public URL (origin, without `/v1`). */
  url: string;
  agentId: string;
  orgId: string;
  /** The coordinator's Ed25519 public key, pinned at enrollment (standard base64). */
  serverPublicKey: string;
  enrolledAt: string;
}

export function loadEnrollment(stateDir: string): Enrollment | null {
  const file = statePath(stateDir, 'enrollment');
  const text = readFileIfExists(file);
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new AgentError('bad_state', `${file} is not valid JSON; enroll again with --force`, { cause });
  }
  const problem = enrollmentProblem(value);
  if (problem) throw new AgentError('bad_state', `${file} is damaged (${problem}); enroll again with --force`);
  const enrollment = value as Enrollment;
  // `url` is the one field an operator edits (the coordinator moved: docs/operations.md): taken as
  // enroll takes it, so that a trailing slash or `/v1` does not put `//v1/...` in every request.
  let url: string;
  try {
    url = parseCoordinatorUrl(enrollment.url);
  } catch (error) {
    const reason = error instanceof AgentError ? error.message : String(error);
    throw new AgentError('bad_state', `${file}: \`url\` is not a coordinator URL: ${reason}`);
  }
  return { ...enrollment, url };
}

function enrollmentProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const v = value as Record<string, unknown>;
  for (const key of ['url', 'agentId', 'orgId', 'serverPublicKey', 'enrolledAt'] as const) {
    // Said as it is: `agentId` is missing, when it stood there as a number, sent one looking for nothing.
    if (v[key] === undefined) return `\`${key}\` is missing`;
    if (typeof v[key] !== 'string') return `\`${key}\` is not text (${kindOf(v[key])})`;
  }
  if (!AGENT_ID_PATTERN.test(v.agentId as string)) return '`agentId` is not a UUID';
  if (!decodeRawKey(v.serverPublicKey as string)) return '`serverPublicKey` is not a 32-byte key';
  return null;
}

const kindOf = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'a list'
      : typeof value === 'object'
        ? 'an object'
        : `a ${typeof value}`;

export function saveEnrollment(stateDir: string, enrollment: Enrollment): void {
  const { url, agentId, orgId, serverPublicKey, enrolledAt } = enrollment;
  writeFileAtomic(
    statePath(stateDir, 'enrollment'),
    `${JSON.stringify({ url, agentId, orgId, serverPublicKey, enrolledAt }, null, 2)}\n`,
  );
}

/** Stores the private seed (standard base64) with mode 0600. */
export function savePrivateKey(stateDir: string, seedBase64: string): void {
  writeFileAtomic(statePath(stateDir, 'privateKey'), `${seedBase64}\n`);
}

/**
 * Makes the agent key readable by its owner only (docs/agent-protocol.md: mode 0600) when someone loosened
 * it. Returns the mode it had when it was changed, else null. A key that cannot be made private
 * (another user's, copied in by root; a read-only file system) stops the agent with a bad_state
 * error saying what to run, rather than an unexpected error, or an agent signing with a key
 * other users can read.
 */
export function tightenPrivateKeyMode(stateDir: string): number | null {
  const file = statePath(stateDir, 'privateKey');
  const stat = fs.statSync(file);
  const mode = stat.mode & 0o777;
  if ((mode & 0o077) === 0) return null;
  try {
    fs.chmodSync(file, 0o600);
  } catch (error) {
    throw new AgentError(
      'bad_state',
      `The agent key ${file} is readable by other users (mode ${mode.toString(8)}) and cannot be made private: ` +
        keyModeCause(file, stat.uid, error),
      { cause: error },
    );
  }
  return mode;
}

function keyModeCause(file: string, owner: number, error: unknown): string {
  const me = currentUid();
  if (isPermissionError(error) && me !== null && owner !== me) {
    const user = userNameOf(me) ?? String(me);
    return (
      `it belongs to ${userLabel(owner)}, and this runs as ${userLabel(me)}; ` +
      `give it back: \`sudo chown ${user}: ${file} && sudo chmod 600 ${file}\``
    );
  }
  return `${describeFileError(error, path.dirname(file))}; run \`chmod 600 ${file}\` once it can be changed`;
}

export function loadPrivateKey(stateDir: string): KeyObject {
  const file = statePath(stateDir, 'privateKey');
  const text = readFileIfExists(file);
  if (text === null) throw new AgentError('bad_state', `The agent key ${file} is missing; enroll again with --force`);
  try {
    return privateKeyFromBase64(text.trim());
  } catch (cause) {
    throw new AgentError('bad_state', `The agent key ${file} is damaged; enroll again with --force`, { cause });
  }
}
