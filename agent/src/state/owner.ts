import fs from 'node:fs';
import path from 'node:path';
import { AgentError } from '../errors.js';
import { userNameOf } from '@drover/shared';

/**
 * Who owns what, in names a technician types: the agent's files belong to the user the service
 * runs as (drover-agent under the Debian package), and a command run as another user (root by
 * sudo, a login user) meets permission errors or writes files the service cannot read.
 */

/** `drover-agent`, or `uid 1234` for a user /etc/passwd does not name (`sudo -u '#1234'` takes it). */
export const userLabel = (uid: number): string => userNameOf(uid) ?? `uid ${uid}`;

/** What `sudo -u` takes for `uid`: its name, else `#1234`. */
export const sudoUser = (uid: number): string => userNameOf(uid) ?? `'#${uid}'`;

/** What `chown` takes for `uid`: its name, else the number. */
const chownUser = (uid: number): string => userNameOf(uid) ?? String(uid);

/** The user this process runs as, or null where there are no uids (Windows). */
export const currentUid = (): number | null => process.getuid?.() ?? null;

/**
 * The owner of `file`, or of the nearest directory above it this user may look at (in a 0700
 * directory of another user nothing can be looked at, but the directory itself can); null when
 * nothing can be.
 */
export function ownerOf(file: string): number | null {
  let current = path.resolve(file);
  for (;;) {
    try {
      return fs.statSync(current).uid;
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return null;
      current = parent;
    }
  }
}

/**
 * Why `file` cannot be read or written by this user, and what to do: run the command as the
 * files' owner, or give the files to this user (`dir`, the state directory, with everything in
 * it). `Cannot read /var/lib/drover-agent/agent.json: permission denied: it belongs to root, and
 * this runs as drover-agent; ...`.
 */
export function describePermissionDenied(verb: string, file: string, dir = path.dirname(file)): string {
  const owner = ownerOf(file);
  const me = currentUid();
  const said = `${verb} ${file}: permission denied`;
  if (owner === null || me === null) return said;
  const runAs = `run it as ${userLabel(owner)} (\`sudo -u ${sudoUser(owner)} drover-agent …\`)`;
  // Never advise giving the files to root: the service (drover-agent) could not read them any more.
  const fix =
    owner === me
      ? `check the modes of ${dir} and what is in it`
      : me === 0
        ? runAs
        : `${runAs}, or, if the agent runs as ${userLabel(me)}, give it the directory: \`sudo chown -R ${chownUser(me)}: ${dir}\``;
  return `${said}: it belongs to ${userLabel(owner)}, and this runs as ${userLabel(me)}; ${fix}`;
}

export const isPermissionError = (error: unknown): boolean => {
  const code = (error as NodeJS.ErrnoException)?.code;
  return code === 'EACCES' || code === 'EPERM';
};

/**
 * Root enrolling into, or running the agent on, the state directory of another user
 * (drover-agent's, under the Debian package) leaves files to root, mode 0600, that the service,
 * which runs as that user, cannot read: the key and agent.json (it would fail at every start),
 * the lifetime counters (started again from zero), reports waiting in the outbox (set aside as
 * damaged: a job's result never delivered), the journals and directories of the jobs root ran.
 * Refused, with the command that works, rather than chown-ed afterwards: nothing is left to root
 * if the command stops half-way (docs/agent.md, "The state directory").
 */
export function refuseRootInAnotherUsersDir(stateDir: string, command: 'enroll' | 'run'): void {
  if (currentUid() !== 0) return; // another user cannot write there at all: the error says so
  let owner: number;
  try {
    owner = fs.statSync(stateDir).uid;
  } catch {
    return; // not there yet: made by root, for root
  }
  if (owner === 0) return;
  const asRoot =
    command === 'run'
      ? ` (to run the agent as root, give root the directory first: \`chown -R root: ${stateDir}\`)`
      : '';
  throw new AgentError(
    'bad_state',
    `This state directory (${stateDir}) belongs to ${userLabel(owner)}, and the agent runs as that user: ` +
      `files root writes there would be unreadable to it. Run \`sudo -u ${sudoUser(owner)} drover-agent ${command} …\` instead${asRoot}`,
  );
}
