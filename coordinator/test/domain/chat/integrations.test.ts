import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { AuditLog } from '../../../src/domain/audit/audit-log.js';
import { createOrganization } from '../../../src/domain/orgs/bootstrap.js';
import type { ChatConnector, ConnectedWorkspace } from '../../../src/domain/chat/connector.js';
import { ChatIntegrationService, OAUTH_STATE_TTL_MS } from '../../../src/domain/chat/integrations.js';
import type { Repositories } from '../../../src/domain/model/repositories.js';
import { SecretBox } from '../../../src/domain/secrets/secret-box.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';
import type { UserActor } from '../../../src/domain/audit/audit-log.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const AT = new Date(T0).toISOString();

/** A Slack that accepts every code: what it is asked shows whether the flow went through. */
class FakeConnector implements ChatConnector {
  readonly provider = 'slack' as const;
  readonly exchanged: string[] = [];
  authorizeUrl(state: string, redirectUri: string): string {
    return `https://slack.example/authorize?state=${state}&redirect_uri=${encodeURIComponent(redirectUri)}`;
  }
  async exchangeCode(code: string): Promise<ConnectedWorkspace> {
    this.exchanged.push(code);
    return { teamId: 'T1', teamName: 'Acme', botUserId: 'U0BOT', accessToken: 'xoxb-1', scopes: 'commands' };
  }
  async afterConnect(): Promise<void> {}
}

/**
 * The OAuth flow's binding to whoever started it (docs/chat.md, "Connecting a workspace"): the
 * state is finished only in the browser that pressed Connect (its connect cookie's key), by the
 * same user, still an owner, within ten minutes, once. Every refusal connects nothing and does
 * not even exchange the code.
 */
describe('connecting a chat workspace', () => {
  let db: Db;
  let repos: Repositories;
  let connector: FakeConnector;
  let chat: ChatIntegrationService;
  let now: number;
  let orgId: string;
  let owner: UserActor;
  const ownerId = '11111111-1111-4111-8111-111111111111';
  const otherId = '22222222-2222-4222-8222-222222222222';

  beforeEach(async () => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db);
    for (const [id, email] of [
      [ownerId, 'owner@example.test'],
      [otherId, 'other@example.test'],
    ] as const) {
      await repos.users.insert({ id, email, passwordHash: 'x', createdAt: AT });
    }
    orgId = await createOrganization(repos, 'acme', ownerId, AT);
    await repos.orgs.addMember(orgId, otherId, 'owner', AT);
    owner = { orgId, userId: ownerId };
    now = T0;
    const clock = { now: () => now };
    connector = new FakeConnector();
    chat = new ChatIntegrationService({
      repos,
      connectors: { slack: connector },
      box: new SecretBox(randomBytes(32)),
      audit: new AuditLog(repos.audit, clock),
      clock,
      publicUrl: () => 'https://drover.example',
    });
  });
  afterEach(() => db.close());

  const stateOf = (authorizeUrl: string) => new URL(authorizeUrl).searchParams.get('state')!;
  const start = async (browserKey: string | null = null) => {
    const started = await chat.connect(owner, 'slack', browserKey);
    return { state: stateOf(started.authorizeUrl), browserKey: started.browserKey };
  };
  /** The refusal, and that nothing was connected nor exchanged. */
  const refusedWith = async (finishing: Promise<unknown>, statusCode: number, message: RegExp) => {
    await expect(finishing).rejects.toMatchObject({ statusCode, message: expect.stringMatching(message) });
    expect(connector.exchanged).toEqual([]);
    expect(await chat.list(orgId)).toEqual([]);
  };

  it('connects when the owner who started it finishes in the same browser', async () => {
    const { state, browserKey } = await start();
    expect(browserKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const done = await chat.complete('slack', { code: 'c1', state }, { userId: ownerId, browserKey });
    expect(done).toMatchObject({
      outcome: 'connected',
      orgId,
      integration: { teamId: 'T1', connectedByUserId: ownerId },
    });
    expect(connector.exchanged).toEqual(['c1']);
  });

  it('keeps the browser key the browser already holds, so that flows side by side in one browser all finish', async () => {
    const first = await start();
    const second = await start(first.browserKey);
    expect(second.browserKey).toBe(first.browserKey);
    // A cookie value that is no key of ours is replaced.
    expect((await start('not a key')).browserKey).not.toBe('not a key');
    await chat.complete('slack', { code: 'c1', state: first.state }, { userId: ownerId, browserKey: first.browserKey });
    await chat.complete(
      'slack',
      { code: 'c2', state: second.state },
      { userId: ownerId, browserKey: first.browserKey },
    );
    expect(connector.exchanged).toEqual(['c1', 'c2']);
  });

  it('refuses a browser without the connect cookie: the link sent to someone else', async () => {
    const { state } = await start();
    await refusedWith(
      chat.complete('slack', { code: 'c1', state }, { userId: ownerId, browserKey: null }),
      403,
      /^This Slack sign-in was started in another browser: .*Nothing was connected/,
    );
  });

  it("refuses another browser's connect cookie", async () => {
    const { state } = await start();
    const elsewhere = (await chat.connect({ orgId, userId: otherId }, 'slack', null)).browserKey;
    await refusedWith(
      chat.complete('slack', { code: 'c1', state }, { userId: ownerId, browserKey: elsewhere }),
      403,
      /started in another browser/,
    );
  });

  it("refuses another user's session in the starting browser", async () => {
    const { state, browserKey } = await start();
    await refusedWith(
      chat.complete('slack', { code: 'c1', state }, { userId: otherId, browserKey }),
      403,
      /^This Slack sign-in was started by another user: .*Nothing was connected$/,
    );
  });

  it('refuses an owner who is no longer one when the provider sends them back', async () => {
    const { state, browserKey } = await start();
    await repos.orgs.setRole(orgId, ownerId, 'member', AT);
    await refusedWith(
      chat.complete('slack', { code: 'c1', state }, { userId: ownerId, browserKey }),
      403,
      /^Only an owner of the organization connects a Slack workspace, and you no longer are one: nothing was connected$/,
    );
  });

  it('refuses a state after ten minutes, and a state used once already, even when that use was refused', async () => {
    const late = await start();
    now = T0 + OAUTH_STATE_TTL_MS;
    await refusedWith(
      chat.complete('slack', { code: 'c1', state: late.state }, { userId: ownerId, browserKey: late.browserKey }),
      400,
      /^This Slack sign-in is unknown, was already used or took longer than ten minutes: nothing was connected/,
    );
    const once = await start();
    await refusedWith(
      chat.complete('slack', { code: 'c1', state: once.state }, { userId: ownerId, browserKey: null }),
      403,
      /another browser/,
    );
    await refusedWith(
      chat.complete('slack', { code: 'c1', state: once.state }, { userId: ownerId, browserKey: once.browserKey }),
      400,
      /was already used/,
    );
  });
});
