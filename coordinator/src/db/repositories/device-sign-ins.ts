import type {
  DeviceSignInRepository,
  DeviceSignInStatus,
  DeviceSignInView,
  NewDeviceSignIn,
} from '../../domain/model/device-sign-ins.js';
import { command, isUniqueViolation, one, query, run, type Database } from '../sql/index.js';

interface ViewRow {
  user_code: string;
  status: DeviceSignInStatus;
  client: string | null;
  requested_from: string;
  created_at: string;
  expires_at: string;
}

const VIEW_COLUMNS = 'user_code, status, client, requested_from, created_at, expires_at';

const FORGET = command<[string]>('DELETE FROM device_sign_ins WHERE expires_at < ?');
const PENDING_FROM = query<{ count: number }, [string, string]>(
  `SELECT count(*) AS count FROM device_sign_ins WHERE client_key = ? AND status = 'pending' AND expires_at > ?`,
);
// Counts no further than the cap: a full table answers as soon as it has seen that many.
const STORED = query<{ n: number }, [number]>('SELECT count(*) AS n FROM (SELECT 1 FROM device_sign_ins LIMIT ?)');
const INSERT = command<NewDeviceSignIn>(
  `INSERT INTO device_sign_ins (device_code_hash, user_code, client, requested_from, client_key, created_at, expires_at)
   VALUES (@deviceCodeHash, @userCode, @client, @requestedFrom, @clientKey, @createdAt, @expiresAt)`,
);
const BY_USER_CODE = query<ViewRow, [string, string]>(
  `SELECT ${VIEW_COLUMNS} FROM device_sign_ins WHERE user_code = ? AND status <> 'used' AND expires_at > ?`,
);
const DECIDE = query<ViewRow, Record<string, unknown>>(
  `UPDATE device_sign_ins SET status = @status, user_id = @userId, session_generation = @sessionGeneration,
     decided_at = @at
   WHERE user_code = @userCode AND status = 'pending' AND expires_at > @at
   RETURNING ${VIEW_COLUMNS}`,
);
const HAND_OUT = query<
  { user_id: string; session_generation: number },
  { hash: string; now: string; earliest: string }
>(
  `UPDATE device_sign_ins SET status = 'used', polled_at = @now
   WHERE device_code_hash = @hash AND status = 'approved' AND expires_at > @now
     AND (polled_at IS NULL OR polled_at <= @earliest)
   RETURNING user_id, session_generation`,
);
const BY_DEVICE_CODE = query<
  { status: DeviceSignInStatus | 'used'; expires_at: string; polled_at: string | null },
  [string]
>('SELECT status, expires_at, polled_at FROM device_sign_ins WHERE device_code_hash = ?');
const POLLED = command<[string, string]>('UPDATE device_sign_ins SET polled_at = ? WHERE device_code_hash = ?');

const toView = (row: ViewRow): DeviceSignInView => ({
  userCode: row.user_code,
  status: row.status,
  client: row.client,
  requestedFrom: row.requested_from,
  requestedAt: row.created_at,
  expiresAt: row.expires_at,
});

/** Command-line sign-ins through the browser: each change one statement or one transaction. */
export function createDeviceSignInRepository(db: Database): DeviceSignInRepository {
  return {
    async start(signIn, limits) {
      try {
        return await db.transaction(
          function* () {
            yield* run(FORGET, [signIn.createdAt]);
            const pending = yield* one(PENDING_FROM, [signIn.clientKey, signIn.createdAt]);
            if ((pending?.count ?? 0) >= limits.perAddress) return 'limited' as const;
            // What is left after FORGET has not expired, whatever its status.
            if (((yield* one(STORED, [limits.total]))?.n ?? 0) >= limits.total) return 'full' as const;
            yield* run(INSERT, signIn);
            return 'started' as const;
          },
          { immediate: true },
        );
      } catch (error) {
        if (isUniqueViolation(error)) return 'code_taken';
        throw error;
      }
    },
    async findByUserCode(userCode, now) {
      const row = await db.one(BY_USER_CODE, [userCode, now]);
      return row ? toView(row) : null;
    },
    async decide(userCode, decision) {
      return db.transaction(function* () {
        const changed = yield* one(DECIDE, { userCode, ...decision });
        if (changed) return toView(changed);
        return (yield* one(BY_USER_CODE, [userCode, decision.at])) ? ('decided' as const) : null;
      });
    },
    async poll(hash, now, intervalMs) {
      // One read, then at most one single-statement write: a poll of an unknown code (anyone may
      // send one) takes no lock. A poll within the interval after the previous one is refused.
      const earliest = new Date(Date.parse(now) - intervalMs).toISOString();
      const row = await db.one(BY_DEVICE_CODE, [hash]);
      if (!row) return { outcome: 'unknown' };
      if (row.status === 'used' || row.expires_at <= now) return { outcome: 'expired' };
      if (row.polled_at !== null && row.polled_at > earliest) {
        return { outcome: 'too_soon', earliest: new Date(Date.parse(row.polled_at) + intervalMs).toISOString() };
      }
      if (row.status === 'approved') {
        // Handed out once: of two polls at once, one finds it already used.
        const handedOut = await db.one(HAND_OUT, { hash, now, earliest });
        if (!handedOut) return { outcome: 'expired' };
        return { outcome: 'approved', userId: handedOut.user_id, sessionGeneration: handedOut.session_generation };
      }
      await db.run(POLLED, [now, hash]);
      return row.status === 'denied' ? { outcome: 'denied' } : { outcome: 'pending', expiresAt: row.expires_at };
    },
  };
}
