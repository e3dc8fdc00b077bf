import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { can } from '../orgs/permissions.js';
import type { ChatIntegration } from '../model/chat-integrations.js';
import type { Repositories } from '../model/repositories.js';
import type { ChatProvider } from '../model/triggers.js';
import { AppError, conflict, forbidden, notFound } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { ChatProviderError, type ChatConnectors, type ChatConnector } from './connector.js';

/** How long an OAuth flow may take from the dashboard's "Connect" to the provider's callback. */
export const OAUTH_STATE_TTL_MS = 10 * 60_000;

/** A browser key: 32 random bytes, base64url (what the connect cookie holds). */
const BROWSER_KEY = /^[A-Za-z0-9_-]{43}$/;

const PROVIDER_NAMES: Record<ChatProvider, string> = { slack: 'Slack', discord: 'Discord' };
const TEAM_WORDS: Record<ChatProvider, string> = { slack: 'workspace', discord: 'server' };
const SETTINGS: Record<ChatProvider, string> = {
  slack: 'DROVER_SLACK_CLIENT_ID, DROVER_SLACK_CLIENT_SECRET and DROVER_SLACK_SIGNING_SECRET',
  discord:
    'DROVER_DISCORD_APPLICATION_ID, DROVER_DISCORD_PUBLIC_KEY, DROVER_DISCORD_CLIENT_SECRET and DROVER_DISCORD_BOT_TOKEN',
};

/** A connected workspace as the dashboard sees it: never its token. */
export interface ChatIntegrationView {
  id: string;
  provider: ChatProvider;
  teamId: string;
  teamName: string;
  scopes: string;
  connectedByUserId: string;
  createdAt: string;
}

export const toIntegrationView = (i: ChatIntegration): ChatIntegrationView => ({
  id: i.id,
  provider: i.provider,
  teamId: i.teamId,
  teamName: i.teamName,
  scopes: i.scopes,
  connectedByUserId: i.connectedByUserId,
  createdAt: i.createdAt,
});

/** Where the OAuth flow ends: the organization's integrations page, with what happened. */
export type OAuthCompletion =
  | { outcome: 'connected'; orgId: string; integration: ChatIntegrationView }
  | { outcome: 'failed'; orgId: string; message: string };

const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');

const sameHash = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Who finishes an OAuth flow: the signed-in user, and the key of their browser's connect cookie. */
export interface OAuthFinisher {
  userId: string;
  /** The connect cookie's value, or null when the browser sent none. */
  browserKey: string | null;
}

/**
 * Chat workspaces connected to organizations (docs/chat.md, "Connecting a workspace"): an owner
 * starts the provider's OAuth flow, the provider sends the browser back with a code that is
 * exchanged for the workspace, which is stored with its token sealed. A workspace belongs to one
 * organization. Connecting and disconnecting are audited.
 *
 * The flow is bound to the browser and the owner that started it: the `state` is single use and
 * valid ten minutes, and it is finished only by the same user, signed in, in the browser holding
 * the key the connect cookie was given, while they are still an owner of the organization.
 * Otherwise anyone owning an organization could send a workspace's admin a real consent link and
 * have that workspace connected to their organization.
 */
export class ChatIntegrationService {
  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'chatIntegrations' | 'orgs'>;
      connectors: ChatConnectors;
      box: SecretBox;
      audit: AuditLog;
      clock: Clock;
      /** The coordinator's public URL, read at each call (known only once listening). */
      publicUrl: () => string;
    },
  ) {}

  /** The provider's connector, or 409 when this coordinator has no app credentials for it. */
  connector(provider: ChatProvider): ChatConnector {
    const connector = this.deps.connectors[provider];
    if (!connector) {
      throw conflict(
        `${PROVIDER_NAMES[provider]} is not set up on this coordinator: its operator sets ${SETTINGS[provider]} (docs/chat.md)`,
      );
    }
    return connector;
  }

  /** Whether each provider is set up on this coordinator. */
  providers(): Record<ChatProvider, boolean> {
    return { slack: Boolean(this.deps.connectors.slack), discord: Boolean(this.deps.connectors.discord) };
  }

  redirectUri(provider: ChatProvider): string {
    return `${this.deps.publicUrl()}/v1/chat/${provider}/oauth/callback`;
  }

  /**
   * Starts the OAuth flow (owners): the address to send the browser to, valid ten minutes, and
   * the browser key for its connect cookie: the one it already holds (flows started side by side
   * in one browser share it), or a new one.
   */
  async connect(
    actor: UserActor,
    provider: ChatProvider,
    browserKey: string | null,
  ): Promise<{ authorizeUrl: string; expiresAt: string; browserKey: string }> {
    const connector = this.connector(provider);
    const key =
      browserKey !== null && BROWSER_KEY.test(browserKey) ? browserKey : randomBytes(32).toString('base64url');
    const state = randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    const expiresAt = isoAt(now + OAUTH_STATE_TTL_MS);
    await this.deps.repos.chatIntegrations.addState({
      stateHash: sha256(state),
      orgId: actor.orgId,
      userId: actor.userId,
      provider,
      browserHash: sha256(key),
      createdAt: isoAt(now),
      expiresAt,
    });
    return { authorizeUrl: connector.authorizeUrl(state, this.redirectUri(provider)), expiresAt, browserKey: key };
  }

  /**
   * Finishes the flow the provider sent the browser back from. The state is used up whatever
   * happens next. A refusal is an error, and nothing is connected: an unknown, used or expired
   * state (400); another browser than the one that started it, another user than the owner who
   * started it, or an owner no longer one (403). What the provider answered (consent denied, a
   * stale code) and a workspace that is another organization's are a `failed` outcome, to show
   * on the organization's integrations page.
   */
  async complete(
    provider: ChatProvider,
    query: { code?: string | undefined; state?: string | undefined; error?: string | undefined },
    finisher: OAuthFinisher,
  ): Promise<OAuthCompletion> {
    const connector = this.connector(provider);
    const { repos, clock, box, audit } = this.deps;
    const name = PROVIDER_NAMES[provider];
    const noLongerOwner = () =>
      forbidden(
        `Only an owner of the organization connects a ${name} ${TEAM_WORDS[provider]}, and you no longer are one: nothing was connected`,
      );
    const state = query.state
      ? await repos.chatIntegrations.consumeState(sha256(query.state), provider, isoAt(clock.now()))
      : null;
    if (!state) {
      throw new AppError(
        'bad_request',
        `This ${name} sign-in is unknown, was already used or took longer than ten minutes: nothing was connected; start again from the dashboard`,
      );
    }
    if (
      state.browserHash === null ||
      finisher.browserKey === null ||
      !sameHash(state.browserHash, sha256(finisher.browserKey))
    ) {
      throw forbidden(
        `This ${name} sign-in was started in another browser: it can be finished only in the browser that pressed Connect. Nothing was connected; start again from the dashboard's Integrations page`,
      );
    }
    if (finisher.userId !== state.userId) {
      throw forbidden(
        `This ${name} sign-in was started by another user: it can be finished only by the owner who pressed Connect, signed in. Nothing was connected`,
      );
    }
    const role = await repos.orgs.roleOf(state.orgId, state.userId);
    if (role === null || !can(role, 'chat.integrations')) {
      throw noLongerOwner();
    }
    const orgId = state.orgId;
    if (query.error !== undefined || !query.code) {
      const why = query.error === 'access_denied' ? 'the app was not allowed' : (query.error ?? 'no code came back');
      return { outcome: 'failed', orgId, message: `${name} was not connected: ${why}` };
    }
    try {
      const workspace = await connector.exchangeCode(query.code, this.redirectUri(provider));
      // Before anything is stored: a failure here (Discord refusing the command's registration)
      // leaves nothing connected, as the answer says. Registering it again is harmless.
      await connector.afterConnect(workspace);
      const result = await repos.chatIntegrations.connect({
        id: newId(),
        orgId,
        provider,
        teamId: workspace.teamId,
        teamName: workspace.teamName,
        botUserId: workspace.botUserId,
        sealedAccessToken: workspace.accessToken === null ? null : box.seal(workspace.accessToken),
        scopes: workspace.scopes,
        connectedByUserId: state.userId,
        createdAt: isoAt(clock.now()),
      });
      if (result.outcome === 'not_owner') {
        // Removed or demoted while the provider exchanged the code: as if it had happened before.
        throw noLongerOwner();
      }
      if (result.outcome === 'taken') {
        return {
          outcome: 'failed',
          orgId,
          message: `${name} workspace ${workspace.teamName} is connected to another organization: disconnect it there first`,
        };
      }
      const view = toIntegrationView(result.integration);
      await audit.record(
        userAction({ orgId, userId: state.userId }, 'chat_integration.connect', 'chat_integration', view.id, {
          provider,
          teamId: view.teamId,
          teamName: view.teamName,
        }),
      );
      return { outcome: 'connected', orgId, integration: view };
    } catch (error) {
      if (error instanceof ChatProviderError) {
        return { outcome: 'failed', orgId, message: `${name} was not connected: ${error.message}` };
      }
      throw error;
    }
  }

  async list(orgId: string): Promise<ChatIntegrationView[]> {
    return (await this.deps.repos.chatIntegrations.listByOrg(orgId)).map(toIntegrationView);
  }

  /** Disconnects a workspace (owners): its chat triggers stop firing and say why. */
  async disconnect(actor: UserActor, id: string): Promise<ChatIntegrationView> {
    const { repos, audit } = this.deps;
    const integration = await repos.chatIntegrations.findInOrg(actor.orgId, id);
    if (!integration || !(await repos.chatIntegrations.delete(actor.orgId, id))) throw notFound('Chat integration');
    const view = toIntegrationView(integration);
    await audit.record(
      userAction(actor, 'chat_integration.disconnect', 'chat_integration', id, {
        provider: view.provider,
        teamId: view.teamId,
        teamName: view.teamName,
      }),
    );
    return view;
  }

  /** The workspace's token, opened; null when it has none or is not connected. */
  async tokenOf(provider: ChatProvider, teamId: string): Promise<string | null> {
    const integration = await this.deps.repos.chatIntegrations.findByTeam(provider, teamId);
    return integration?.sealedAccessToken ? this.deps.box.open(integration.sealedAccessToken) : null;
  }
}
