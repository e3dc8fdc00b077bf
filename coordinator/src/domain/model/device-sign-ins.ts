/**
 * A command line signing in through the browser (domain/auth/device-sign-in.ts): the device
 * authorization grant of RFC 8628.
 */
export type DeviceSignInStatus = 'pending' | 'approved' | 'denied';

/** A sign-in as the approval page shows it. */
export interface DeviceSignInView {
  userCode: string;
  status: DeviceSignInStatus;
  client: string | null;
  requestedFrom: string;
  requestedAt: string;
  expiresAt: string;
}

export interface NewDeviceSignIn {
  /** SHA-256 (hex) of the device code the command line keeps. */
  deviceCodeHash: string;
  userCode: string;
  client: string | null;
  requestedFrom: string;
  /** What the pending limit counts by: the client's address, an IPv6 one by its /64 (auth/client-key.ts). */
  clientKey: string;
  createdAt: string;
  expiresAt: string;
}

/** What the command line's poll found. */
export type DeviceSignInPoll =
  | { outcome: 'approved'; userId: string; sessionGeneration: number }
  | { outcome: 'pending'; expiresAt: string }
  | { outcome: 'denied' | 'expired' | 'unknown' }
  /** Polled again before `earliest` (ISO 8601): the last poll was too recent. */
  | { outcome: 'too_soon'; earliest: string };

export interface DeviceSignInRepository {
  /**
   * Stores a new sign-in, forgetting those expired before its creation; `limited` when its
   * client key already has `limits.perAddress` pending, `full` when `limits.total` sign-ins that
   * have not expired are stored (from every address together), `code_taken` when its user code is
   * in use.
   */
  start(
    signIn: NewDeviceSignIn,
    limits: { perAddress: number; total: number },
  ): Promise<'started' | 'limited' | 'full' | 'code_taken'>;
  /** The sign-in of a user code, while it has not expired nor been handed out; null otherwise. */
  findByUserCode(userCode: string, now: string): Promise<DeviceSignInView | null>;
  /**
   * Approves or denies a pending sign-in as `userId` (with their session generation when
   * approving): the sign-in after the change, `decided` when it was already approved or denied,
   * null when there is none (unknown, expired or handed out).
   */
  decide(
    userCode: string,
    decision: { status: 'approved' | 'denied'; userId: string; sessionGeneration: number | null; at: string },
  ): Promise<DeviceSignInView | 'decided' | null>;
  /**
   * The command line's poll, at `now`, at most one every `intervalMs`: an approved sign-in is
   * handed out once (its approver), and is then used up.
   */
  poll(deviceCodeHash: string, now: string, intervalMs: number): Promise<DeviceSignInPoll>;
}

/** How long a sign-in waits for its approval. */
export const DEVICE_SIGN_IN_TTL_MS = 10 * 60_000;
/** The seconds the command line waits between polls. */
export const DEVICE_SIGN_IN_INTERVAL_SECONDS = 5;
/** Pending sign-ins one client address may have at once. */
export const DEVICE_SIGN_INS_PENDING_PER_ADDRESS = 10;
/**
 * The most sign-ins that have not expired the coordinator stores, from every address together
 * (each address, an IPv6 one by its /64, has its own limit): a bound on the table whatever number
 * of addresses the starts come from, as for single sign-on's starts (MAX_OPEN_OIDC_STATES).
 */
export const MAX_DEVICE_SIGN_INS = 10_000;
