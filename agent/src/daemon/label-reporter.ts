import type { Logger } from 'pino';
import { formatLabels, type Labels, type PutAgentLabelsRequest } from '@drover/shared';
import { answerMessage, signedCall, type HttpAnswer, type SignedCaller } from '../http/client.js';
import type { LabelStatus } from '../status/daemon-status.js';
import { reportDigest, type ClaimableReport } from './report-claims.js';

export interface LabelReporterOptions {
  /** What the agent reports of itself (agent-labels.ts): the user's labels, `os` and `arch`. */
  labels: Labels;
  caller: SignedCaller;
  logger: Logger;
  /** After each answer that changes what is known (status.json). */
  onChange?(status: LabelStatus): void;
}

/**
 * The agent's labels, reported to the coordinator with `PUT /v1/agent/labels` before the
 * stream connects, unless it can be claimed (report-claims.ts; docs/agent-protocol.md, §5.2): they replace those reported before, and
 * the answer says what the agent carries there, operators' labels included. A coordinator of a
 * version before labels answers 404: said once, and the agent goes on without them. A refusal
 * (422) is logged as an error with its details, and the agent goes on. Each outcome is logged
 * when it differs from the last one, not at every reconnect.
 */
export class LabelReporter implements ClaimableReport {
  #status: LabelStatus;
  /** The digest of the body the coordinator last accepted (null after a refusal or a failure). */
  #accepted: string | null = null;
  #logged: string | null = null;
  readonly #options: LabelReporterOptions;

  constructor(options: LabelReporterOptions) {
    this.#options = options;
    this.#status = { reported: sorted(options.labels), state: 'pending', effective: null, problem: null };
  }

  get status(): LabelStatus {
    return this.#status;
  }

  /**
   * Sends the labels. Throws when the coordinator could not be reached or answered anything but
   * 200, 404 or a refusal of the labels (401, 5xx...): the next connect tries again. Until then
   * the status stays as it was, which is what the coordinator last took.
   */
  async report(): Promise<void> {
    const { caller } = this.#options;
    const body: PutAgentLabelsRequest = { labels: this.#status.reported };
    this.#accepted = null;
    const answer = await signedCall(caller, 'PUT', '/v1/agent/labels', body);
    if (answer.status === 200) {
      this.#accepted = reportDigest(body);
      this.#settle({ state: 'accepted', effective: labelsOf(answer.body), problem: null });
    } else if (answer.status === 404) {
      this.#settle({ state: 'unsupported', effective: null, problem: null });
    } else if (answer.status === 422 || answer.status === 400 || answer.status === 413) {
      this.#settle({ state: 'refused', effective: null, problem: refusal(answer) });
    } else {
      throw new Error(`the labels report failed (HTTP ${answer.status}: ${answerMessage(answer)})`);
    }
  }

  /** ClaimableReport: the labels never change while the agent runs; accepted once, they can be claimed. */
  claim(): Promise<string | null> {
    return Promise.resolve(this.#accepted);
  }

  #settle(outcome: Omit<LabelStatus, 'reported'>): void {
    this.#status = { ...this.#status, ...outcome };
    this.#options.onChange?.(this.#status);
    const key = JSON.stringify(outcome);
    if (key === this.#logged) return;
    this.#logged = key;
    const { logger } = this.#options;
    const { reported, effective, problem } = this.#status;
    switch (outcome.state) {
      case 'accepted': {
        const differs = effective !== null && formatLabels(effective) !== formatLabels(reported);
        logger.info(
          { labels: reported, ...(effective ? { effectiveLabels: effective } : {}) },
          `reported the labels to the coordinator: ${formatLabels(reported)}` +
            (differs ? `; the agent carries ${formatLabels(effective)} there (an operator's label wins a clash)` : ''),
        );
        break;
      }
      case 'unsupported':
        logger.warn(
          'this coordinator does not take labels (PUT /v1/agent/labels answered HTTP 404); upgrade it to use them. ' +
            'The agent runs its jobs as before',
        );
        break;
      case 'refused':
        logger.error({ labels: reported }, `the coordinator refused the labels: ${problem}`);
        break;
      default:
        break;
    }
  }
}

const sorted = (labels: Labels): Record<string, string> =>
  Object.fromEntries(
    Object.keys(labels)
      .sort()
      .map((key) => [key, labels[key]!]),
  );

/** The merged labels of a 200 answer, or null when it does not have them in the expected shape. */
function labelsOf(body: unknown): Record<string, string> | null {
  const labels = (body as { labels?: unknown } | null)?.labels;
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) return null;
  if (!Object.values(labels).every((value) => typeof value === 'string')) return null;
  return sorted(labels as Record<string, string>);
}

/** Why the coordinator refused the labels: each detail as `path: message`, else its message. */
function refusal(answer: HttpAnswer): string {
  const details = (answer.body as { details?: unknown } | null)?.details;
  const items = Array.isArray(details)
    ? details
        .filter(
          (d): d is { path: string; message: string } => typeof d?.path === 'string' && typeof d?.message === 'string',
        )
        .map((d) => `${d.path}: ${d.message}`)
    : [];
  return items.length > 0 ? items.join('; ') : `HTTP ${answer.status}: ${answerMessage(answer)}`;
}
