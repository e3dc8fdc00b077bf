import type {
  ChatIntegration,
  ChatIntegrationRepository,
  OAuthState,
} from '../../../domain/model/chat-integrations.js';
import type { ChatProvider } from '../../../domain/model/triggers.js';
import type { PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface IntegrationRow {
  id: string;
  org_id: string;
  provider: ChatProvider;
  team_id: string;
  team_name: string;
  bot_user_id: string | null;
  access_token: string | null;
  scopes: string;
  connected_by_user_id: string;
  created_at: string;
}

const toIntegration = (r: IntegrationRow): ChatIntegration => ({
  id: r.id,
  orgId: r.org_id,
  provider: r.provider,
  teamId: r.team_id,
  teamName: r.team_name,
  botUserId: r.bot_user_id,
  sealedAccessToken: r.access_token,
  scopes: r.scopes,
  connectedByUserId: r.connected_by_user_id,
  createdAt: r.created_at,
});

/**
 * A connection is one INSERT ... ON CONFLICT on the workspace's unique index: a reconnect by the
 * same organization refreshes the row (same id), one by another organization changes nothing,
 * whichever coordinator each comes through. A state is consumed by one UPDATE.
 */
export function createChatIntegrationRepository(pool: PgPool): ChatIntegrationRepository {
  return {
    async connect(i) {
      const row = await one<IntegrationRow>(
        pool,
        `INSERT INTO chat_integrations AS c (id, org_id, provider, team_id, team_name, bot_user_id, access_token,
           scopes, connected_by_user_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (provider, team_id) DO UPDATE SET team_name = excluded.team_name,
           bot_user_id = excluded.bot_user_id, access_token = excluded.access_token, scopes = excluded.scopes,
           connected_by_user_id = excluded.connected_by_user_id
         WHERE c.org_id = excluded.org_id
         RETURNING *`,
        [
          i.id,
          i.orgId,
          i.provider,
          i.teamId,
          i.teamName,
          i.botUserId,
          i.sealedAccessToken,
          i.scopes,
          i.connectedByUserId,
          i.createdAt,
        ],
      );
      return row ? { outcome: 'connected', integration: toIntegration(row) } : { outcome: 'taken' };
    },
    async listByOrg(orgId) {
      const rows = await all<IntegrationRow>(
        pool,
        'SELECT * FROM chat_integrations WHERE org_id = $1 ORDER BY created_at, id',
        [orgId],
      );
      return rows.map(toIntegration);
    },
    async findInOrg(orgId, id) {
      const row = await one<IntegrationRow>(pool, 'SELECT * FROM chat_integrations WHERE org_id = $1 AND id = $2', [
        orgId,
        id,
      ]);
      return row ? toIntegration(row) : null;
    },
    async findByTeam(provider, teamId) {
      const row = await one<IntegrationRow>(
        pool,
        'SELECT * FROM chat_integrations WHERE provider = $1 AND team_id = $2',
        [provider, teamId],
      );
      return row ? toIntegration(row) : null;
    },
    async delete(orgId, id) {
      return (await run(pool, 'DELETE FROM chat_integrations WHERE org_id = $1 AND id = $2', [orgId, id])) > 0;
    },
    async addState(state: OAuthState) {
      await inTransaction(pool, async (tx) => {
        await run(tx, 'DELETE FROM chat_oauth_states WHERE expires_at < $1', [state.createdAt]);
        await run(
          tx,
          `INSERT INTO chat_oauth_states (state_hash, org_id, user_id, provider, browser_hash, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [
            state.stateHash,
            state.orgId,
            state.userId,
            state.provider,
            state.browserHash,
            state.createdAt,
            state.expiresAt,
          ],
        );
      });
    },
    async consumeState(stateHash, provider, now) {
      const row = await one<{
        org_id: string;
        user_id: string;
        provider: ChatProvider;
        browser_hash: string | null;
        created_at: string;
        expires_at: string;
      }>(
        pool,
        `UPDATE chat_oauth_states SET used_at = $1
         WHERE state_hash = $2 AND provider = $3 AND used_at IS NULL AND expires_at > $1
         RETURNING org_id, user_id, provider, browser_hash, created_at, expires_at`,
        [now, stateHash, provider],
      );
      if (!row) return null;
      return {
        stateHash,
        orgId: row.org_id,
        userId: row.user_id,
        provider: row.provider,
        browserHash: row.browser_hash,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
      };
    },
  };
}
