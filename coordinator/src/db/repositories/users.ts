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
 * An email as accounts compare it (domain/emails.ts, `emailKey`): its ASCII letters in lower case,
 * every other character as it is, whatever the database's locale. SQLite's email columns are
 * `COLLATE NOCASE`, which folds ASCII only: the column itself (its unique indexes serve a plain `=`,
 * an `ORDER BY` sorts by it). PostgreSQL's `lower()` folds by the locale of its collation (`É` in
 * `en_US`, `C.UTF-8` too); under `COLLATE "C"` it folds `A` to `Z` only, and its result sorts by
 * bytes, as NOCASE does. Its indexes are on this expression (migration 0030).
 */
export const emailKey = (d: Dialect, expression: string): string =>
  d.name === 'sqlite' ? expression : `lower(${expression} COLLATE "C")`;

/** `column` is the email parameter `?` (the same account's: `emailKey`). */
export const sameEmail = (d: Dialect, column: string): string => `${emailKey(d, column)} = ${emailKey(d, '?')}`;

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
