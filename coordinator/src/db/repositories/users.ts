import type { Account, UserRepository, UserWithPassword } from '../../domain/model/users.js';
import { command, lock, query, run, type Database, type Dialect } from '../sql/index.js';

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
  session_generation: number;
  password_by_inviter: boolean | number;
}

const toUser = (row: UserRow): Account => ({
  id: row.id,
  email: row.email,
  passwordHash: row.password_hash,
  createdAt: row.created_at,
  sessionGeneration: row.session_generation,
  passwordByInviter: Boolean(row.password_by_inviter),
});

/**
 * `column` equals the email parameter `?` whatever its case: SQLite's email columns are
 * `COLLATE NOCASE` (their unique indexes serve a plain `=`); PostgreSQL's indexes are on lower(email).
 */
export const sameEmail = (d: Dialect, column: string): string =>
  d.name === 'sqlite' ? `${column} = ?` : `lower(${column}) = lower(?)`;

type UserParams = [id: string, email: string, passwordHash: string, createdAt: string];

const BY_EMAIL = query<UserRow, [string]>((d) => `SELECT * FROM users WHERE ${sameEmail(d, 'email')}`);
const BY_ID = query<UserRow, [string]>('SELECT * FROM users WHERE id = ?');
const INSERT = command<UserParams>('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)');
const INSERT_IF_NONE = command<UserParams>(
  `INSERT INTO users (id, email, password_hash, created_at)
   SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM users)`,
);
const COUNT = query<{ n: number }, []>('SELECT count(*) AS n FROM users');
// A password change keeps `password_by_inviter`: whoever knew the inviter's password could have
// made it (the inviter among them); only single sign-on proves the email (REPLACE_INVITERS_PASSWORD).
const SET_PASSWORD = query<{ session_generation: number }, [string, string]>(
  `UPDATE users SET password_hash = ?, session_generation = session_generation + 1
   WHERE id = ? RETURNING session_generation`,
);
const REPLACE_INVITERS_PASSWORD = query<{ session_generation: number }, [string, string]>(
  `UPDATE users SET password_hash = ?, password_by_inviter = FALSE, session_generation = session_generation + 1
   WHERE id = ? AND password_by_inviter RETURNING session_generation`,
);
const END_SESSIONS = query<{ session_generation: number }, [string]>(
  'UPDATE users SET session_generation = session_generation + 1 WHERE id = ? RETURNING session_generation',
);

const paramsOf = (user: UserWithPassword): UserParams => [user.id, user.email, user.passwordHash, user.createdAt];

export function createUserRepository(db: Database): UserRepository {
  return {
    async findByEmail(email) {
      const row = await db.one(BY_EMAIL, [email]);
      return row ? toUser(row) : null;
    },
    async findById(id) {
      const row = await db.one(BY_ID, [id]);
      if (!row) return null;
      const { passwordHash: _hash, passwordByInviter: _byInviter, ...user } = toUser(row);
      return user;
    },
    async insert(user) {
      await db.run(INSERT, paramsOf(user));
    },
    /**
     * The bootstrap's owner. Coordinators starting at once on an empty database take turns
     * (PostgreSQL's lock; SQLite's single writer), so only the first finds it empty.
     */
    insertIfNone(user) {
      return db.transaction(function* () {
        yield* lock('users', 'first');
        return (yield* run(INSERT_IF_NONE, paramsOf(user))) === 1;
      });
    },
    async count() {
      return (await db.one(COUNT, []))?.n ?? 0;
    },
    async setPassword(id, passwordHash) {
      return (await db.one(SET_PASSWORD, [passwordHash, id]))?.session_generation ?? null;
    },
    async replaceInvitersPassword(id, passwordHash) {
      return (await db.one(REPLACE_INVITERS_PASSWORD, [passwordHash, id]))?.session_generation ?? null;
    },
    async endSessions(id) {
      return (await db.one(END_SESSIONS, [id]))?.session_generation ?? null;
    },
  };
}
