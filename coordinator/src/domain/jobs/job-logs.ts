import { storableText } from './storable-text.js';
import { bytesInWords, countOf } from '@drover/shared';
import { AppError, describeValue, notFound, validationFailed, type ValidationDetail } from '../../errors.js';
import { storedInstant, UNSTORABLE_INSTANT } from '../../util/clock.js';
import type { JobLogLineRecord, JobRepository, LogCap, NewLogLine } from '../model/jobs.js';

/** DROVER_JOB_LOG_MAX_BYTES: the default cap of a job's stored log, and its bounds. */
export const DEFAULT_JOB_LOG_MAX_BYTES = 16 * 1024 * 1024;
export const MIN_JOB_LOG_MAX_BYTES = 64 * 1024;
export const MAX_JOB_LOG_MAX_BYTES = 1024 * 1024 * 1024;

/** The job detail's log page: lines by default, at most, and the most text one page carries. */
export const JOB_LOGS_DEFAULT_LIMIT = 500;
export const JOB_LOGS_MAX_LIMIT = 5_000;
export const JOB_LOGS_PAGE_MAX_BYTES = 1024 * 1024;

/**
 * A log's lines are capped at one per this many bytes of its cap: a log whose lines average fewer
 * bytes of text is cut by their number (each line is a row, whatever its text).
 */
export const JOB_LOG_BYTES_PER_LINE = 16;

/**
 * The cap of a job's stored log (docs/jobs.md, "Log lines"): past `maxBytes` of text, or
 * `maxBytes / 16` lines, the middle is dropped. The first lines are kept while they fit in a
 * quarter of both (the head), the newest fill the rest, and one line where the gap is says how
 * many lines were dropped.
 */
export function logCap(maxBytes: number): LogCap {
  const maxLines = Math.floor(maxBytes / JOB_LOG_BYTES_PER_LINE);
  return {
    maxBytes,
    headBytes: Math.floor(maxBytes / 4),
    maxLines,
    headLines: Math.floor(maxLines / 4),
    gapText: ({ lines, bytes }) =>
      `[drover] ${countOf(lines, 'line')} (${bytesInWords(bytes)}) dropped here: this job's log passed its limit of ` +
      `${bytesInWords(maxBytes)} or ${countOf(maxLines, 'line')} (DROVER_JOB_LOG_MAX_BYTES); its first lines and its newest are kept`,
  };
}

/**
 * A line as both databases store it: PostgreSQL's text holds no NUL character (it refuses the
 * whole batch), so a NUL in a line (a program that writes binary output) becomes U+FFFD, the
 * replacement character, on every database; its `at` is in UTC (`toISOString`), as PostgreSQL
 * gives it back, whatever offset or spelling the agent used.
 */
function storable(line: NewLogLine, at: string): NewLogLine {
  const text = storableText(line.text);
  return text === line.text && at === line.at ? line : { ...line, at, text };
}

/**
 * The batch as stored, or a 422 naming each line whose `at` no database can keep alike (the
 * schema's date-time admits a leap second, which a Date cannot hold, and the year 0, which
 * PostgreSQL refuses, where SQLite kept the text as sent).
 */
function storableBatch(lines: readonly NewLogLine[]): NewLogLine[] {
  const problems: ValidationDetail[] = [];
  const stored = lines.map((line, i) => {
    const at = storedInstant(line.at);
    if (at === null)
      problems.push({ path: `body.lines.${i}.at`, message: `${UNSTORABLE_INSTANT}, got ${describeValue(line.at)}` });
    return storable(line, at ?? line.at);
  });
  if (problems.length > 0) throw validationFailed(problems);
  return stored;
}

/** A page of a job's log as the job detail answers it (`GET /v1/jobs/:id`). */
export interface JobLogView {
  /** The lines, `step` counted from 1 as people do (null for the job's own lines). */
  logs: JobLogLineRecord[];
  /** More lines are stored after this page: ask again with `logsAfter` = the last line's seq. */
  logsMore: boolean;
  /** Lines stored now, the gap's line included. */
  logsTotal: number;
  /** Lines the cap dropped from the middle of the log. */
  logsDropped: number;
}

export interface JobLogDeps {
  jobs: JobRepository;
  /** DROVER_JOB_LOG_MAX_BYTES. */
  maxBytes: number;
}

/**
 * A job's log: the agent's batches of lines (stored while the job is open, within the cap) and
 * the pages the job detail reads. The one way in for both.
 */
export class JobLogService {
  private readonly cap: LogCap;

  constructor(private readonly deps: JobLogDeps) {
    this.cap = logCap(deps.maxBytes);
  }

  /**
   * Stores an agent's batch. 404 for a job that is not the agent's; 409 `conflict` for a job that
   * has ended (docs/agent-protocol.md §6.5: the agent drops the batch and goes on); 422 for a line
   * whose time cannot be stored.
   */
  async append(agentId: string, jobId: string, lines: readonly NewLogLine[]) {
    const result = await this.deps.jobs.appendLogs(agentId, jobId, storableBatch(lines), this.cap);
    if (result.outcome === 'not_found') throw notFound('Job');
    if (result.outcome === 'ended') {
      throw new AppError('conflict', `The job is ${result.job.status}; a job that ended takes no more log lines`, {
        details: { jobId, status: result.job.status },
      });
    }
    return { job: result.job, accepted: result.accepted };
  }

  /** A page of the job's log after `afterSeq`: at most `limit` lines (0: none) and ~1 MiB of text. */
  async read(jobId: string, afterSeq: number, limit: number): Promise<JobLogView> {
    const [page, summary] = await Promise.all([
      this.deps.jobs.listLogs(jobId, { afterSeq, limit, maxBytes: JOB_LOGS_PAGE_MAX_BYTES }),
      this.deps.jobs.logSummary(jobId),
    ]);
    // Agents send a step's index (from 0, docs/agent-protocol.md); people count steps from 1.
    const logs = page.lines.map((line) => (line.step === null ? line : { ...line, step: line.step + 1 }));
    return { logs, logsMore: page.more, logsTotal: summary.lines, logsDropped: summary.droppedLines };
  }
}
