import fs from 'node:fs';
import os from 'node:os';
import { ENROLLMENT_TOKEN_PREFIX, generateEd25519KeyPair, privateKeyFromBase64, type AgentSelf } from '@drover/shared';
import { acquireDaemonLock } from './daemon/lock.js';
import { AgentError } from './errors.js';
import { getSelf, postEnroll } from './http/agent-api.js';
import { parseCoordinatorUrl } from './http/coordinator-url.js';
import { ServerClock } from './http/server-clock.js';
import { ensurePrivateDir } from './state/files.js';
import { refuseRootInAnotherUsersDir } from './state/owner.js';
import { loadEnrollment, saveEnrollment, savePrivateKey, type Enrollment } from './state/enrollment.js';
import { AGENT_VERSION } from './version.js';

export interface EnrollOptions {
  /** The coordinator's URL: its root or its `/v1` base URL. */
  url: string;
  /** The single-use enrollment token (`drve_...`). */
  token: string;
  stateDir: string;
  /** Display name; the coordinator defaults it to the hostname. */
  name?: string | undefined;
  /** Enroll again over an existing enrollment (a new key and a new agent id). */
  force?: boolean | undefined;
  hostname?: string;
  os?: string;
}

export interface EnrollResult {
  enrollment: Enrollment;
  /** The coordinator's view of the agent, from the signed self-check. */
  self: AgentSelf;
  /** The enrollment this one replaced (with --force). */
  replaced: Enrollment | null;
  /** The coordinator's clock minus this machine's, in ms, as measured from its answers. */
  clockOffsetMs: number;
}

/**
 * Enrolls this machine (docs/agent-protocol.md): makes an Ed25519 key pair locally, registers its public
 * half with the enrollment token, stores the key (0600) and the enrollment (0600) in the state
 * directory (0700), then proves the key works with a signed `GET /v1/agent/me`. The private key
 * never leaves the machine.
 */
export async function enrollAgent(options: EnrollOptions): Promise<EnrollResult> {
  const origin = parseCoordinatorUrl(options.url);
  const token = options.token.trim();
  if (!token.startsWith(ENROLLMENT_TOKEN_PREFIX)) {
    throw new AgentError(
      'bad_token',
      `An enrollment token starts with \`${ENROLLMENT_TOKEN_PREFIX}\`; create one in the dashboard (Agents, Enroll)`,
    );
  }
  refuseRootInAnotherUsersDir(options.stateDir, 'enroll');
  const made = !fs.existsSync(options.stateDir);
  ensurePrivateDir(options.stateDir);
  // Not under a running daemon (it would go on as the old agent), and none starts meanwhile.
  const release = acquireDaemonLock(options.stateDir);
  let enrolled = false;
  try {
    const result = await enrollUnlocked(options, origin, token);
    enrolled = true;
    return result;
  } finally {
    release();
    // A state directory this command made and left empty (the coordinator refused the token, say)
    // is not left behind; one holding a key (the token was spent) is kept.
    if (made && !enrolled) removeIfEmpty(options.stateDir);
  }
}

function removeIfEmpty(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // Not empty, or gone: kept as it is.
  }
}

async function enrollUnlocked(options: EnrollOptions, origin: string, token: string): Promise<EnrollResult> {
  const existing = loadExisting(options.stateDir, options.force === true);
  if (existing && !options.force) {
    throw new AgentError(
      'already_enrolled',
      `This machine is already enrolled as agent ${existing.agentId} with ${existing.url} ` +
        `(state in ${options.stateDir}); pass --force to enroll again as a new agent`,
    );
  }

  const keys = generateEd25519KeyPair();
  // Learns the coordinator's time from the enrollment's answer, so that the signed self-check
  // below passes on a machine whose clock is off (docs/agent.md, "Clocks").
  const clock = new ServerClock();
  const enrolled = await postEnroll(
    origin,
    {
      enrollmentToken: token,
      publicKey: keys.publicKey,
      hostname: options.hostname ?? os.hostname(),
      os: options.os ?? describeOs(),
      agentVersion: AGENT_VERSION,
      ...(options.name === undefined ? {} : { name: options.name }),
    },
    clock,
  );
  // The token is spent now: store the key first, so the agent can always prove who it is.
  savePrivateKey(options.stateDir, keys.privateKey);
  const enrollment: Enrollment = { url: origin, ...enrolled, enrolledAt: new Date().toISOString() };
  saveEnrollment(options.stateDir, enrollment);

  const self = await getSelf({
    origin,
    agentId: enrollment.agentId,
    privateKey: privateKeyFromBase64(keys.privateKey),
    clock,
  });
  return { enrollment, self, replaced: existing, clockOffsetMs: clock.offsetMs };
}

/** The current enrollment; with `force`, a damaged one counts as none. */
function loadExisting(stateDir: string, force: boolean): Enrollment | null {
  try {
    return loadEnrollment(stateDir);
  } catch (error) {
    if (force && error instanceof AgentError && error.code === 'bad_state') return null;
    throw error;
  }
}

/** `Linux 6.8.0-45-generic x64`, say. */
export function describeOs(): string {
  return `${os.type()} ${os.release()} ${os.arch()}`;
}
