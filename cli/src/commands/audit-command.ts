import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import {
  AUDIT_ACTIONS,
  AUDIT_ACTOR_TYPES,
  AUDIT_TARGET_TYPES,
  nearestName,
  shortId,
  type ActorType,
} from '@drover/shared';
import { agentNamerFor } from '../agent-names.js';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { jsonLine, printJson } from '../output/json.js';
import { sayNextPage } from '../output/next-page.js';
import { readEveryPage } from '../output/pages.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { agentId, isUuid, pick } from '../session/lookups.js';
import { loadSettings } from '../settings.js';
import { parseMoment } from '../moment.js';

type AuditEntry = Schema<'AuditEntry'>;

interface AuditFlags {
  action?: string;
  actorType?: string;
  actor?: string;
  targetType?: string;
  target?: string;
  since?: string;
  until?: string;
  limit: string;
  cursor?: string;
  all?: boolean;
  json?: boolean;
}

/** The metadata keys that name an entry's target (shown in the TARGET column, not again in DETAILS). */
const NAME_KEYS = ['name', 'email', 'slug'] as const;

/**
 * `drover audit`: the organization's audit log, newest first (owners; `GET /orgs/:orgId/audit`),
 * a page at a time or, with `--all`, every page: with `--json`, one entry a line as the pages
 * come, for a SIEM or `jq`.
 */
export function configureAuditCommand(program: Command, rt: Runtime): void {
  program
    .command('audit')
    .description("the organization's audit log, newest first: who did what, when (owners; a session)")
    .option('--action <action>', 'only entries of this action, e.g. api_token.revoke (docs/management.md, "Audit log")')
    .option('--actor-type <type>', `only entries by this kind of actor (${AUDIT_ACTOR_TYPES.join(', ')})`)
    .option(
      '--actor <who>',
      "only entries by this actor: an id, a member's email, or with --actor-type agent or api_token its name",
    )
    .option(
      '--target-type <type>',
      'only entries about this kind of target (agent, trigger, api_token, user, enrollment_token, ...)',
    )
    .option('--target <id>', 'only entries about the target of this id')
    .option('--since <when>', 'only entries at or after this time: 2026-11-30T08:00:00Z, or a duration ago (24h, 7d)')
    .option('--until <when>', 'only entries before this time (same forms as --since)')
    .option('--limit <n>', 'how many a page (1 to 200)', '50')
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--all', 'every page, not just the first (with --json: one entry a line)')
    .option('--json', "print the API's answer as JSON (with --all: one entry a line)")
    .action(async (flags: AuditFlags, command: Command) => {
      const limit = integerFlag('--limit', flags.limit, 1, 200);
      const action = checkAction(flags.action);
      const actorType = checkActorType(flags.actorType);
      checkTargetType(flags.targetType);
      const now = Date.now();
      const createdAfter = flags.since === undefined ? undefined : parseMoment(flags.since, '--since', now);
      const createdBefore = flags.until === undefined ? undefined : parseMoment(flags.until, '--until', now);
      if (createdAfter !== undefined && createdBefore !== undefined && createdAfter >= createdBefore) {
        throw new CliError(`--since: ${createdAfter} is not before --until ${createdBefore}`);
      }
      if (flags.target !== undefined && flags.target.trim() === '') throw new CliError('--target: expected an id');
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const actorId = flags.actor === undefined ? undefined : await actorIdOf(caller, flags.actor, actorType);
      const path = `/orgs/${await caller.orgId()}/audit`;
      const query = {
        action,
        actorType,
        actorId,
        targetType: flags.targetType,
        targetId: flags.target,
        createdAfter,
        createdBefore,
        limit,
      };
      const page = (cursor: string | undefined) =>
        caller.api.call<AuditEntry[]>('GET', path, { query: { ...query, cursor } });

      if (!flags.all) {
        const answer = await page(flags.cursor);
        if (flags.json) printJson(rt, answer.body);
        else rt.out(answer.body.length === 0 ? 'No entries.\n' : await auditTable(caller, answer.body));
        sayNextPage(rt, answer.headers, 'entries', 'drover audit', {
          action,
          'actor-type': actorType,
          actor: actorId,
          'target-type': flags.targetType,
          target: flags.target,
          since: createdAfter,
          until: createdBefore,
          limit: limit === 50 ? undefined : limit,
        });
        return;
      }
      const all: AuditEntry[] = [];
      await readEveryPage(page, flags.cursor, (entries) => {
        if (flags.json) for (const entry of entries) rt.out(jsonLine(entry));
        else all.push(...entries);
      });
      if (!flags.json) rt.out(all.length === 0 ? 'No entries.\n' : await auditTable(caller, all));
    });
}

function checkAction(action: string | undefined): string | undefined {
  if (action === undefined || (AUDIT_ACTIONS as readonly string[]).includes(action)) return action;
  const near = nearestName(action, AUDIT_ACTIONS);
  throw new CliError(
    `--action: no action \`${action}\` is recorded${near ? ` (did you mean ${near}?)` : ''}; ` +
      'docs/management.md, "Audit log", lists them',
  );
}

/** A target type no entry can have (a typo) is refused, as an action is: it would list nothing. */
function checkTargetType(type: string | undefined): void {
  if (type === undefined || (AUDIT_TARGET_TYPES as readonly string[]).includes(type)) return;
  const near = nearestName(type, AUDIT_TARGET_TYPES);
  throw new CliError(
    `--target-type: no target type \`${type}\` is recorded${near ? ` (did you mean ${near}?)` : ''}; ` +
      `expected one of ${AUDIT_TARGET_TYPES.join(', ')}`,
  );
}

function checkActorType(type: string | undefined): ActorType | undefined {
  if (type === undefined || (AUDIT_ACTOR_TYPES as readonly string[]).includes(type)) return type as ActorType;
  throw new CliError(`--actor-type: expected one of ${AUDIT_ACTOR_TYPES.join(', ')}, got \`${type}\``);
}

/** The actor's id: given as one, a member by email, or an agent or API token by name (with its --actor-type). */
async function actorIdOf(caller: SessionCaller, who: string, type: ActorType | undefined): Promise<string> {
  if (isUuid(who)) return who;
  if (who.includes('@')) {
    const members = await caller.api.get<Schema<'Member'>[]>(`/orgs/${await caller.orgId()}/members`);
    const member = members.find((m) => m.email.toLowerCase() === who.toLowerCase());
    if (!member)
      throw new CliError(`--actor: no member \`${who}\` in the organization (a former member: give the user id)`);
    return member.userId;
  }
  if (type === 'agent') return agentId(caller, who);
  if (type === 'api_token') {
    const tokens = await caller.api.get<Schema<'ApiToken'>[]>(`/orgs/${await caller.orgId()}/api-tokens`);
    return pick(tokens, who, 'API token', (t) => t.name).id;
  }
  throw new CliError(
    `--actor: expected an id, a member's email, or a name with --actor-type agent or api_token, got \`${who}\``,
  );
}

/**
 * The entries as a table: when, the action, who acted and what it acted on by name where the
 * organization still has it (members by email, API tokens and agents by name), and the rest of
 * the entry's metadata as `key=value` (a value with spaces, quotes or `=` as JSON; a null one left out).
 */
async function auditTable(caller: SessionCaller, entries: AuditEntry[]): Promise<string> {
  const orgPath = `/orgs/${await caller.orgId()}`;
  const needs = (type: string) => entries.some((e) => e.actorType === type || e.targetType === type);
  const [members, tokens, agentName] = await Promise.all([
    needs('user') ? caller.api.get<Schema<'Member'>[]>(`${orgPath}/members`) : [],
    needs('api_token') ? caller.api.get<Schema<'ApiToken'>[]>(`${orgPath}/api-tokens`) : [],
    needs('agent')
      ? agentNamerFor(
          caller,
          entries
            .flatMap((e) => [e.actorType === 'agent' ? e.actorId : null, e.targetType === 'agent' ? e.targetId : null])
            .filter((id): id is string => id !== null && isUuid(id)),
        )
      : (id: string) => id,
  ]);
  const emails = new Map(members.map((m) => [m.userId, m.email]));
  const tokenNames = new Map(tokens.map((t) => [t.id, t.name]));
  const nameOf = (type: string | null, id: string | null): string | undefined => {
    if (id === null) return undefined;
    if (type === 'user') return emails.get(id);
    if (type === 'api_token') return tokenNames.get(id);
    if (type === 'agent') return agentName(id) === id ? undefined : agentName(id);
    return undefined;
  };
  const rows = entries.map((entry) => {
    const actor =
      entry.actorType === 'system'
        ? 'coordinator'
        : `${entry.actorType === 'api_token' ? 'token' : entry.actorType} ${
            nameOf(entry.actorType, entry.actorId) ?? (entry.actorId ? shortId(entry.actorId) : '')
          }`.trim();
    const namedBy = NAME_KEYS.find((key) => typeof entry.metadata[key] === 'string' && entry.metadata[key] !== '');
    const targetName =
      nameOf(entry.targetType, entry.targetId) ??
      (namedBy ? (entry.metadata[namedBy] as string) : entry.targetId ? shortId(entry.targetId) : undefined);
    const target = entry.targetType ? `${entry.targetType} ${targetName ?? ''}`.trim() : undefined;
    const details = Object.entries(entry.metadata)
      .filter(([key, value]) => key !== namedBy && value !== null && value !== undefined)
      .map(
        ([key, value]) =>
          `${key}=${typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`,
      )
      .join(' ');
    return [shortTime(entry.createdAt), entry.action, actor, target, details];
  });
  return formatTable(['TIME', 'ACTION', 'ACTOR', 'TARGET', 'DETAILS'], rows);
}
