/**
 * How often the pages that follow changes read them again (TanStack Query's `refetchInterval`).
 * In a module of their own, without imports, so that the browser tests move a page's clock by
 * them (test/helpers/browser.ts) without taking in the dashboard's libraries.
 */

/**
 * How often the triggers list and a trigger's page refresh while on screen (a cron trigger's next
 * run and occurrences move by themselves). Other pages read the triggers once.
 */
export const TRIGGERS_REFRESH_MS = 3_000;

/** How often a list of files refreshes (a deletion or an upload elsewhere shows up). */
export const FILES_REFRESH_MS = 5_000;

/** Agent status and last-seen move on their own: lists of agents refresh this often. */
export const LIVE_REFRESH_MS = 5_000;

/**
 * How often the pages that name agents or triggers, choose among them or match selectors against
 * them (jobs, triggers, tokens, devices) read them and their workflows again while on screen:
 * names, labels, revocations and workflows change by someone's hand or a deploy (a change made in
 * this dashboard refreshes them at once), and those of a fleet of thousands are megabytes. Opening
 * a page reads them anew.
 */
export const AGENT_DIRECTORY_REFRESH_MS = 60_000;

/** How often the list of jobs refreshes while it is on screen. */
export const JOBS_REFRESH_MS = 3_000;
/** How often a running job's new log lines are asked for. */
export const JOB_LOG_POLL_MS = 1_000;

/** Devices move on their own (reports, update jobs): the application's page refreshes this often. */
export const OTA_REFRESH_MS = 2_000;

/** How often a batch's page reads it again while one of its jobs is open. */
export const BATCH_POLL_MS = 2_000;
