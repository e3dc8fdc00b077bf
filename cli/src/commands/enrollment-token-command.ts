import type { Answer, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { nearestName, shortId } from '@drover/shared';
import { agentNamerFor } from '../agent-names.js';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { jsonLine, printJson } from '../output/json.js';
import { sayNextPage } from '../output/next-page.js';
import { readEveryPage } from '../output/pages.js';
import { formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { isUuid } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type IssuedEnrollmentToken = Answer<'createEnrollmentToken', 201>;
type EnrollmentToken = Schema<'EnrollmentToken'>;
type TokenState = EnrollmentToken['state'];

/** The coordinator's bounds of an enrollment token's `expiresInSeconds`: one minute to 30 days. */
const EXPIRES_IN_BOUNDS = { minMs: 60_000, maxMs: 30 * 86_400_000 };

/** Where a token stands now (docs/management.md, "Listing and revoking enrollment tokens"). */
const TOKEN_STATES: readonly TokenState[] = ['open', 'used', 'revoked', 'expired'];

/** The coordinator's page size of enrollment tokens: its default, and its most. */
const PAGE = { default: 100, max: 500 };

interface ListFlags {
  state?: string;
  limit: string;
  cursor?: string;
  all?: boolean;
  json?: boolean;
}

/** `drover enrollment-token create|list|revoke`: the single-use tokens that enroll machines as agents. */
export function configureEnrollmentTokenCommand(program: Command, rt: Runtime): void {
  const group = program
    .command('enrollment-token')
    .description('single-use tokens that enroll a machine as an agent (a session)');
  configureCreate(group, rt);
  configureList(group, rt);
  configureRevoke(group, rt);
}

function configureCreate(group: Command, rt: Runtime): void {
  group
    .command('create')
    .description('create one; prints the token (shown only now) and how to enroll with it')
    .option('--name <name>', 'a label for the audit log')
    .option('--expires-in <duration>', 'how long it may be used: 60s to 30d (default 1h)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { name?: string; expiresIn?: string; json?: boolean }, command: Command) => {
      const expiresInSeconds =
        flags.expiresIn === undefined
          ? undefined
          : Math.round(parseDuration(flags.expiresIn, '--expires-in', EXPIRES_IN_BOUNDS) / 1000);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const created = await caller.api.post<IssuedEnrollmentToken>(`/orgs/${await caller.orgId()}/enrollment-tokens`, {
        ...(flags.name === undefined ? {} : { name: flags.name }),
        ...(expiresInSeconds === undefined ? {} : { expiresInSeconds }),
      });
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.token}\n`);
      rt.err(
        `Single use, until ${created.expiresAt}. On the machine:\n` +
          `  drover-agent enroll --url ${caller.api.origin} --token ${created.token}\n`,
      );
    });
}

/**
 * `drover enrollment-token list`: the organization's tokens, newest first, never their secret
 * (`GET /orgs/:orgId/enrollment-tokens`), a page at a time as `drover audit` reads its entries
 * or, with `--all`, every page: with `--json`, one token a line as the pages come.
 */
function configureList(group: Command, rt: Runtime): void {
  group
    .command('list')
    .description("the organization's tokens, newest first: who made each, and the agent a used one enrolled")
    .option('--state <state>', `only the tokens in this state now (${TOKEN_STATES.join(', ')})`)
    .option('--limit <n>', `how many a page (1 to ${PAGE.max})`, String(PAGE.default))
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--all', 'every page, not just the first (with --json: one token a line)')
    .option('--json', "print the API's answer as JSON (with --all: one token a line)")
    .action(async (flags: ListFlags, command: Command) => {
      const limit = integerFlag('--limit', flags.limit, 1, PAGE.max);
      const state = checkState(flags.state);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const path = `/orgs/${await caller.orgId()}/enrollment-tokens`;
      const page = (cursor: string | undefined) =>
        caller.api.call<EnrollmentToken[]>('GET', path, { query: { state, limit, cursor } });

      if (!flags.all) {
        const answer = await page(flags.cursor);
        if (flags.json) printJson(rt, answer.body);
        else rt.out(answer.body.length === 0 ? 'No enrollment tokens.\n' : await tokenTable(caller, answer.body));
        sayNextPage(rt, answer.headers, 'tokens', 'drover enrollment-token list', {
          state,
          limit: limit === PAGE.default ? undefined : limit,
        });
        return;
      }
      const all: EnrollmentToken[] = [];
      await readEveryPage(page, flags.cursor, (tokens) => {
        if (flags.json) for (const token of tokens) rt.out(jsonLine(token));
        else all.push(...tokens);
      });
      if (!flags.json) rt.out(all.length === 0 ? 'No enrollment tokens.\n' : await tokenTable(caller, all));
    });
}

/**
 * `drover enrollment-token revoke <token-id>`: an unspent token enrolls nothing from then on
 * (`DELETE /orgs/:orgId/enrollment-tokens/:enrollmentTokenId`); the coordinator's refusals (409 once it
 * enrolled an agent, 403 for another member's, 404) are its own words, exit 2.
 */
function configureRevoke(group: Command, rt: Runtime): void {
  group
    .command('revoke')
    .description('revoke an unspent token: it enrolls nothing from now on (a used one: revoke its agent)')
    .argument('<token-id>', 'the token (its id, as `list` shows it, not its secret)')
    .option('--json', "print the API's answer as JSON")
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      checkTokenId(id);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const revoked = await caller.api.delete<EnrollmentToken>(`/orgs/${await caller.orgId()}/enrollment-tokens/${id}`);
      if (flags.json) return printJson(rt, revoked);
      const named = revoked.name === null ? '' : ` ${revoked.name}`;
      rt.out(`Revoked the enrollment token${named} (${revoked.id}): it enrolls no machine from now on\n`);
    });
}

function checkState(state: string | undefined): TokenState | undefined {
  if (state === undefined || (TOKEN_STATES as readonly string[]).includes(state)) return state as TokenState;
  const near = nearestName(state, TOKEN_STATES);
  throw new CliError(
    `--state: expected one of ${TOKEN_STATES.join(', ')}, got \`${state}\`${near ? ` (did you mean ${near}?)` : ''}`,
  );
}

/** A token's id, checked before any call: its secret (`drve_…`) given instead is said so, never sent. */
function checkTokenId(id: string): void {
  if (isUuid(id)) return;
  if (id.startsWith('drve_')) {
    throw new CliError(
      "expected the enrollment token's id, got its secret: `drover enrollment-token list` shows the ids",
    );
  }
  throw new CliError(`expected an enrollment token id (a UUID), got \`${id}\``);
}

/**
 * The tokens as a table: who made each (by email), when it expires, and the agent a used one
 * enrolled by name (the start of its id once the organization no longer has it).
 */
async function tokenTable(caller: SessionCaller, tokens: EnrollmentToken[]): Promise<string> {
  const usedBy = tokens.flatMap((t) => (t.usedByAgentId === null ? [] : [t.usedByAgentId]));
  const agentName = usedBy.length === 0 ? (id: string) => id : await agentNamerFor(caller, usedBy);
  const rows = tokens.map((t) => [
    t.id,
    t.name,
    t.state,
    t.createdByEmail,
    shortTime(t.expiresAt),
    t.usedByAgentId === null ? null : nameOrShortId(agentName, t.usedByAgentId),
  ]);
  return formatTable(['ID', 'NAME', 'STATE', 'CREATED BY', 'EXPIRES', 'USED BY'], rows);
}

function nameOrShortId(agentName: (id: string) => string, id: string): string {
  const name = agentName(id);
  return name === id ? shortId(id) : name;
}
