import type { StoredUser, UserRepository, UserWithPassword } from '../../../domain/model/users.js';
import type { PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
  session_generation: number;
}

const toUser = (row: UserRow): UserWithPassword & StoredUser => ({
  id: row.id,
  email: row.email,
  passwordHash: row.password_hash,
  createdAt: row.created_at,
  sessionGeneration: row.session_generation,
});

/**
 * Emails compare without case, as SQLite's `COLLATE NOCASE` column does (the unique index is on
 * lower(email)). The bootstrap's insert locks the table against other writers (reads go on), so
 * two coordinators starting at once cannot both find it empty.
 */
export function createUserRepository(pool: PgPool): UserRepository {
  return {
    async findByEmail(email) {
      const row = await one<UserRow>(pool, 'SELECT * FROM users WHERE lower(email) = lower($1)', [email]);
      return row ? toUser(row) : null;
    },
    async findById(id) {
      const row = await one<UserRow>(pool, 'SELECT * FROM users WHERE id = $1', [id]);
      if (!row) return null;
      const { passwordHash: _omit, ...user } = toUser(row);
      return user;
    },
    async insert(user) {
      await run(pool, 'INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4)', [
        user.id,
        user.email,
        user.passwordHash,
        user.createdAt,
      ]);
    },
    async insertIfNone(user) {
      return inTransaction(pool, async (tx) => {
        await run(tx, 'LOCK TABLE users IN EXCLUSIVE MODE');
        const inserted = await run(
          tx,
          `INSERT INTO users (id, email, password_hash, created_at)
           SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM users)`,
          [user.id, user.email, user.passwordHash, user.createdAt],
        );
        return inserted === 1;
      });
    },
    async count() {
      return (await all<{ n: number }>(pool, 'SELECT count(*) AS n FROM users'))[0]!.n;
    },
    async setPassword(id, passwordHash) {
      const row = await one<{ session_generation: number }>(
        pool,
        `UPDATE users SET password_hash = $1, session_generation = session_generation + 1 WHERE id = $2
         RETURNING session_generation`,
        [passwordHash, id],
      );
      return row?.session_generation ?? null;
    },
    async endSessions(id) {
      const row = await one<{ session_generation: number }>(
        pool,
        'UPDATE users SET session_generation = session_generation + 1 WHERE id = $1 RETURNING session_generation',
        [id],
      );
      return row?.session_generation ?? null;
    },
  };
}
