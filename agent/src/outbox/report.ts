import { FinishJobRequest, RejectJobRequest, shorten, type AppendJobLogsRequest } from '@drover/shared';
import { maskDeep, type Masker } from '../exec/secret-masker.js';

/**
 * One report of the agent about a job (docs/agent-protocol.md, "Jobs"): a call to
 * `POST /v1/agent/jobs/:jobId/<kind>`. Reports are sent in the order they were made.
 */
export type Report =
  | { kind: 'accept'; jobId: string }
  | { kind: 'start'; jobId: string }
  | { kind: 'reject'; jobId: string; body: RejectJobRequest }
  | { kind: 'logs'; jobId: string; body: AppendJobLogsRequest }
  | { kind: 'finish'; jobId: string; body: FinishJobRequest };

export type ReportKind = Report['kind'];
export const REPORT_KINDS: readonly ReportKind[] = ['accept', 'start', 'reject', 'logs', 'finish'];

export const reportPath = (report: Pick<Report, 'kind' | 'jobId'>): string =>
  `/v1/agent/jobs/${encodeURIComponent(report.jobId)}/${report.kind}`;

export const describeReport = (report: Pick<Report, 'kind' | 'jobId'>): string =>
  `${report.kind} of job ${report.jobId}`;

/** A report as read back from a file: only the fields a report has, of the right types. */
export function parseReport(value: unknown): Report | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  if (typeof v.jobId !== 'string' || !REPORT_KINDS.includes(v.kind as ReportKind)) return null;
  const kind = v.kind as ReportKind;
  if (kind === 'accept' || kind === 'start') return { kind, jobId: v.jobId };
  if (typeof v.body !== 'object' || v.body === null) return null;
  return { kind, jobId: v.jobId, body: v.body } as Report;
}

/**
 * The report with every secret value masked in the text it carries: log lines, the rejection's
 * message, the result's error message and output (keys and values). The job's own code masks
 * before it cuts lines; this is the last belt, for every report alike.
 */
export function maskReport(report: Report, mask: Masker): Report {
  switch (report.kind) {
    case 'logs':
      return { ...report, body: { lines: report.body.lines.map((line) => ({ ...line, text: mask(line.text) })) } };
    case 'reject':
      return report.body.message === undefined
        ? report
        : { ...report, body: { ...report.body, message: mask(report.body.message) } };
    case 'finish': {
      const { errorMessage, output } = report.body;
      return {
        ...report,
        body: {
          ...report.body,
          errorMessage: errorMessage === null ? null : mask(errorMessage),
          output: maskDeep(output, mask) as Record<string, unknown>,
        },
      };
    }
    default:
      return report;
  }
}

/** The longest rejection message and result error the coordinator takes (the wire's limits). */
const MAX_REJECT_MESSAGE = RejectJobRequest.properties.message.maxLength;
const MAX_ERROR_MESSAGE = FinishJobRequest.properties.errorMessage.maxLength;

/**
 * The report with its texts within the coordinator's limits, cut with `…` (after maskReport, so
 * that a cut never leaves part of a secret value). A longer rejection message (the invalid files
 * a missing workflow's message lists, the long patterns an `invalid_params` one quotes) was
 * refused with 422 and dropped, and the job stayed pending there for ever; a longer error of a
 * result made it a stand-in that lost the error (standInFor).
 */
export function fitReport(report: Report): Report {
  if (report.kind === 'reject' && report.body.message !== undefined && report.body.message.length > MAX_REJECT_MESSAGE)
    return { ...report, body: { ...report.body, message: shorten(report.body.message, MAX_REJECT_MESSAGE) } };
  if (
    report.kind === 'finish' &&
    report.body.errorMessage !== null &&
    report.body.errorMessage.length > MAX_ERROR_MESSAGE
  )
    return { ...report, body: { ...report.body, errorMessage: shorten(report.body.errorMessage, MAX_ERROR_MESSAGE) } };
  return report;
}

/**
 * The report with the times it carries (a log line's `at`, a result's `finishedAt`) moved from
 * this machine's clock to the coordinator's, by the offset measured when it is sent, so that a
 * job's times read right on the coordinator whatever the edge clock says.
 */
export function inCoordinatorTime(report: Report, offsetMs: number): Report {
  if (offsetMs === 0) return report;
  const shift = (iso: string) => {
    const ms = Date.parse(iso);
    return Number.isNaN(ms) ? iso : new Date(ms + offsetMs).toISOString();
  };
  switch (report.kind) {
    case 'logs':
      return { ...report, body: { lines: report.body.lines.map((line) => ({ ...line, at: shift(line.at) })) } };
    case 'finish':
      return report.body.finishedAt === undefined
        ? report
        : { ...report, body: { ...report.body, finishedAt: shift(report.body.finishedAt) } };
    default:
      return report;
  }
}
