import type { Logger } from 'pino';
import { AppError } from './errors.js';
import type { Store } from './store.js';
import { COORDINATOR_VERSION } from './version.js';

/** How long the database may take to answer the health check's query. */
export const HEALTH_TIMEOUT_MS = 2_000;

/** What `GET /healthz` answers while the coordinator can serve (docs/operations.md, "Health"). */
export interface HealthReport {
  status: 'ok';
  version: string;
  database: 'sqlite' | 'postgres';
  /** On PostgreSQL, the connection that carries the other coordinators' events; null on SQLite. */
  clusterEvents: 'connected' | 'reconnecting' | null;
}

/**
 * The load balancer's question, "can this coordinator serve requests?": yes when its database
 * answers a trivial query within HEALTH_TIMEOUT_MS. A coordinator whose connection to the other
 * coordinators' events is down still serves (it reads again what it missed once back), so that
 * connection is reported, not failed on. While the coordinator shuts down, every request,
 * this one included, is answered 503 (http/app.ts).
 */
export class HealthCheck {
  constructor(
    private readonly store: Pick<Store, 'kind' | 'check'>,
    private readonly logger: Logger,
  ) {}

  async report(): Promise<HealthReport> {
    try {
      const { clusterEvents } = await this.store.check(HEALTH_TIMEOUT_MS);
      return { status: 'ok', version: COORDINATOR_VERSION, database: this.store.kind, clusterEvents };
    } catch (error) {
      // The reason (an address, a driver's message) goes to the log, not to an unauthenticated caller.
      this.logger.warn({ err: error, database: this.store.kind }, 'health check: the database does not answer');
      throw new AppError('unavailable', 'The database does not answer', { retryAfter: 5 });
    }
  }
}
