import type { ApiToken } from '../model/api-tokens.js';
import type { Repositories } from '../model/repositories.js';
import { notFound } from '../../errors.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { issueToken, parseIssueRequest, type IssueRequest } from './api-tokens.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import { checkGrantTargets } from './scopes.js';
import type { Role } from '../model/orgs.js';
import { requirePermission } from '../orgs/permissions.js';

/** What the audit log keeps of a token: never the plaintext, the hash or the hint. */
const auditView = (token: ApiToken) => ({
  name: token.name,
  scopes: token.scopes,
  rateLimit: token.rateLimit,
  expiresAt: token.expiresAt,
});

/**
 * API tokens of an organization (docs/management.md, "API tokens and grants"): issued with rights
 * no wider than the organization's, revoked for good, each with its audit entry.
 */
export class ApiTokenService {
  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'apiTokens' | 'agents' | 'triggers' | 'storageBindings'>;
      audit: AuditLog;
      clock: Clock;
    },
  ) {}

  list(actor: UserActor): Promise<ApiToken[]> {
    return this.deps.repos.apiTokens.listByOrg(actor.orgId);
  }

  async get(actor: UserActor, tokenId: string): Promise<ApiToken> {
    const token = await this.deps.repos.apiTokens.findInOrg(actor.orgId, tokenId);
    if (!token) throw notFound('API token');
    return token;
  }

  /** The token, and its plaintext: returned this once, never stored. */
  async issue(actor: UserActor, request: IssueRequest): Promise<{ token: ApiToken; plaintext: string }> {
    const { repos, audit, clock } = this.deps;
    const { orgId } = actor;
    const fields = parseIssueRequest(request, clock.now());
    await checkGrantTargets(fields.scopes, {
      agents: (ids) => repos.agents.listByIds(orgId, ids),
      triggers: (ids) => repos.triggers.listByIds(orgId, ids),
      bindings: () => repos.storageBindings.listByOrg(orgId),
    });
    const issued = issueToken({ orgId, userId: actor.userId, ...fields, createdAt: isoNow(clock) });
    await repos.apiTokens.insert(issued.token, issued.hash);
    await audit.record(userAction(actor, 'api_token.issue', 'api_token', issued.token.id, auditView(issued.token)));
    return { token: issued.token, plaintext: issued.plaintext };
  }

  /**
   * Revokes a token; revoking it again answers the same token, and only the first is audited.
   * One's own token any role that issues tokens may revoke; another member's, only an owner (403).
   */
  async revoke(actor: UserActor & { role: Role }, tokenId: string): Promise<ApiToken> {
    const { repos, audit, clock } = this.deps;
    const before = await this.get(actor, tokenId);
    if (before.userId !== actor.userId) requirePermission(actor.role, 'api_tokens.revoke_any');
    const revoked = await repos.apiTokens.revoke(actor.orgId, before.id, isoNow(clock));
    if (!revoked) throw notFound('API token');
    const { token, first } = revoked;
    // The call that revoked it, not each of the calls that read it unrevoked at once.
    if (first) await audit.record(userAction(actor, 'api_token.revoke', 'api_token', token.id, { name: token.name }));
    return token;
  }
}
