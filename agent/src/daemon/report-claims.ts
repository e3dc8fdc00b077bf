import { createHash } from 'node:crypto';

/** A report the agent makes before it connects: its workflows, its labels. */
export interface ClaimableReport {
  /** Sends the report (`force`: even when it has not changed since the last one). */
  report(force: boolean): Promise<void>;
  /**
   * The digest of the report as it would be sent now when that is exactly what the coordinator
   * last accepted (reportDigest of its body), else null: then only sending it will do.
   */
  claim(): Promise<string | null>;
}

/** The digest a coordinator keeps of an accepted report: the SHA-256 (hex) of its JSON body's bytes. */
export const reportDigest = (body: unknown): string => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/**
 * What the agent does before each connect of its stream (docs/agent-protocol.md §6.1): report its
 * workflows and labels, so that a job waiting for an agent of these labels finds it as the stream
 * opens; or, to a coordinator that said it checks one (its stream's `x-agent-reports: checked`),
 * when neither report has changed since the coordinator accepted it, claim that it holds them (the
 * `reports` parameter of the stream) instead of sending them again. A reconnect of an unchanged
 * agent is then one signed request instead of three, which is what a coordinator taking its fleet
 * back after a restart spends its time on. A refused claim (409 `reports_outdated`: a coordinator
 * that lost them) makes the next attempt report both.
 */
export class ReportClaims {
  #checked = false;
  #outdated = false;
  readonly #workflows: ClaimableReport;
  readonly #labels: ClaimableReport;

  constructor(workflows: ClaimableReport, labels: ClaimableReport) {
    this.#workflows = workflows;
    this.#labels = labels;
  }

  /** Before an attempt: the claim to send, or null once both reports are made (a failure is thrown). */
  async prepare(): Promise<string | null> {
    if (this.#checked && !this.#outdated) {
      const [workflows, labels] = await Promise.all([this.#workflows.claim(), this.#labels.claim()]);
      if (workflows !== null && labels !== null) return `${workflows}.${labels}`;
    }
    this.#outdated = false;
    await allReported([this.#workflows.report(true), this.#labels.report(true)]);
    return null;
  }

  /** Whether the coordinator that opened the last stream checks a claim. */
  checked(checks: boolean): void {
    this.#checked = checks;
  }

  /** The coordinator refused the claim: the next attempt reports. */
  outdated(): void {
    this.#outdated = true;
  }
}

/**
 * Waits for every report made before a connect; one failure is thrown as it is, several as one
 * error saying each (the stream logs it once it is open).
 */
async function allReported(reports: Promise<void>[]): Promise<void> {
  const failures = (await Promise.allSettled(reports)).flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) {
    const text = (e: unknown) => (e instanceof Error ? e.message : String(e));
    throw new AggregateError(failures, failures.map(text).join('; '));
  }
}
