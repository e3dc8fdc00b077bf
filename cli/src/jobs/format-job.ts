import { elapsed } from '../output/time.js';
import type { Job, LogLine } from './job.js';

/** One sentence on how a job ended, or that it has not: `succeeded in 1.2s`, `failed (exit code 2): ...`. */
export function describeOutcome(
  job: Pick<Job, 'status' | 'exitCode' | 'errorMessage' | 'startedAt' | 'finishedAt'>,
): string {
  const took = job.startedAt && job.finishedAt ? ` in ${elapsed(job.startedAt, job.finishedAt)}` : '';
  const why = job.errorMessage ? `: ${withoutOutcome(job.errorMessage, job.status)}` : '';
  const code = job.exitCode === null || job.exitCode === undefined ? '' : ` (exit code ${job.exitCode})`;
  switch (job.status) {
    case 'success':
      return `succeeded${took}`;
    case 'failed':
      return `failed${code}${took}${why}`;
    case 'timed_out':
      return `timed out${took}${why}`;
    case 'cancelled':
      return `was cancelled${why}`;
    case 'rejected':
      return `was rejected${why}`;
    default:
      return `is still ${job.status}`;
  }
}

/**
 * An error message without the outcome it begins with, which the sentence already says: a
 * cancelled job's message is `cancelled: a user cancelled the job`, and `was cancelled: cancelled:
 * ...` says it twice.
 */
function withoutOutcome(message: string, status: Job['status']): string {
  const outcome = status === 'cancelled' ? 'cancelled' : status === 'rejected' ? 'rejected' : null;
  if (outcome === null || !message.toLowerCase().startsWith(`${outcome}:`)) return message;
  return message.slice(outcome.length + 1).trimStart() || message;
}

/** A job's output as `  name: value` lines (a file output names the command that fetches it). */
export function formatOutput(output: Record<string, unknown> | null | undefined): string {
  const entries = Object.entries(output ?? {});
  if (entries.length === 0) return '';
  const lines = entries.map(([name, value]) => `  ${name}: ${formatValue(value)}\n`);
  return `Output:\n${lines.join('')}`;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return value;
  const ref = value as { __type?: unknown; id?: unknown } | null;
  if (ref && ref.__type === 'FileRef' && typeof ref.id === 'string') {
    return `file ${ref.id} (drover files download ${ref.id})`;
  }
  return JSON.stringify(value);
}

/** A log line as `09:58:00 stdout  Hello, ops!`. */
export function formatLogLine(line: LogLine): string {
  const time = /T(\d\d:\d\d:\d\d)/.exec(line.at)?.[1] ?? line.at;
  return `${time} ${line.stream.padEnd(6)}  ${line.text}\n`;
}

/** The job's page in the dashboard, absolute. */
export function statusPageUrl(origin: string, statusUrl: string): string {
  return new URL(statusUrl, origin).toString();
}
