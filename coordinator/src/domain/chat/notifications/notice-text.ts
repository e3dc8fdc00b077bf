import type { TerminalJobStatus } from '@drover/shared';
import { percentWords } from '@drover/shared';
import type { BatchNotice, ChatAnswerNotice, JobOutcomeNotice, RolloutPausedNotice } from '../../model/chat-outbox.js';

/** The outcome as a message shows it. */
export const OUTCOME_LABELS: Record<TerminalJobStatus, string> = {
  success: 'SUCCESS',
  failed: 'FAILED',
  timed_out: 'TIMED OUT',
  cancelled: 'CANCELLED',
  rejected: 'REJECTED',
};

/** Outcomes that show the job's error line. */
export const isFailure = (status: TerminalJobStatus): boolean => status !== 'success';

/** The job page a message links to. */
export const jobUrl = (publicUrl: string, jobId: string): string =>
  `${publicUrl.replace(/\/+$/, '')}/api/jobs/${encodeURIComponent(jobId)}`;

/** `text` cut to at most `max` characters, an ellipsis marking the cut (shared with the agent). */
export { shorten } from '@drover/shared';

/** How long the job ran (start to end), readable: `850 ms`, `42 s`, `3 min 5 s`, `2 h 4 min`; null when it never started. */
export function formatDuration(notice: Pick<JobOutcomeNotice, 'startedAt' | 'finishedAt'>): string | null {
  if (!notice.startedAt || !notice.finishedAt) return null;
  const ms = Math.max(0, Date.parse(notice.finishedAt) - Date.parse(notice.startedAt));
  if (!Number.isFinite(ms)) return null;
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
}

/** An output value as text: strings as they are, a file as `file <id>`, anything else as JSON. */
export function outputValueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && (value as { __type?: unknown }).__type === 'FileRef') {
    return `file ${String((value as { id?: unknown }).id)}`;
  }
  return JSON.stringify(value) ?? String(value);
}

/** The job's output values in their order, as `[name, text]`. */
export const outputEntries = (notice: JobOutcomeNotice): [string, string][] =>
  Object.entries(notice.output ?? {}).map(([k, v]) => [k, outputValueText(v)]);

/** The error line of a failure: its first line. */
export const errorLine = (notice: JobOutcomeNotice): string | null => {
  if (!isFailure(notice.status) || !notice.errorMessage) return null;
  return notice.errorMessage.split(/\r?\n/, 1)[0]?.trim() || null;
};

/** The one-line summary both providers use as the plain-text fallback: `Drover job #12 deploy: FAILED`. */
export const summaryLine = (notice: JobOutcomeNotice, escape: Escape = verbatim): string =>
  `Drover job #${notice.number} ${escape(notice.triggerName)}: ${OUTCOME_LABELS[notice.status]}`;

/** The batch page a message links to (its statusUrl). */
export const batchUrl = (publicUrl: string, batchId: string): string =>
  `${publicUrl.replace(/\/+$/, '')}/api/batches/${encodeURIComponent(batchId)}`;

/**
 * A batch's message, plain text for both providers: `Drover batch #12 rotate-certs (rotate):
 * PARTIAL, 38 of 40 succeeded, 2 failed: gw-07, gw-12 <link>`.
 */
export function batchText(notice: BatchNotice, publicUrl: string, escape: Escape = verbatim): string {
  const parts = [`${notice.succeeded} of ${notice.jobCount} succeeded`];
  if (notice.failed > 0) {
    const more = notice.failed - notice.failedAgents.length;
    const agents = notice.failedAgents.map(escape).join(', ');
    parts.push(`${notice.failed} failed: ${agents}${more > 0 ? ` and ${more} more` : ''}`);
  }
  if (notice.cancelled > 0) parts.push(`${notice.cancelled} cancelled`);
  const label = notice.status === 'partial' ? 'PARTIAL' : notice.status.toUpperCase();
  return (
    `Drover batch #${notice.number} ${escape(notice.triggerName)} (${escape(notice.workflowName)}): ${label}, ${parts.join(', ')} ` +
    batchUrl(publicUrl, notice.batchId)
  );
}

/**
 * A rollout that paused by itself, plain text for both providers: `Drover rollout of kiosk 2.4.0
 * PAUSED in wave 1 of 4: 3 of 10 updates failed (30 %, above 5 %): kiosk-07, kiosk-12 and 1 more <link>`.
 */
export function rolloutPausedText(notice: RolloutPausedNotice, publicUrl: string, escape: Escape = verbatim): string {
  const more = notice.failed - notice.failedDevices.length;
  const devices =
    notice.failedDevices.length === 0
      ? ''
      : `: ${notice.failedDevices.map(escape).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  return (
    `Drover rollout of ${escape(notice.appSlug)} ${escape(notice.version)} PAUSED in wave ${notice.wave} of ${notice.waves}: ` +
    `${notice.failed} of ${notice.ended} updates failed (${percentWords(notice.failed / notice.ended)}, above ${percentWords(notice.maxFailureRate)})` +
    `${devices} ${publicUrl.replace(/\/+$/, '')}/orgs/${encodeURIComponent(notice.orgId)}/apps/${encodeURIComponent(notice.applicationId)}`
  );
}

/**
 * The text of a message that is text: a mention's answer (written by the coordinator, its values
 * in code spans), a batch's outcome, a rollout's pause. `escape` makes each value that others
 * chose (an agent's or a device's name, a trigger's, a workflow's, a release's version) plain text
 * in the provider's markup: a name must not ping a channel or plant a link.
 */
export const plainText = (
  payload: ChatAnswerNotice | BatchNotice | RolloutPausedNotice,
  publicUrl: string,
  escape: Escape = verbatim,
): string =>
  payload.kind === 'batch_outcome'
    ? batchText(payload, publicUrl, escape)
    : payload.kind === 'rollout_paused'
      ? rolloutPausedText(payload, publicUrl, escape)
      : payload.text;

/** Makes a value plain text in a chat provider's markup. */
export type Escape = (value: string) => string;
const verbatim: Escape = (value) => value;
