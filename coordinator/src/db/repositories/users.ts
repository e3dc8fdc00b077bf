import type { StoredUser, UserRepository, UserWithPassword } from '../../domain/model/users.js';
import type { Db } from '../database.js';

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

export function createUserRepository(db: Db): UserRepository {
  const byEmail = db.prepare<[string], UserRow>('SELECT * FROM users WHERE email = ?');
  const byId = db.prepare<[string], UserRow>('SELECT * FROM users WHERE id = ?');
  const insert = db.prepare('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)');
  const count = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM users');
  const insertIfNone = db.prepare(
    `INSERT INTO users (id, email, password_hash, created_at)
     SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM users)`,
  );
  const setPassword = db.prepare<[string, string], { session_generation: number }>(
    `UPDATE users SET password_hash = ?, session_generation = session_generation + 1 WHERE id = ?
     RETURNING session_generation`,
  );
  const endSessions = db.prepare<[string], { session_generation: number }>(
    'UPDATE users SET session_generation = session_generation + 1 WHERE id = ? RETURNING session_generation',
  );
  return {
    async findByEmail(email) {
      const row = byEmail.get(email);
      return row ? toUser(row) : null;
    },
    async findById(id) {
      const row = byId.get(id);
      if (!row) return null;
      const { passwordHash: _omit, ...user } = toUser(row);
      return user;
    },
    async insert(user) {
      insert.run(user.id, user.email, user.passwordHash, user.createdAt);
    },
    async insertIfNone(user) {
      return insertIfNone.run(user.id, user.email, user.passwordHash, user.createdAt).changes === 1;
    },
    async count() {
      return count.get()?.n ?? 0;
    },
    async setPassword(id, passwordHash) {
      return setPassword.get(passwordHash, id)?.session_generation ?? null;
    },
    async endSessions(id) {
      return endSessions.get(id)?.session_generation ?? null;
    },
  };
}
