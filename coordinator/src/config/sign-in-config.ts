import { isRole, ROLES, type Role } from '@drover/shared';
import { shownUrl } from './database-config.js';

/**
 * How people sign in to the dashboard (docs/sso.md): passwords, single sign-on with an OpenID
 * Connect provider, or both.
 */
export interface SignInConfig {
  /** `DROVER_PASSWORD_LOGIN` (`on` | `off`): whether `POST /v1/auth/login` signs in. */
  readonly password: boolean;
  /** Single sign-on; null: off. */
  readonly oidc: OidcConfig | null;
}

/** Where a group of the provider puts its members: an organization (by name) and a role. */
export interface RoleMapping {
  readonly org: string;
  readonly role: Role;
}

export interface OidcConfig {
  /** The provider's issuer URL, as its discovery document names it (no trailing `/` added or removed). */
  readonly issuer: string;
  readonly clientId: string;
  /** Null: a public client (PKCE alone). */
  readonly clientSecret: string | null;
  /** Space-separated, `openid` and `email` among them. */
  readonly scopes: string;
  /** Lower-case email domains allowed to sign in; empty: any the provider vouches for. */
  readonly allowedDomains: readonly string[];
  /** The ID token claim holding the user's groups. */
  readonly groupsClaim: string;
  /** Group claim value → organization and role. */
  readonly roleMap: Readonly<Record<string, RoleMapping>>;
}

export const SIGN_IN_DEFAULTS = Object.freeze({
  scopes: 'openid email profile',
  groupsClaim: 'groups',
});

type Env = Record<string, string | undefined>;

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const CLAIM = /^[A-Za-z0-9_:./-]{1,128}$/;
const MAX_SETTING_LENGTH = 1024;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function parseSignInConfig(env: Env, problems: string[]): SignInConfig {
  const raw = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const passwordRaw = raw('DROVER_PASSWORD_LOGIN')?.toLowerCase() ?? 'on';
  if (passwordRaw !== 'on' && passwordRaw !== 'off') {
    problems.push(`DROVER_PASSWORD_LOGIN: expected on or off, got \`${raw('DROVER_PASSWORD_LOGIN')}\``);
  }
  const password = passwordRaw !== 'off';
  const oidc = parseOidc(raw, problems);
  if (!password && oidc === null && raw('DROVER_OIDC_ISSUER') === undefined) {
    problems.push(
      'DROVER_PASSWORD_LOGIN: off needs single sign-on (DROVER_OIDC_ISSUER and DROVER_OIDC_CLIENT_ID), or nobody could sign in',
    );
  }
  return Object.freeze({ password, oidc });
}

function parseOidc(raw: (name: string) => string | undefined, problems: string[]): OidcConfig | null {
  const issuerRaw = raw('DROVER_OIDC_ISSUER');
  const others = [
    'DROVER_OIDC_CLIENT_ID',
    'DROVER_OIDC_CLIENT_SECRET',
    'DROVER_OIDC_SCOPES',
    'DROVER_OIDC_ALLOWED_DOMAINS',
    'DROVER_OIDC_ROLE_MAP',
    'DROVER_OIDC_GROUPS_CLAIM',
  ].filter((name) => raw(name) !== undefined);
  if (issuerRaw === undefined) {
    if (others.length > 0)
      problems.push(`DROVER_OIDC_ISSUER: required when ${others.join(', ')} ${others.length === 1 ? 'is' : 'are'} set`);
    return null;
  }
  const before = problems.length;
  const issuer = parseIssuer(issuerRaw, problems);
  const clientId = raw('DROVER_OIDC_CLIENT_ID');
  if (clientId === undefined) problems.push('DROVER_OIDC_CLIENT_ID: required when DROVER_OIDC_ISSUER is set');
  for (const name of ['DROVER_OIDC_CLIENT_ID', 'DROVER_OIDC_CLIENT_SECRET']) {
    const value = raw(name);
    // Secrets are never echoed.
    if (value !== undefined && (value.length > MAX_SETTING_LENGTH || /\s/.test(value))) {
      problems.push(`${name}: expected one word of at most ${MAX_SETTING_LENGTH} characters`);
    }
  }
  const scopes = (raw('DROVER_OIDC_SCOPES') ?? SIGN_IN_DEFAULTS.scopes).split(/\s+/).filter(Boolean);
  for (const needed of ['openid', 'email']) {
    if (!scopes.includes(needed)) {
      problems.push(
        `DROVER_OIDC_SCOPES: expected space-separated scopes including ${needed}, got \`${scopes.join(' ')}\``,
      );
    }
  }
  const allowedDomains = (raw('DROVER_OIDC_ALLOWED_DOMAINS') ?? '')
    .split(',')
    .map((d) => d.trim().toLowerCase())
    .filter(Boolean);
  for (const domain of allowedDomains) {
    if (!DOMAIN.test(domain)) {
      problems.push(`DROVER_OIDC_ALLOWED_DOMAINS: expected comma-separated email domains, got \`${domain}\``);
    }
  }
  const groupsClaim = raw('DROVER_OIDC_GROUPS_CLAIM') ?? SIGN_IN_DEFAULTS.groupsClaim;
  if (!CLAIM.test(groupsClaim)) {
    problems.push(
      `DROVER_OIDC_GROUPS_CLAIM: expected a claim name (letters, digits, _ : . / -), got \`${groupsClaim}\``,
    );
  }
  const roleMap = parseRoleMap(raw('DROVER_OIDC_ROLE_MAP'), problems);
  if (problems.length > before || clientId === undefined || issuer === null) return null;
  return Object.freeze({
    issuer,
    clientId,
    clientSecret: raw('DROVER_OIDC_CLIENT_SECRET') ?? null,
    scopes: [...new Set(scopes)].join(' '),
    allowedDomains: Object.freeze([...new Set(allowedDomains)]),
    groupsClaim,
    roleMap,
  });
}

/** An https URL; http only on the loopback interface (a provider on this machine, as in tests). */
function parseIssuer(raw: string, problems: string[]): string | null {
  const expected = 'DROVER_OIDC_ISSUER: expected the https URL of the OpenID provider (its issuer)';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`${expected}, got \`${raw}\``);
    return null;
  }
  const loopbackHttp = url.protocol === 'http:' && LOOPBACK.has(url.hostname);
  if ((url.protocol !== 'https:' && !loopbackHttp) || url.username || url.password || url.search || url.hash) {
    problems.push(
      `${expected} without credentials, query or fragment (http only on the loopback), got \`${shownUrl(raw)}\``,
    );
    return null;
  }
  return raw;
}

function parseRoleMap(raw: string | undefined, problems: string[]): Readonly<Record<string, RoleMapping>> {
  const name = 'DROVER_OIDC_ROLE_MAP';
  const shape = `a JSON object {"<group>": {"org": "<organization id or name>", "role": "${ROLES.join('|')}"}}`;
  if (raw === undefined) return Object.freeze({});
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push(`${name}: expected ${shape}; it is not JSON`);
    return Object.freeze({});
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push(`${name}: expected ${shape}`);
    return Object.freeze({});
  }
  // Without a prototype: a group named `constructor` or `__proto__` is an entry like any other,
  // and one the map does not name finds nothing (not Object.prototype's `constructor`).
  const map: Record<string, RoleMapping> = Object.create(null) as Record<string, RoleMapping>;
  for (const [group, value] of Object.entries(parsed)) {
    const at = `${name}: group ${JSON.stringify(group)}`;
    if (group === '' || typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${at}: expected {"org": "<organization id or name>", "role": "<role>"}`);
      continue;
    }
    const { org, role, ...rest } = value as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) problems.push(`${at}: unknown field ${extra.map((k) => JSON.stringify(k)).join(', ')}`);
    if (typeof org !== 'string' || org.trim() === '') {
      problems.push(`${at}: expected "org", an organization's id (or its name)`);
      continue;
    }
    if (!isRole(role)) {
      problems.push(`${at}: expected "role" to be one of ${ROLES.join(', ')}, got ${JSON.stringify(role)}`);
      continue;
    }
    map[group] = Object.freeze({ org: org.trim(), role });
  }
  return Object.freeze(map);
}
