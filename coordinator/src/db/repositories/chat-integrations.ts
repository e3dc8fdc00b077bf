import type { ChatIntegration, ChatIntegrationRepository, OAuthState } from '../../domain/model/chat-integrations.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import type { Db } from '../database.js';

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

export function createChatIntegrationRepository(db: Db): ChatIntegrationRepository {
  const byTeam = db.prepare<[string, string], IntegrationRow>(
    'SELECT * FROM chat_integrations WHERE provider = ? AND team_id = ?',
  );
  const insert = db.prepare(
    `INSERT INTO chat_integrations (id, org_id, provider, team_id, team_name, bot_user_id, access_token, scopes,
       connected_by_user_id, created_at)
     VALUES (@id, @orgId, @provider, @teamId, @teamName, @botUserId, @sealedAccessToken, @scopes,
       @connectedByUserId, @createdAt)`,
  );
  const refresh = db.prepare(
    `UPDATE chat_integrations SET team_name = @teamName, bot_user_id = @botUserId, access_token = @sealedAccessToken,
       scopes = @scopes, connected_by_user_id = @connectedByUserId
     WHERE id = @id`,
  );
  const connect = db.transaction((i: ChatIntegration) => {
    const existing = byTeam.get(i.provider, i.teamId);
    if (existing && existing.org_id !== i.orgId) return { outcome: 'taken' as const };
    if (existing) {
      const again = { ...i, id: existing.id, createdAt: existing.created_at };
      refresh.run(again);
      return { outcome: 'connected' as const, integration: again };
    }
    insert.run(i);
    return { outcome: 'connected' as const, integration: i };
  });
  const listByOrg = db.prepare<[string], IntegrationRow>(
    'SELECT * FROM chat_integrations WHERE org_id = ? ORDER BY created_at, id',
  );
  const inOrg = db.prepare<[string, string], IntegrationRow>(
    'SELECT * FROM chat_integrations WHERE org_id = ? AND id = ?',
  );
  const remove = db.prepare('DELETE FROM chat_integrations WHERE org_id = ? AND id = ?');

  const forgetStates = db.prepare('DELETE FROM chat_oauth_states WHERE expires_at < ?');
  const insertState = db.prepare(
    `INSERT INTO chat_oauth_states (state_hash, org_id, user_id, provider, browser_hash, created_at, expires_at)
     VALUES (@stateHash, @orgId, @userId, @provider, @browserHash, @createdAt, @expiresAt)`,
  );
  const addState = db.transaction((state: OAuthState) => {
    forgetStates.run(state.createdAt);
    insertState.run(state);
  });
  const consume = db.prepare<
    [string, string, string, string],
    {
      org_id: string;
      user_id: string;
      provider: ChatProvider;
      browser_hash: string | null;
      created_at: string;
      expires_at: string;
    }
  >(
    `UPDATE chat_oauth_states SET used_at = ?
     WHERE state_hash = ? AND provider = ? AND used_at IS NULL AND expires_at > ?
     RETURNING org_id, user_id, provider, browser_hash, created_at, expires_at`,
  );

  return {
    async connect(integration) {
      return connect(integration);
    },
    async listByOrg(orgId) {
      return listByOrg.all(orgId).map(toIntegration);
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toIntegration(row) : null;
    },
    async findByTeam(provider, teamId) {
      const row = byTeam.get(provider, teamId);
      return row ? toIntegration(row) : null;
    },
    async delete(orgId, id) {
      return remove.run(orgId, id).changes > 0;
    },
    async addState(state) {
      addState(state);
    },
    async consumeState(stateHash, provider, now) {
      const row = consume.get(now, stateHash, provider, now);
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
