import { infiniteQueryOptions, queryOptions, type QueryClient } from '@tanstack/react-query';
import { api, apiPage } from './client';
import { isFinished } from './queries';
import type { Job, JobDetail, JobLogLine } from './types';

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
}

export const JOB_FILTER_KEYS = ['status', 'source', 'agentId', 'triggerId', 'createdAfter', 'createdBefore'] as const;

/** How often the list of jobs refreshes while it is on screen. */
export const JOBS_REFRESH_MS = 3_000;
/** How often a running job's new log lines are asked for. */
export const JOB_LOG_POLL_MS = 1_000;
const PAGE_SIZE = 50;
/** The API's most log lines per answer (`logsLimit`). */
const LOGS_PAGE = 10_000;

export const jobsQuery = (orgId: string, filters: JobFilters) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'jobs', filters],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const key of JOB_FILTER_KEYS) if (filters[key]) query.set(key, filters[key]);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<Job>(`/orgs/${orgId}/jobs?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: JOBS_REFRESH_MS,
  });

const lastSeq = (logs: JobLogLine[]): number => logs[logs.length - 1]?.seq ?? 0;

/** The job with all its log lines after `after`, reading as many pages as the log has. */
async function readJob(jobId: string, after: number): Promise<JobDetail> {
  const logs: JobLogLine[] = [];
  for (;;) {
    const seq = logs.length ? lastSeq(logs) : after;
    const job = await api<JobDetail>('GET', `/jobs/${jobId}?logsAfter=${seq}&logsLimit=${LOGS_PAGE}`);
    logs.push(...job.logs);
    if (job.logs.length < LOGS_PAGE) return { ...job, logs };
  }
}

/**
 * A job whose log grows while it runs: the first read takes the whole log, each later one only the
 * lines after the last one shown, appended. Once the job has ended the whole log is read once
 * more, so that the page ends with the complete log even if lines arrived out of order.
 */
export const liveJobQuery = (jobId: string, client: QueryClient) =>
  queryOptions({
    queryKey: ['jobs', jobId, 'live'],
    queryFn: async (): Promise<JobDetail> => {
      const shown = client.getQueryData<JobDetail>(['jobs', jobId, 'live']);
      if (!shown || isFinished(shown.status)) return readJob(jobId, 0);
      const next = await readJob(jobId, lastSeq(shown.logs));
      if (isFinished(next.status)) return readJob(jobId, 0);
      return { ...next, logs: [...shown.logs, ...next.logs] };
    },
    refetchInterval: (query) => (query.state.data && isFinished(query.state.data.status) ? false : JOB_LOG_POLL_MS),
    refetchIntervalInBackground: false,
  });

/** `POST /jobs/:id/cancel`: the job, `cancelled` (it had not started) or with `cancelRequestedAt` (running). */
export const cancelJob = (jobId: string) => api<Job>('POST', `/jobs/${jobId}/cancel`);

/** A trigger run by hand's answer: its job, whatever the trigger's response mode. */
interface RunAnswer {
  jobId: string;
  status: string;
}

/** Runs the job's trigger by hand again with the job's ref, params, workflow and debug flag. */
export const runAgain = (orgId: string, job: Job) => {
  const body: Record<string, unknown> = { params: job.params, workflowName: job.workflowName };
  if (job.ref !== null) body.ref = job.ref;
  if (job.debug) body.debug = true;
  return api<RunAnswer>('POST', `/orgs/${orgId}/triggers/${job.triggerId}/run`, { body });
};

/** The names the Jobs pages show in place of ids. */
export interface TriggerName {
  id: string;
  name: string;
}
export interface Member {
  userId: string;
  email: string;
}

export const triggerNamesQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers'],
    queryFn: () => api<TriggerName[]>('GET', `/orgs/${orgId}/triggers`),
  });

/** The members' emails by user id, or undefined while they load. */
export function emailsOf(members: Member[] | undefined): Map<string, string> | undefined {
  return members && new Map(members.map((m) => [m.userId, m.email]));
}

export const membersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'members'],
    queryFn: () => api<Member[]>('GET', `/orgs/${orgId}/members`),
  });

/** A trigger's most recent jobs (its page shows them), refreshed like the jobs list. */
export const recentTriggerJobsQuery = (orgId: string, triggerId: string, limit = 10) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'jobs', { triggerId, recent: limit }],
    queryFn: async () =>
      (await apiPage<Job>(`/orgs/${orgId}/jobs?${new URLSearchParams({ triggerId, limit: String(limit) })}`)).items,
    refetchInterval: JOBS_REFRESH_MS,
  });

/** The organization's newest jobs in one status (the home page's lists), refreshed like the jobs list. */
export const jobsInStatusQuery = (orgId: string, status: string, limit: number) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'jobs', { status, recent: limit }],
    queryFn: async () =>
      (await apiPage<Job>(`/orgs/${orgId}/jobs?${new URLSearchParams({ status, limit: String(limit) })}`)).items,
    refetchInterval: JOBS_REFRESH_MS,
  });

/**
 * A job's number, for places that know only its id (an occurrence, a device's update job). A
 * number never changes, so it is read once (with one log line at most, to keep the answer small).
 */
export const jobNumberQuery = (jobId: string) =>
  queryOptions({
    queryKey: ['jobs', jobId, 'number'],
    queryFn: async () => (await api<Job>('GET', `/jobs/${jobId}?logsLimit=1`)).number,
    staleTime: Infinity,
    retry: false,
  });
