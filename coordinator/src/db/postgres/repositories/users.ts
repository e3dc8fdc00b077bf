import type { UserRepository, UserWithPassword } from '../../../domain/model/users.js';
import type { PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
}

const toUser = (row: UserRow): UserWithPassword => ({
  id: row.id,
  email: row.email,
  passwordHash: row.password_hash,
  createdAt: row.created_at,
});

/** Emails compare without case, as SQLite's `COLLATE NOCASE` column does (the unique index is on lower(email)). */
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
    async count() {
      return (await all<{ n: number }>(pool, 'SELECT count(*) AS n FROM users'))[0]!.n;
    },
  };
}
