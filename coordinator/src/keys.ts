import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Repositories } from './domain/model/repositories.js';
import {
  loadOrCreateSecretBox,
  loadSharedSecretBox,
  SECRETS_KEY_FILE,
  type SecretBox,
} from './domain/secrets/secret-box.js';
import {
  loadOrCreateServerKey,
  loadSharedServerKey,
  SERVER_KEY_FILE,
  SERVER_KEY_SECRET,
  type ServerKey,
} from './domain/secrets/server-key.js';
import { isoNow, type Clock } from './util/clock.js';

/**
 * The coordinator's two keys kept outside the repositories' rows: its Ed25519 identity (agents
 * pin it, manifests are signed with it) and the key that seals chat tokens. On SQLite, files in
 * the data directory; on PostgreSQL, rows of `server_secrets` that every coordinator on the
 * database shares, the data directory's files adopted into a database that has none
 * (docs/operations.md, "Several coordinators").
 */
export async function loadKeys(
  database: 'sqlite' | 'postgres',
  dataDir: string,
  repos: Pick<Repositories, 'serverSecrets' | 'agents'>,
  clock: Clock,
  logger: Logger,
): Promise<{ serverKey: ServerKey; secretBox: SecretBox }> {
  const keyFile = path.join(dataDir, SERVER_KEY_FILE);
  // Made now (neither the file nor, on PostgreSQL, the database held one): a new identity.
  const made =
    !fs.existsSync(keyFile) && (database === 'sqlite' || (await repos.serverSecrets.get(SERVER_KEY_SECRET)) === null);
  const keys = database === 'sqlite' ? loadSqliteKeys(dataDir) : await loadSharedKeys(dataDir, repos, clock, logger);
  if (made) await warnOfANewIdentity(database, keyFile, repos, logger);
  return keys;
}

function loadSqliteKeys(dataDir: string): { serverKey: ServerKey; secretBox: SecretBox } {
  return { serverKey: loadOrCreateServerKey(dataDir), secretBox: loadOrCreateSecretBox(dataDir) };
}

/**
 * A server key made for a database whose agents pinned another one (the key file lost, or a data
 * directory restored without it): they run jobs as before, but refuse every manifest it signs, so
 * nothing would tell the operator before the next over-the-air update failed on every device.
 */
async function warnOfANewIdentity(
  database: 'sqlite' | 'postgres',
  keyFile: string,
  repos: Pick<Repositories, 'agents'>,
  logger: Logger,
): Promise<void> {
  const agents = (await repos.agents.listLastSeen()).length;
  if (agents === 0) return;
  const putBack =
    database === 'sqlite'
      ? `stop the coordinator, put the previous key back (a backup holds it: tar -xzf <backup> -C ${path.dirname(keyFile)} ${SERVER_KEY_FILE}) and start it again`
      : `stop every coordinator, put the previous key back as ${SERVER_KEY_SECRET} in server_secrets and start them again`;
  logger.error(
    { agents, file: keyFile },
    `a new server key was made (none was stored), but ${agents} agent${agents === 1 ? ' was' : 's were'} ` +
      'enrolled with the previous one: they refuse every over-the-air manifest this one signs until each enrolls ' +
      `again. To keep them, ${putBack} (docs/operations.md, "The data directory")`,
  );
}

async function loadSharedKeys(
  dataDir: string,
  repos: Pick<Repositories, 'serverSecrets'>,
  clock: Clock,
  logger: Logger,
): Promise<{ serverKey: ServerKey; secretBox: SecretBox }> {
  const at = isoNow(clock);
  const server = await loadSharedServerKey(dataDir, repos.serverSecrets, at);
  const secrets = await loadSharedSecretBox(dataDir, repos.serverSecrets, at);
  for (const [ignored, file] of [
    [server.fileIgnored, SERVER_KEY_FILE],
    [secrets.fileIgnored, SECRETS_KEY_FILE],
  ] as const) {
    if (ignored) {
      logger.warn(
        { file },
        "the data directory's key differs from the one the database holds for every coordinator; the database's is used",
      );
    }
  }
  return { serverKey: server.key, secretBox: secrets.box };
}
