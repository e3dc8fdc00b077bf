import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import type { Logger } from 'pino';
import { sitePath } from '@drover/shared';
import type { OidcConfig } from '../../config/sign-in-config.js';
import type { Repositories } from '../model/repositories.js';
import { AppError, validationFailed } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashBearerSecret } from '../../util/secrets.js';
import { MAX_OPEN_OIDC_STATES, OIDC_STATE_TTL_MS } from '../model/oidc-states.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { SessionService } from './sessions.js';
import { applyRoleMap } from './role-map.js';
import { AttemptThrottle, lockedOut, type ThrottlePolicy } from './attempt-throttle.js';
import { clientKey } from './client-key.js';

/** What an SSO-made account stores as its password hash: no password ever matches it. */
export const NO_PASSWORD = '!sso';
const BROWSER_KEY = /^[A-Za-z0-9_-]{43}$/;

export interface OidcStart {
  /** The provider's authorization endpoint, with the request's parameters. */
  url: string;
  /** The key for the browser's sign-in cookie (the one it held, or a new one). */
  browserKey: string;
}

export interface OidcSignedIn {
  token: string;
  expiresAt: string;
  /** The dashboard path to go to. */
  next: string;
}

/**
 * Sign-ins started and not finished, per client address (an IPv6 one by its /64, which one host
 * may hold whole): each start stores a row for ten minutes (its state), so past 30 unfinished in
 * ten minutes a start from that address waits a minute, then twice as long each time, up to ten
 * minutes. A sign-in finished from the address takes its start off the count. The counts live in
 * this coordinator's memory.
 */
export const OIDC_START_ADDRESS_POLICY: ThrottlePolicy = {
  freeFailures: 30,
  baseLockMs: 60_000,
  maxLockMs: OIDC_STATE_TTL_MS,
  forgetAfterMs: OIDC_STATE_TTL_MS,
  maxKeys: 100_000,
};

/** A refusal for a full table of sign-ins in progress is logged at most this often. */
const FULL_WARNING_EVERY_MS = 60_000;

const failed = (why: string) => new AppError('sso_failed', `Single sign-on did not complete: ${why}`);
const unavailable = (issuer: string) =>
  new AppError(
    'unavailable',
    `The OpenID provider at ${issuer} could not be reached or answered badly; try again later`,
  );

/** `next` when it is a path of this site (`/orgs/…`), normalized (sitePath), else a 422. */
export function sameOriginPath(next: string | undefined): string {
  if (next === undefined || next === '') return '/';
  const path = sitePath(next);
  if (path === null) {
    throw validationFailed([
      { path: 'query.next', message: `expected a path of this site, starting with one /, got \`${next}\`` },
    ]);
  }
  return path;
}

/**
 * Sign-in with an OpenID Connect provider (docs/sso.md): the authorization code flow with PKCE
 * (S256), its `state` single use and bound to the browser that started it (a cookie's key),
 * valid ten minutes; the ID token checked by openid-client (signature by the provider's JWKS,
 * issuer, audience, expiry, nonce). The user is found or created by the verified email, put in
 * the organizations the role map names for their groups, and given the same session as a
 * password sign-in.
 */
export class OidcSignInService {
  private configuration: Promise<oidc.Configuration> | null = null;
  private readonly starts: AttemptThrottle;
  /** When a start was last refused for the full table and logged. */
  private fullSince = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: {
      config: OidcConfig;
      repos: Pick<Repositories, 'oidcStates' | 'users' | 'orgs' | 'apiTokens' | 'invitations'>;
      sessions: SessionService;
      audit: AuditLog;
      clock: Clock;
      logger: Logger;
      /** The coordinator's public URL, read at each call (known only once listening). */
      publicUrl: () => string;
    },
  ) {
    this.starts = new AttemptThrottle(OIDC_START_ADDRESS_POLICY, deps.clock);
  }

  redirectUri(): string {
    return `${this.deps.publicUrl()}/v1/auth/oidc/callback`;
  }

  /** The provider's metadata, read once (again after a failure) from its discovery document. */
  private provider(): Promise<oidc.Configuration> {
    if (!this.configuration) {
      const { issuer, clientId, clientSecret } = this.deps.config;
      const url = new URL(issuer);
      const insecure = url.protocol === 'http:'; // the loopback only: the config loader allows no other
      this.configuration = oidc
        .discovery(
          url,
          clientId,
          { redirect_uris: [this.redirectUri()], response_types: ['code'] },
          clientSecret === null ? oidc.None() : oidc.ClientSecretPost(clientSecret),
          insecure ? { execute: [oidc.allowInsecureRequests] } : undefined,
        )
        .then((config) => {
          // The ID token's signature is checked with the provider's keys (JWKS), not only trusted
          // because it came over TLS from the token endpoint.
          oidc.enableNonRepudiationChecks(config);
          return config;
        })
        .catch((error: unknown) => {
          this.configuration = null;
          this.deps.logger.warn({ err: error, issuer }, 'OpenID provider discovery failed');
          throw unavailable(issuer);
        });
    }
    return this.configuration;
  }

  async start(next: string | undefined, browserKey: string | null, clientAddress: string): Promise<OidcStart> {
    const nextPath = sameOriginPath(next);
    const address = clientKey(clientAddress);
    const waitMs = this.starts.waitMs(address);
    if (waitMs > 0) throw lockedOut('Too many single sign-ons started from this address and not finished', waitMs);
    // Counted now, before anything is awaited: starts that arrive together are all counted.
    const counted = this.starts.fail(address);
    if (counted.lockedUntil !== null) {
      this.deps.logger.warn(
        { address, started: counted.failures, until: isoAt(counted.lockedUntil) },
        'single sign-on: too many sign-ins started from one address and not finished; its next starts wait',
      );
    }
    try {
      return await this.begin(nextPath, browserKey);
    } catch (error) {
      this.starts.forgive(address); // nothing was stored
      throw error;
    }
  }

  private async begin(nextPath: string, browserKey: string | null): Promise<OidcStart> {
    const config = await this.provider();
    const key =
      browserKey !== null && BROWSER_KEY.test(browserKey) ? browserKey : randomBytes(32).toString('base64url');
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const now = this.deps.clock.now();
    const stored = await this.deps.repos.oidcStates.add(
      {
        stateHash: hashBearerSecret(state),
        browserHash: hashBearerSecret(key),
        nonce,
        codeVerifier,
        nextPath,
        createdAt: isoAt(now),
        expiresAt: isoAt(now + OIDC_STATE_TTL_MS),
      },
      MAX_OPEN_OIDC_STATES,
    );
    if (!stored) {
      if (now - this.fullSince >= FULL_WARNING_EVERY_MS) {
        this.fullSince = now;
        this.deps.logger.warn(
          { open: MAX_OPEN_OIDC_STATES },
          'single sign-on: as many sign-ins are in progress as the coordinator keeps; new ones wait until some finish or expire',
        );
      }
      throw new AppError('unavailable', 'Too many single sign-ons are in progress; try again in a minute', {
        retryAfter: 60,
      });
    }
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri(),
      scope: this.deps.config.scopes,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, browserKey: key };
  }

  /**
   * Finishes the sign-in the provider sent the browser back from (`callback`: the full callback
   * URL). The state is used up whatever happens next; every refusal is `401 sso_failed` saying why.
   */
  async finish(callback: URL, browserKey: string | null, address: string): Promise<OidcSignedIn> {
    const { repos, audit, clock, logger, config: settings } = this.deps;
    const state = callback.searchParams.get('state');
    const stored = state ? await repos.oidcStates.consume(hashBearerSecret(state), isoAt(clock.now())) : null;
    if (!stored) {
      throw failed('this sign-in is unknown, was already used or took longer than ten minutes; sign in again');
    }
    if (browserKey === null || hashBearerSecret(browserKey) !== stored.browserHash) {
      throw failed('it was started in another browser (or its cookie is gone); sign in again from this one');
    }
    const providerError = callback.searchParams.get('error');
    if (providerError !== null) {
      const description = callback.searchParams.get('error_description');
      throw failed(`the provider answered ${providerError}${description ? ` (${description.slice(0, 200)})` : ''}`);
    }
    const config = await this.provider();
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: stored.codeVerifier,
        expectedState: state!,
        expectedNonce: stored.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (error) {
      if (providerUnavailable(error)) {
        // Not a refusal of the person: the provider (its token endpoint or its keys) is down,
        // slow or failing. The state is used up; a new sign-in works once it is back.
        this.deps.logger.warn(
          { err: error, issuer: settings.issuer },
          'single sign-on: the OpenID provider could not be reached or failed',
        );
        throw unavailable(settings.issuer);
      }
      this.deps.logger.warn(
        { err: error, issuer: settings.issuer },
        'single sign-on refused: the ID token or the code',
      );
      throw failed(`the provider's answer was refused (${describeOidcError(error)})`);
    }
    if (!claims) throw failed('the provider sent no ID token');
    const email = typeof claims.email === 'string' ? claims.email.trim() : '';
    if (email === '' || email.length > 320 || !email.includes('@')) {
      throw failed('the ID token has no email; ask the provider to release the `email` claim (scope `email`)');
    }
    if (!emailVerified(claims)) throw failed(`the provider has not verified the email ${email}`);
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    if (settings.allowedDomains.length > 0 && !settings.allowedDomains.includes(domain)) {
      throw failed(
        `the email domain ${domain} is not allowed to sign in here (allowed: ${settings.allowedDomains.join(', ')})`,
      );
    }
    const user = await this.userOf(email);
    // Microsoft Entra ID leaves out the groups of someone in too many (over 200), and points to
    // its Graph API instead (`_claim_names`, OpenID Connect's distributed claims): their groups
    // are not known, so the role map withdraws nothing from them.
    const overage = groupsOverage(claims, settings.groupsClaim);
    if (overage) {
      logger.warn(
        { email, claim: settings.groupsClaim },
        'single sign-on: the ID token names no groups but where to read them (too many groups at the provider); the role map withdraws nothing',
      );
    }
    await applyRoleMap(
      { orgs: repos.orgs, audit, clock, logger, roleMap: settings.roleMap },
      { userId: user.id, email, groups: groupsOf(claims[settings.groupsClaim]), allGroupsKnown: !overage },
    );
    const session = await this.deps.sessions.issue(user.id, user.sessionGeneration);
    this.starts.forgive(clientKey(address)); // this start finished
    return { ...session, next: stored.nextPath };
  }

  /**
   * The user of this email, created on a first sign-in (with no password that could match). An
   * account whose first password the inviter chose (an invitation made it before its holder ever
   * signed in) loses its password now, changed since or not, with every session and API token it
   * had and every pending invitation it sent: the holder proved the email is theirs, and whoever
   * knew the password must not share the account (docs/sso.md).
   */
  private async userOf(email: string): Promise<{ id: string; sessionGeneration: number }> {
    const { users } = this.deps.repos;
    const found = await users.findByEmail(email);
    if (found?.passwordByInviter) {
      const generation = await users.replaceInvitersPassword(found.id, NO_PASSWORD);
      if (generation !== null) {
        // Its API tokens too: whoever held the inviter's password may have issued them.
        const revoked = await this.deps.repos.apiTokens.revokeAllOfUser(found.id, isoAt(this.deps.clock.now()));
        for (const token of revoked) {
          await this.deps.audit.record({
            orgId: token.orgId,
            actorType: 'user',
            actorId: found.id,
            action: 'api_token.revoke',
            targetType: 'api_token',
            targetId: token.id,
            metadata: { name: token.name, via: 'sso', reason: "the account's first single sign-on" },
          });
        }
        // And the invitations it sent: whoever held the password may have invited themselves.
        const invitations = await this.deps.repos.invitations.revokeAllSentBy(found.id, isoAt(this.deps.clock.now()));
        for (const invitation of invitations) {
          await this.deps.audit.record({
            orgId: invitation.orgId,
            actorType: 'user',
            actorId: found.id,
            action: 'invitation.revoke',
            targetType: 'invitation',
            targetId: invitation.id,
            metadata: {
              email: invitation.email,
              role: invitation.role,
              expiresAt: invitation.expiresAt,
              via: 'sso',
              reason: "the account's first single sign-on",
            },
          });
        }
        this.deps.logger.info(
          { userId: found.id, revokedApiTokens: revoked.length, revokedInvitations: invitations.length },
          'single sign-on: removed the password the inviter had chosen for this account, and ended its sessions, API tokens and invitations',
        );
        return { id: found.id, sessionGeneration: generation };
      }
      // Taken back meanwhile by another sign-on of the same person: read it again.
      const again = await users.findByEmail(email);
      if (again) return again;
    }
    if (found) return found;
    try {
      await users.insert({ id: newId(), email, passwordHash: NO_PASSWORD, createdAt: isoAt(this.deps.clock.now()) });
    } catch {
      // Created meanwhile by another sign-in of the same person: read it below.
    }
    const created = await users.findByEmail(email);
    if (!created) throw failed(`the account of ${email} could not be created`);
    return created;
  }
}

/**
 * Whether the provider vouches for the ID token's email: `email_verified: true`; or, from a provider
 * that sends no `email_verified` at all (Microsoft Entra ID, which never does), `xms_edov: true`,
 * Entra's optional claim saying the tenant owns the email's domain. An `email_verified` other than
 * `true` (`false`, `"true"`) is never overridden.
 */
function emailVerified(claims: oidc.IDToken): boolean {
  if (claims.email_verified !== undefined) return claims.email_verified === true;
  return claims.xms_edov === true;
}

/** A groups claim as providers send it: an array of strings, or one string. */
/** Whether the ID token points elsewhere for the groups claim (distributed claims) instead of holding it. */
function groupsOverage(claims: oidc.IDToken, claim: string): boolean {
  const names: unknown = claims._claim_names;
  return typeof names === 'object' && names !== null && Object.hasOwn(names, claim) && !(claim in claims);
}

function groupsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

/**
 * Whether openid-client's error is the provider's failure rather than a refusal of this sign-in:
 * no connection (`fetch failed`), no answer in time (`OAUTH_TIMEOUT`), or a 5xx answer of its
 * token or keys endpoint.
 */
function providerUnavailable(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof TypeError && e.message === 'fetch failed') return true;
    if (e.name === 'TimeoutError' || (e as { code?: unknown }).code === 'OAUTH_TIMEOUT') return true;
    const status = (e as { status?: unknown }).status ?? (e.cause instanceof Response ? e.cause.status : undefined);
    if (typeof status === 'number' && status >= 500) return true;
  }
  return false;
}

/**
 * What openid-client said, in a few words, for the refusal's message (never a token): the
 * innermost error's code and message (`unexpected JWT "aud" (audience) claim value`), and the
 * claim it is about.
 */
function describeOidcError(error: unknown): string {
  let inner: unknown = error;
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause;
  if (!(inner instanceof Error)) return 'unknown error';
  const code = (inner as { code?: unknown }).code;
  const claim = (inner.cause as { claim?: unknown } | undefined)?.claim;
  const words = inner.message.slice(0, 200);
  return [typeof code === 'string' ? code : null, words, typeof claim === 'string' ? `claim ${claim}` : null]
    .filter(Boolean)
    .join(': ');
}
