import type { ChatIntegration, ChatIntegrationRepository, OAuthState } from '../../domain/model/chat-integrations.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import type { Role } from '../../domain/model/orgs.js';
import { can } from '@drover/shared';
import { command, one, query, run, type Database, type Flow } from '../sql/index.js';
import { lockOrg } from './parent-locks.js';

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

interface StateRow {
  org_id: string;
  user_id: string;
  provider: ChatProvider;
  browser_hash: string | null;
  created_at: string;
  expires_at: string;
}

// A reconnect by the same organization refreshes the row (same id); one by another organization
// changes nothing and returns no row.
const CONNECT = query<IntegrationRow, ChatIntegration>(
  `INSERT INTO chat_integrations AS c (id, org_id, provider, team_id, team_name, bot_user_id, access_token, scopes,
     connected_by_user_id, created_at)
   VALUES (@id, @orgId, @provider, @teamId, @teamName, @botUserId, @sealedAccessToken, @scopes,
     @connectedByUserId, @createdAt)
   ON CONFLICT (provider, team_id) DO UPDATE SET team_name = excluded.team_name,
     bot_user_id = excluded.bot_user_id, access_token = excluded.access_token, scopes = excluded.scopes,
     connected_by_user_id = excluded.connected_by_user_id
   WHERE c.org_id = excluded.org_id
   RETURNING *`,
);
/** The role of whoever connects, read under the organization's lock (a role change or removal takes it too). */
const CONNECTER_ROLE = query<{ role: Role }, [string, string]>(
  'SELECT role FROM memberships WHERE org_id = ? AND user_id = ?',
);
const BY_TEAM = query<IntegrationRow, [ChatProvider, string]>(
  'SELECT * FROM chat_integrations WHERE provider = ? AND team_id = ?',
);
const BY_ORG = query<IntegrationRow, [string]>(
  'SELECT * FROM chat_integrations WHERE org_id = ? ORDER BY created_at, id',
);
const IN_ORG = query<IntegrationRow, [string, string]>('SELECT * FROM chat_integrations WHERE org_id = ? AND id = ?');
const DELETE = command<[string, string]>('DELETE FROM chat_integrations WHERE org_id = ? AND id = ?');
const FORGET_STATES = command<[string]>('DELETE FROM chat_oauth_states WHERE expires_at < ?');
const INSERT_STATE = command<OAuthState>(
  `INSERT INTO chat_oauth_states (state_hash, org_id, user_id, provider, browser_hash, created_at, expires_at)
   VALUES (@stateHash, @orgId, @userId, @provider, @browserHash, @createdAt, @expiresAt)`,
);
const CONSUME_STATE = query<StateRow, { stateHash: string; provider: ChatProvider; now: string }>(
  `UPDATE chat_oauth_states SET used_at = @now
   WHERE state_hash = @stateHash AND provider = @provider AND used_at IS NULL AND expires_at > @now
   RETURNING org_id, user_id, provider, browser_hash, created_at, expires_at`,
);

/**
 * A connection is one INSERT ... ON CONFLICT on the workspace's unique index, whichever coordinator
 * it comes through, after its maker's role is read under the organization's lock (an owner
 * removed or demoted while the provider exchanged the code connects nothing); a state is consumed
 * by one UPDATE.
 */
export function createChatIntegrationRepository(db: Database): ChatIntegrationRepository {
  return {
    connect(integration) {
      type Outcome = Awaited<ReturnType<ChatIntegrationRepository['connect']>>;
      return db.transaction(function* (): Flow<Outcome> {
        yield* lockOrg(integration.orgId);
        const role = (yield* one(CONNECTER_ROLE, [integration.orgId, integration.connectedByUserId]))?.role;
        if (role === undefined || !can(role, 'chat.integrations')) return { outcome: 'not_owner' };
        const row = yield* one(CONNECT, integration);
        return row ? { outcome: 'connected', integration: toIntegration(row) } : { outcome: 'taken' };
      });
    },
    async listByOrg(orgId) {
      return (await db.all(BY_ORG, [orgId])).map(toIntegration);
    },
    async findInOrg(orgId, id) {
      const row = await db.one(IN_ORG, [orgId, id]);
      return row ? toIntegration(row) : null;
    },
    async findByTeam(provider, teamId) {
      const row = await db.one(BY_TEAM, [provider, teamId]);
      return row ? toIntegration(row) : null;
    },
    async delete(orgId, id) {
      return (await db.run(DELETE, [orgId, id])) > 0;
    },
    async addState(state) {
      await db.transaction(function* () {
        yield* run(FORGET_STATES, [state.createdAt]);
        yield* run(INSERT_STATE, state);
      });
    },
    async consumeState(stateHash, provider, now) {
      const row = await db.one(CONSUME_STATE, { stateHash, provider, now });
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
