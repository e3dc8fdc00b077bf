import { infiniteQueryOptions, queryOptions, type QueryClient } from '@tanstack/react-query';
import { api, ApiError, apiPage, apiPath } from './client';
import { isFinished } from './queries';
import type { RequestBody, Schema } from '@drover/shared/api';
import type { RunAnswer } from './triggers';
import type { Job, JobDetail, JobLogLine } from './types';
import { JOBS_REFRESH_MS, JOB_LOG_POLL_MS } from './refresh';

/** Every job status, in the order a job moves through them (docs/jobs.md "Statuses"). */
export const JOB_STATUSES = ['pending', 'queued', 'running', 'success', 'failed', 'timed_out', 'cancelled', 'rejected'];

/** Where a trigger job came from; `userId` says who, for `manual` and `webhook`. */
export const JOB_SOURCES: Record<string, string> = {
  webhook: 'API call',
  cron: 'schedule',
  manual: 'run by hand',
  slack: 'Slack',
  discord: 'Discord',
  ota: 'update',
};

/** The Jobs page's filters, as the address's search parameters carry them. */
export interface JobFilters {
  status?: string;
  source?: string;
  agentId?: string;
  triggerId?: string;
  createdAfter?: string;
  createdBefore?: string;
  /** The jobs of one batch (a batch's page links to them). */
  batchId?: string;
}

export const JOB_FILTER_KEYS = [
  'status',
  'source',
  'agentId',
  'triggerId',
  'createdAfter',
  'createdBefore',
  'batchId',
] as const;

export { JOBS_REFRESH_MS, JOB_LOG_POLL_MS } from './refresh';
const PAGE_SIZE = 50;
/** Log lines per page the job page reads (the API answers at most 5,000, and about 1 MiB). */
export const LOGS_PAGE = 1_000;
/** While a live log is followed, the most pages one refresh reads. */
const FOLLOW_PAGES = 5;

export const jobsQuery = (orgId: string, filters: JobFilters) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'jobs', filters],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const key of JOB_FILTER_KEYS) if (filters[key]) query.set(key, filters[key]);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<Job>(apiPath`/orgs/${orgId}/jobs?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: JOBS_REFRESH_MS,
  });

const lastSeq = (logs: JobLogLine[]): number => logs[logs.length - 1]?.seq ?? 0;

const readPage = (jobId: string, after: number, limit: number) =>
  api<JobDetail>('GET', apiPath`/jobs/${jobId}?logsAfter=${after}&logsLimit=${limit}`);

/** The job with the lines after those of `shown` appended, at most `pages` pages of them. */
async function readOn(jobId: string, shown: JobDetail | undefined, pages: number): Promise<JobDetail> {
  let logs = shown?.logs ?? [];
  for (let read = 1; ; read++) {
    const page = await readPage(jobId, lastSeq(logs), LOGS_PAGE);
    logs = [...logs, ...page.logs];
    if (!page.logsMore || read === pages) return { ...page, logs };
  }
}

const liveKey = (jobId: string) => ['jobs', jobId, 'live'];

/**
 * A job and the lines of its log read so far. The first read takes the first page; after that,
 * while every stored line is shown and the job runs, each refresh reads the new lines (a few pages
 * at most) and appends them: the log follows the job. When more lines are stored than shown, a
 * refresh reads the job alone, and the reader asks for the next page (loadMoreLogs).
 */
export const liveJobQuery = (jobId: string, client: QueryClient) =>
  queryOptions({
    queryKey: liveKey(jobId),
    queryFn: async (): Promise<JobDetail> => {
      const shown = client.getQueryData<JobDetail>(liveKey(jobId));
      if (!shown) return readOn(jobId, undefined, 1);
      if (!shown.logsMore) return readOn(jobId, shown, FOLLOW_PAGES);
      const job = await readPage(jobId, lastSeq(shown.logs), 0);
      // The reader may have loaded a page meanwhile: keep the lines shown now.
      const now = client.getQueryData<JobDetail>(liveKey(jobId)) ?? shown;
      return { ...job, logs: now.logs, logsMore: now.logsMore };
    },
    refetchInterval: (query) => (query.state.data && isFinished(query.state.data.status) ? false : JOB_LOG_POLL_MS),
    refetchIntervalInBackground: false,
  });

/** Reads the next page of the log shown on the job page and appends it. */
export async function loadMoreLogs(client: QueryClient, jobId: string): Promise<void> {
  await client.cancelQueries({ queryKey: liveKey(jobId) });
  const shown = client.getQueryData<JobDetail>(liveKey(jobId));
  client.setQueryData(liveKey(jobId), await readOn(jobId, shown, 1));
}

/** `POST /jobs/:id/cancel`: the job, `cancelled` (it had not started) or with `cancelRequestedAt` (running). */
export const cancelJob = (jobId: string) => api<Job>('POST', apiPath`/jobs/${jobId}/cancel`);

/** Runs the job's trigger by hand again with the job's ref, params, workflow and debug flag. */
export const runAgain = async (orgId: string, job: Job): Promise<RunAnswer> => {
  // The page offers it only for a trigger's job.
  if (job.triggerId === null) throw new ApiError(404, 'not_found', 'This job has no trigger to run again');
  const body: RequestBody<'runTriggerByHand'> = { params: job.params, workflowName: job.workflowName };
  if (job.ref !== null) body.ref = job.ref;
  if (job.debug) body.debug = true;
  return api<RunAnswer>('POST', apiPath`/orgs/${orgId}/triggers/${job.triggerId}/run`, { body });
};

export type Member = Pick<Schema<'Member'>, 'userId' | 'email'>;

/** The members' emails by user id, or undefined while they load. */
export function emailsOf(members: Member[] | undefined): Map<string, string> | undefined {
  return members && new Map(members.map((m) => [m.userId, m.email]));
}

export const membersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'members'],
    queryFn: () => api<Member[]>('GET', apiPath`/orgs/${orgId}/members`),
  });

/** What a page's recent jobs are of: a trigger (its page), or an agent (its page). */
export type RecentJobsOf = { triggerId: string } | { agentId: string };

/** The most recent jobs of a trigger or an agent (their pages show them), refreshed like the jobs list. */
export const recentJobsQuery = (orgId: string, of: RecentJobsOf, limit = 10) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'jobs', { ...of, recent: limit }],
    queryFn: async () =>
      (await apiPage<Job>(apiPath`/orgs/${orgId}/jobs?${new URLSearchParams({ ...of, limit: String(limit) })}`)).items,
    refetchInterval: JOBS_REFRESH_MS,
  });

/** The organization's newest jobs in one status (the home page's lists), refreshed like the jobs list. */
export const jobsInStatusQuery = (orgId: string, status: string, limit: number) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'jobs', { status, recent: limit }],
    queryFn: async () =>
      (await apiPage<Job>(apiPath`/orgs/${orgId}/jobs?${new URLSearchParams({ status, limit: String(limit) })}`)).items,
    refetchInterval: JOBS_REFRESH_MS,
  });

/**
 * A job's number, for places that know only its id (an occurrence, a device's update job). A
 * number never changes, so it is read once (without its log lines, to keep the answer small).
 */
export const jobNumberQuery = (jobId: string) =>
  queryOptions({
    queryKey: ['jobs', jobId, 'number'],
    queryFn: async () => (await api<Job>('GET', apiPath`/jobs/${jobId}?logsLimit=0`)).number,
    staleTime: Infinity,
    retry: false,
  });
