import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { tokenCaller } from '../callers.js';
import { printJson } from '../output/json.js';
import { formatFields } from '../output/table.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

export type Grant = Schema<'Grant'>;
export type RateLimit = Schema<'RateLimit'>;
type TokenMetadata = Schema<'TokenInfo'>;

export function configureTokenCommand(program: Command, rt: Runtime): void {
  program
    .command('token')
    .description('what the API token is: its name, grants, job limits and expiry (GET /v1/token)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { api } = tokenCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const token = await api.get<TokenMetadata>('/token');
      if (flags.json) return printJson(rt, token);
      rt.out(
        formatFields([
          ['Name', token.name],
          ['Grants', token.scopes.length === 0 ? 'none' : token.scopes.map(describeGrant).join('; ')],
          ['Job limits', describeLimits(token.rateLimit)],
          ['Expires', token.expiresAt ?? 'never'],
        ]),
      );
    });
}

/** `run 2 triggers`, `agents a, b`, `storage read, write in every binding`. */
export function describeGrant(grant: Grant): string {
  switch (grant.type) {
    case 'trigger':
      return `run triggers ${grant.triggerIds.join(', ')}`;
    case 'agent':
      return `agents ${grant.agentIds.join(', ')}`;
    case 'storage':
      return `storage ${grant.permissions.join(', ')} in ${grant.bindingIds === null ? 'every binding' : `bindings ${grant.bindingIds.join(', ')}`}`;
  }
}

/** `60/minute, 5000/day` (`none` without limits). */
export function describeLimits(limits: RateLimit): string {
  const parts = [
    limits.perMinute === null ? null : `${limits.perMinute}/minute`,
    limits.perHour === null ? null : `${limits.perHour}/hour`,
    limits.perDay === null ? null : `${limits.perDay}/day`,
  ].filter((p) => p !== null);
  return parts.length === 0 ? 'none' : parts.join(', ');
}
