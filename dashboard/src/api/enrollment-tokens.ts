import type { Schema } from '@drover/shared/api';
import { infiniteQueryOptions } from '@tanstack/react-query';
import { apiPage, apiPath } from './client';
import { AGENT_DIRECTORY_REFRESH_MS } from './refresh';

export type EnrollmentToken = Schema<'EnrollmentToken'>;
export type EnrollmentTokenState = EnrollmentToken['state'];

/** What the Agents page lists: the tokens in one state, or all of them. */
export type EnrollmentTokenFilter = EnrollmentTokenState | 'all';

/** Tokens a page: more than a batch of machines is made for at once is rare. */
export const ENROLLMENT_TOKEN_PAGE = 50;

/** The key of every list of an organization's enrollment tokens: what a new or revoked token refreshes. */
export const enrollmentTokensKey = (orgId: string) => ['orgs', orgId, 'enrollment-tokens'] as const;

/**
 * The organization's enrollment tokens in one state (or all), newest first, a page at a time
 * (`x-next-cursor`). Tokens change by someone's hand (made, revoked) or an enrollment: as often
 * as the agents directory, and at once after a change made on the page.
 */
export const enrollmentTokenPagesQuery = (orgId: string, filter: EnrollmentTokenFilter) =>
  infiniteQueryOptions({
    queryKey: [...enrollmentTokensKey(orgId), filter],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(ENROLLMENT_TOKEN_PAGE) });
      if (filter !== 'all') query.set('state', filter);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<EnrollmentToken>(apiPath`/orgs/${orgId}/enrollment-tokens?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
  });
