import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCoordinator, createLogger, loadConfig, type Coordinator } from '@drover/coordinator';

export const BENCH_OWNER_EMAIL = 'bench@example.test';
/** The bootstrapped owner's credentials (`POST /v1/auth/login`). */
export const BENCH_OWNER = { email: BENCH_OWNER_EMAIL, password: 'bench password' };

export interface BenchCoordinator {
  coordinator: Coordinator;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The bootstrapped organization and its owner. */
  orgId: string;
  ownerId: string;
  close(): Promise<void>;
}

/**
 * A real coordinator built in this process by `createCoordinator` (the same composition root as
 * `drover-coordinator start`), listening on a loopback port with its data in a temp directory
 * that is removed on close. Log level `warn`, like a production install that is not debugging.
 */
export async function startBenchCoordinator(env: Record<string, string> = {}): Promise<BenchCoordinator> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-bench-'));
  const config = loadConfig(
    {
      DROVER_BOOTSTRAP_EMAIL: BENCH_OWNER_EMAIL,
      DROVER_BOOTSTRAP_PASSWORD: BENCH_OWNER.password,
      DROVER_BOOTSTRAP_ORG: 'bench',
      ...env,
    },
    { port: '0', host: '127.0.0.1', dataDir, logLevel: 'warn' },
  );
  const coordinator = await createCoordinator(config, createLogger(config.logLevel));
  const close = async () => {
    try {
      await coordinator.close();
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  };
  try {
    const url = await coordinator.app.listen({ port: 0, host: '127.0.0.1' });
    const owner = await coordinator.ctx.repos.users.findByEmail(BENCH_OWNER_EMAIL);
    const org = owner && (await coordinator.ctx.repos.orgs.listForUser(owner.id))[0];
    if (!owner || !org) throw new Error('the bootstrapped owner and organization were not found');
    return { coordinator, url, orgId: org.id, ownerId: owner.id, close };
  } catch (error) {
    await close();
    throw error;
  }
}
