import { queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, ApiError, apiPath } from './client';
import { OTA_REFRESH_MS, type Release } from './ota';

/**
 * Staged rollouts (docs/ota.md, "Staged rollouts"): a release published with a plan, its rollout
 * read live while it moves, and an operator's moves.
 */

export type Rollout = Schema<'Rollout'>;
export type RolloutStatus = Rollout['status'];
export type RolloutWave = Rollout['waves'][number];
export type RolloutEvent = Rollout['history'][number];
/** The plan of a publish body. */
export type RolloutPlan = NonNullable<NonNullable<RequestBody<'publishRelease'>>['rollout']>;
export type RolloutMove = 'pause' | 'resume' | 'advance' | 'abort';

/** A rollout still moving: its page reads it again; an ended one never changes. */
export const rolloutLive = (rollout: Pick<Rollout, 'status'> | null | undefined): boolean =>
  rollout?.status === 'running' || rollout?.status === 'paused';

/** The moves that fit a status (a move that does not fit is the API's 409). */
export const MOVES_FROM: Record<RolloutMove, readonly RolloutStatus[]> = {
  pause: ['running'],
  resume: ['paused'],
  advance: ['running', 'paused'],
  abort: ['running', 'paused'],
};

export const rolloutKey = (orgId: string, appId: string, releaseId: string) => [
  'orgs',
  orgId,
  'apps',
  appId,
  'releases',
  releaseId,
  'rollout',
];

/**
 * A release's rollout, or null when it has none (published at once: the API's 404, which never
 * changes for a published release). Read again every 2 seconds, like the rest of the application's
 * page, while it is running or paused; an ended rollout is read once.
 */
export const rolloutQuery = (orgId: string, appId: string, releaseId: string) =>
  queryOptions({
    queryKey: rolloutKey(orgId, appId, releaseId),
    queryFn: async (): Promise<Rollout | null> => {
      try {
        return await api<Rollout>('GET', apiPath`/orgs/${orgId}/apps/${appId}/releases/${releaseId}/rollout`);
      } catch (error) {
        if (error instanceof ApiError && error.statusCode === 404) return null;
        throw error;
      }
    },
    refetchInterval: (query) => (rolloutLive(query.state.data) ? OTA_REFRESH_MS : false),
    refetchIntervalInBackground: false,
  });

/**
 * `POST .../rollout/<move>`: the rollout after the move. With `wave` (the rollout's `currentWave`
 * as the page shows it), the API refuses the move (409) when the rollout is at another wave now.
 */
export const moveRollout = (orgId: string, appId: string, releaseId: string, move: RolloutMove, wave?: number) =>
  api<Rollout>('POST', apiPath`/orgs/${orgId}/apps/${appId}/releases/${releaseId}/rollout/${move}`, {
    ...(wave === undefined ? {} : { body: { wave } satisfies RequestBody<'advanceRollout'> }),
  });

/** `POST .../publish`, at once (no body, as before plans existed) or with a plan. */
export const publishRelease = (orgId: string, appId: string, releaseId: string, plan: RolloutPlan | null) =>
  api<Release>('POST', apiPath`/orgs/${orgId}/apps/${appId}/releases/${releaseId}/publish`, {
    ...(plan ? { body: { rollout: plan } satisfies RequestBody<'publishRelease'> } : {}),
  });
