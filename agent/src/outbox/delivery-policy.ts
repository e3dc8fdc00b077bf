import { isRetryableStatus, type HttpAnswer } from '../http/client.js';
import type { Report } from './report.js';

export type Verdict =
  /** 2xx from the coordinator: done. */
  | { verdict: 'delivered' }
  /** The coordinator is unreachable or cannot take it now: keep it and try again later. */
  | { verdict: 'retry'; reason: string }
  /** The coordinator refused it for good: log it and forget it. */
  | { verdict: 'drop'; reason: string; expected: boolean };

/**
 * What to do with the answer to a report: a network failure, a 5xx, 401 (a signature refused,
 * perhaps by a clock that will be fixed), 408 and 429 are retried; any other 4xx is final and
 * the report is dropped. A 409 to `finish` means the job is already terminal (the same result
 * sent again is a 200, so the coordinator has a different one, such as the deadline's), and a
 * 409 to `logs` that the job ended there (its deadline passed, its agent was revoked): expected.
 *
 * Only the coordinator's own answers count: a 2xx is delivered when it names the report's job
 * and its status (`{jobId, status}`), a 4xx is final when it is the coordinator's error
 * (JSON: `{statusCode, code, message}`). Anything else (a proxy's or captive portal's page, answered
 * 200, a redirect to its login) is retried: taken for delivered, a job's result would be lost.
 */
export function judgeAnswer(report: Report, answer: HttpAnswer | { error: Error }): Verdict {
  if ('error' in answer) return { verdict: 'retry', reason: answer.error.message };
  const { status } = answer;
  if (status >= 200 && status < 300) {
    return answersJob(answer.body, report.jobId) ? { verdict: 'delivered' } : notTheCoordinator(answer);
  }
  if (status < 400 || (!isRetryableStatus(status) && !isCoordinatorError(answer.body))) {
    return notTheCoordinator(answer);
  }
  const message = messageOf(answer);
  const reason = `HTTP ${status}${message ? `: ${message}` : ''}`;
  if (isRetryableStatus(status)) return { verdict: 'retry', reason };
  return { verdict: 'drop', reason, expected: status === 409 && (report.kind === 'finish' || report.kind === 'logs') };
}

/** The coordinator's answer to a job report: `{jobId, status, ...}` for this job. */
function answersJob(body: unknown, jobId: string): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as { jobId?: unknown; status?: unknown };
  return typeof b.jobId === 'string' && b.jobId.toLowerCase() === jobId.toLowerCase() && typeof b.status === 'string';
}

/** A refusal in JSON, as the coordinator's are (docs/errors.md), not a proxy's page or an empty answer. */
const isCoordinatorError = (body: unknown): boolean => typeof body === 'object' && body !== null;

function notTheCoordinator(answer: HttpAnswer): Verdict {
  const what = answer.status >= 300 && answer.status < 400 ? 'a redirect' : 'not an answer of the coordinator';
  return {
    verdict: 'retry',
    reason: `HTTP ${answer.status}, ${what} (a proxy or captive portal in between?)`,
  };
}

function messageOf(answer: HttpAnswer): string | null {
  const body = answer.body as { message?: unknown } | null;
  return typeof body === 'object' && body !== null && typeof body.message === 'string' ? body.message : null;
}

/** The start of the message of a finish that stands in for one the coordinator refused. */
export const REFUSED_RESULT = 'the coordinator refused the result';

/**
 * A finish the coordinator refused for its content (413: too large, 422: not acceptable) would
 * leave the job running there for ever. It is replaced once by a plain failure that says why,
 * without output, so the job still ends. Null for every other report, and for a stand-in itself.
 */
export function standInFor(report: Report, answer: HttpAnswer): Report | null {
  if (report.kind !== 'finish' || (answer.status !== 413 && answer.status !== 422)) return null;
  if (report.body.errorMessage?.startsWith(REFUSED_RESULT)) return null;
  const message = messageOf(answer);
  const errorMessage =
    `${REFUSED_RESULT} (HTTP ${answer.status}${message ? `: ${message}` : ''}); ` +
    `the job ended ${report.body.status}${report.body.exitCode === null ? '' : ` with exit code ${report.body.exitCode}`}`;
  return {
    kind: 'finish',
    jobId: report.jobId,
    body: {
      status: 'failed',
      exitCode: report.body.exitCode,
      errorMessage: errorMessage.slice(0, 8000),
      output: {},
      ...(report.body.finishedAt === undefined ? {} : { finishedAt: report.body.finishedAt }),
    },
  };
}
