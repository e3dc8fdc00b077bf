import type { Config } from '../src/config/config.js';
import { hashPassword } from '../src/domain/auth/passwords.js';

/** Each bootstrap password hashed once per test worker, as the coordinator would hash it. */
const hashes = new Map<string, Promise<string>>();

/**
 * `config` with its bootstrap password hashed already: a test coordinator's bootstrap then skips
 * the scrypt hash (0.1-0.25 s of CPU at each of the suite's hundreds of starts). Signing in with
 * the password works as with any bootstrap.
 */
export async function withHashedBootstrap(config: Config): Promise<Config> {
  const bootstrap = config.bootstrap;
  if (!bootstrap) return config;
  let hash = hashes.get(bootstrap.password);
  if (!hash) {
    hash = hashPassword(bootstrap.password);
    hashes.set(bootstrap.password, hash);
  }
  return { ...config, bootstrap: { ...bootstrap, passwordHash: await hash } };
}
