/** A single sign-on in progress (domain/auth/oidc-sign-in.ts): what its callback checks. */
export interface OidcState {
  /** SHA-256 (hex) of the `state` sent to the provider. */
  stateHash: string;
  /** SHA-256 (hex) of the key of the browser's sign-in cookie. */
  browserHash: string;
  nonce: string;
  codeVerifier: string;
  /** The dashboard path to go to once signed in. */
  nextPath: string;
  createdAt: string;
  expiresAt: string;
}

export interface OidcStateRepository {
  /**
   * Stores a new state, forgetting those expired before its creation; false, storing nothing,
   * when `maxOpen` states (unexpired, used or not) are stored already.
   */
  add(state: OidcState, maxOpen: number): Promise<boolean>;
  /** Uses up the state: returns it once, while it has not expired; null for an unknown, used or expired one. */
  consume(stateHash: string, now: string): Promise<OidcState | null>;
}

/** How long a sign-in at the provider may take, from the redirect to the callback. */
export const OIDC_STATE_TTL_MS = 10 * 60_000;

/**
 * The most sign-ins in progress the coordinator stores, from every address together (each
 * address, an IPv6 one by its /64, has its own limit of starts): a bound on the table whatever
 * number of addresses the starts come from; ~4 MB of rows.
 */
export const MAX_OPEN_OIDC_STATES = 10_000;
