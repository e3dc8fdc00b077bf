import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import { collect } from '../params.js';
import type { Runtime } from '../runtime.js';
import { agentId, bindingId } from '../session/lookups.js';
import { loadSettings } from '../settings.js';
import { describeGrant, describeLimits, type Grant } from './token-command.js';

type ApiToken = Schema<'ApiToken'>;
type IssuedApiToken = Schema<'IssuedApiToken'>;

/** The latest expiry the coordinator takes (docs/management.md, "API tokens"). */
const LATEST_EXPIRY_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * `--expires-in` as the seconds the token lives (`expiresInSeconds`): the coordinator counts them
 * from the issue on its own clock, so a machine whose clock is off does not make the token live
 * longer or shorter than asked. A duration that ends past the year 9999 is refused naming the
 * option (past the year 275760 no Date holds it: an "unexpected error" otherwise).
 */
function expiryIn(text: string): number {
  const ms = parseDuration(text, '--expires-in');
  if (!(Date.now() + ms <= LATEST_EXPIRY_MS))
    throw new CliError(`--expires-in: must end by the year 9999, got \`${text}\``);
  return Math.max(1, Math.round(ms / 1000));
}

interface CreateFlags {
  name: string;
  trigger: string[];
  agent: string[];
  storage?: string;
  storageBinding: string[];
  limitPerMinute?: string;
  limitPerHour?: string;
  limitPerDay?: string;
  expiresIn?: string;
  json?: boolean;
}

type Permission = Extract<Grant, { type: 'storage' }>['permissions'][number];
const PERMISSIONS: readonly Permission[] = ['read', 'write', 'delete'];
const isPermission = (p: string): p is Permission => (PERMISSIONS as readonly string[]).includes(p);

/** `drover api-token create|list|revoke`: the organization's API tokens, for CI and scripts. */
export function configureApiTokenCommand(program: Command, rt: Runtime): void {
  const group = program.command('api-token').description("the organization's API tokens (a session)");

  group
    .command('create')
    .description('issue a token; prints it (shown only now: keep it in a CI secret)')
    .requiredOption('--name <name>', 'its name')
    .option('--trigger <id>', 'a trigger it may run (repeatable)', collect, [])
    .option('--agent <id-or-name>', 'an agent it may list, with its workflows (repeatable)', collect, [])
    .option('--storage <permissions>', 'file access: read, write, delete, comma-separated')
    .option(
      '--storage-binding <id-or-name>',
      'with --storage: a binding it covers (repeatable; default: all)',
      collect,
      [],
    )
    .option('--limit-per-minute <n>', 'the most runs it may start in a minute (default: no limit)')
    .option('--limit-per-hour <n>', 'the most runs in an hour')
    .option('--limit-per-day <n>', 'the most runs in a day')
    .option('--expires-in <duration>', 'when it stops working, e.g. 90d (default: never)')
    .option('--json', "print the API's answer as JSON (the token included)")
    .action(async (flags: CreateFlags, command: Command) => {
      const limits = {
        rateLimitPerMinute: limit(flags.limitPerMinute, '--limit-per-minute'),
        rateLimitPerHour: limit(flags.limitPerHour, '--limit-per-hour'),
        rateLimitPerDay: limit(flags.limitPerDay, '--limit-per-day'),
      };
      const permissions = flags.storage === undefined ? null : storagePermissions(flags.storage);
      if (permissions === null && flags.storageBinding.length > 0)
        throw new CliError('--storage-binding needs --storage');
      const expiresInSeconds = flags.expiresIn === undefined ? undefined : expiryIn(flags.expiresIn);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const scopes = await grants(caller, flags, permissions);
      const issued = await caller.api.post<IssuedApiToken>(`/orgs/${await caller.orgId()}/api-tokens`, {
        name: flags.name,
        scopes,
        ...limits,
        ...(expiresInSeconds === undefined ? {} : { expiresInSeconds }),
      } satisfies RequestBody<'issueApiToken'>);
      if (flags.json) return printJson(rt, issued);
      rt.out(`${issued.token}\n`);
      rt.err(`Issued the API token ${issued.name} (${issued.id}); it is shown only now\n`);
    });

  group
    .command('list')
    .description('the tokens, newest first, revoked ones included')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const tokens = await caller.api.get<ApiToken[]>(`/orgs/${await caller.orgId()}/api-tokens`);
      if (flags.json) return printJson(rt, tokens);
      if (tokens.length === 0) return rt.out('No API tokens.\n');
      const rows = tokens.map((t) => [
        t.id,
        t.name,
        t.hint,
        state(t),
        t.scopes.length === 0 ? 'none' : t.scopes.map(describeGrant).join('; '),
        describeLimits(t.rateLimit),
        t.expiresAt === null ? 'never' : shortTime(t.expiresAt),
      ]);
      rt.out(formatTable(['ID', 'NAME', 'HINT', 'STATE', 'GRANTS', 'LIMITS', 'EXPIRES'], rows));
    });

  group
    .command('revoke')
    .description('revoke a token: it stops working at once')
    .argument('<token-id>', 'the token (its id, not its secret)')
    .option('--json', "print the API's answer as JSON")
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const revoked = await caller.api.delete<ApiToken>(
        `/orgs/${await caller.orgId()}/api-tokens/${encodeURIComponent(id)}`,
      );
      if (flags.json) return printJson(rt, revoked);
      rt.out(`Revoked the API token ${revoked.name} (${revoked.id})\n`);
    });
}

async function grants(caller: SessionCaller, flags: CreateFlags, permissions: Permission[] | null): Promise<Grant[]> {
  const scopes: Grant[] = [];
  if (flags.trigger.length > 0) scopes.push({ type: 'trigger', triggerIds: flags.trigger });
  if (flags.agent.length > 0) {
    scopes.push({ type: 'agent', agentIds: await Promise.all(flags.agent.map((a) => agentId(caller, a))) });
  }
  if (permissions !== null) {
    const bindingIds =
      flags.storageBinding.length === 0
        ? null
        : await Promise.all(flags.storageBinding.map((b) => bindingId(caller, b)));
    scopes.push({ type: 'storage', bindingIds, permissions });
  }
  return scopes;
}

function storagePermissions(text: string): Permission[] {
  const given = [...new Set(text.split(',').map((p) => p.trim().toLowerCase()))].filter((p) => p !== '');
  const permissions = given.filter(isPermission);
  if (given.length === 0 || permissions.length < given.length) {
    throw new CliError(`--storage: expected permissions among read, write, delete (comma-separated), got \`${text}\``);
  }
  return permissions;
}

function limit(value: string | undefined, option: string): number | null {
  if (value === undefined) return null;
  return integerFlag(option, value, 1);
}

function state(token: ApiToken): string {
  if (token.revokedAt !== null) return 'revoked';
  if (token.expiresAt !== null && Date.parse(token.expiresAt) <= Date.now()) return 'expired';
  return 'active';
}
