import pg from 'pg';
import { markConnectFailure } from '../../database-errors.js';

export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;
/** A pool or one of its clients (inside a transaction): what a query runs on. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

const INT8 = 20;
const TIMESTAMPTZ = 1184;
const parseTimestamp = pg.types.getTypeParser(TIMESTAMPTZ) as (text: string) => Date;

/**
 * How values come back: instants as the ISO 8601 strings the domain uses everywhere
 * (`2026-01-02T03:04:05.678Z`), and bigint columns (sequences, counts, sizes, Unix ms) as
 * numbers: every value Drover stores in one is a safe integer. Set per pool, never on the
 * driver's global parsers.
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8) return (text: string) => Number(text);
    if (oid === TIMESTAMPTZ) return (text: string) => parseTimestamp(text).toISOString();
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export const CONNECTION_TIMEOUT_MS = 5_000;

/**
 * The pool's connections: an error met while one is opened is marked as such (database-errors.ts),
 * so that a server refusing connections (for whatever reason it gives) is answered 503, not 500.
 */
class PoolConnection extends pg.Client {
  override connect(): Promise<pg.Client>;
  override connect(callback: (err: Error) => void): void;
  override connect(callback?: (err: Error) => void): Promise<pg.Client> | void {
    if (!callback) {
      return super.connect().catch((error: Error) => {
        throw markConnectFailure(error);
      });
    }
    super.connect((error: Error) => callback(error instanceof Error ? markConnectFailure(error) : error));
  }
}

export interface PoolOptions {
  /** Connections at most (node-postgres's default is 10). */
  max?: number;
  /** Told of an error on an idle connection (the server went away); such a connection is dropped. */
  onIdleError?: (error: Error) => void;
}

/**
 * A connection pool on `url` (config/database-config.ts validated it). The pool opens connections
 * as queries need them; an idle connection that fails is dropped and reported to `onIdleError`,
 * never thrown: the next query opens a new one.
 */
export function createPool(url: string, options: PoolOptions = {}): PgPool {
  const pool = new pg.Pool({
    connectionString: url,
    Client: PoolConnection,
    max: options.max ?? 10,
    // A query waits at most this long for a connection (the server down or unreachable), then
    // fails: answered 503 (database-errors.ts) instead of hanging.
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
    types,
    application_name: 'drover-coordinator',
  });
  pool.on('error', (error) => options.onIdleError?.(error));
  return pool;
}

/** A connection taken from the pool for several statements, and how to give it back. */
export interface CheckedOut {
  client: PgClient;
  /** Gives the connection back; closed instead when `error` is given or the connection failed meanwhile. */
  release(error?: Error): void;
}

/**
 * A connection of the pool for several statements (a transaction). node-postgres emits `error` on
 * a connection that fails while taken (PostgreSQL restarted, the backend terminated by
 * `pg_terminate_backend`), and the pool listens on idle ones only: unheard, that event ended the
 * coordinator (an uncaught exception). Here it is heard while the connection is out: the
 * statements fail on their own (answered 503, database-errors.ts) and the connection is closed at
 * release, never handed to the next caller.
 */
export async function checkOut(pool: PgPool): Promise<CheckedOut> {
  const client = await pool.connect();
  let failed: Error | undefined;
  const onError = (error: Error) => {
    failed ??= error;
  };
  client.on('error', onError);
  return {
    client,
    release(error) {
      client.removeListener('error', onError);
      client.release(error ?? failed);
    },
  };
}
