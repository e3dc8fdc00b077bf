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
  repos: Pick<Repositories, 'serverSecrets'>,
  clock: Clock,
  logger: Logger,
): Promise<{ serverKey: ServerKey; secretBox: SecretBox }> {
  if (database === 'sqlite') {
    return { serverKey: loadOrCreateServerKey(dataDir), secretBox: loadOrCreateSecretBox(dataDir) };
  }
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
