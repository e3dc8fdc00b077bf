import { queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPath } from './client';

/**
 * Signing in the command line through the browser (docs/dashboard.md, "Device sign-in"): the
 * command line shows a code; the signed-in user looks it up here and approves or denies it.
 */

/** A device sign-in as the approval page reads it (`GET /v1/auth/device/{userCode}`). */
export type DeviceSignIn = Schema<'DeviceSignIn'>;

export type DeviceDecision = 'approve' | 'deny';

/**
 * A code as typed or sent in the address (`wdjbmjht`, `WDJB MJHT`, `wdjb-mjht`) in the form the
 * command line shows it, `WDJB-MJHT`; null when it cannot be one (the coordinator's own rule).
 */
export { normalizeUserCode } from '@drover/shared/user-code';

export const deviceSignInQuery = (userCode: string) =>
  queryOptions({
    queryKey: ['auth', 'device', userCode],
    queryFn: () => api<DeviceSignIn>('GET', apiPath`/auth/device/${userCode}`),
    // Read once: the answer to a decision is what the page shows next, never a refetch (a
    // finished sign-in is a 404).
    staleTime: Infinity,
    refetchOnWindowFocus: false,
  });

/** `POST /v1/auth/device/{userCode}/approve` or `/deny`: the sign-in with its new status. */
export const decideDeviceSignIn = (userCode: string, decision: DeviceDecision) =>
  api<DeviceSignIn>('POST', apiPath`/auth/device/${userCode}/${decision}`);
