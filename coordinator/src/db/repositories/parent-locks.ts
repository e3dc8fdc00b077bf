import { one, query, type Flow } from '../sql/index.js';

/*
 * The parent rows whose children's writes must take turns across coordinators: on PostgreSQL
 * locked `FOR NO KEY UPDATE` until the transaction ends (inserts that only reference the row need
 * not wait); nothing on SQLite, whose single writer runs one flow at a time.
 */
const ORG = query<{ one: number }, [string]>((d) => `SELECT 1 AS one FROM orgs WHERE id = ? ${d.forNoKeyUpdate}`);
const APPLICATION = query<{ one: number }, [string]>(
  (d) => `SELECT 1 AS one FROM applications WHERE id = ? ${d.forNoKeyUpdate}`,
);

/** The organization's row: its members, triggers and storage bindings change one writer at a time. */
export function* lockOrg(orgId: string): Flow<void> {
  yield* one(ORG, [orgId]);
}

/** The application's row: its releases and device bindings change one writer at a time. */
export function* lockApplication(applicationId: string): Flow<void> {
  yield* one(APPLICATION, [applicationId]);
}
