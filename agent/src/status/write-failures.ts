/**
 * Whether a failed write of an advisory file (status.json, counters.json, the metrics file) is
 * worth a log line: the first failure, and one whose reason differs from the last, until a
 * write succeeds again. On a full disk these files are rewritten at each reconnect attempt and
 * each job; an error line each time buried the lines that say what is wrong.
 */
export class WriteFailures {
  #last = new Map<string, string>();

  /** True when this failure of `file` should be said. */
  failed(file: string, error: unknown): boolean {
    const reason = error instanceof Error ? error.message : String(error);
    if (this.#last.get(file) === reason) return false;
    this.#last.set(file, reason);
    return true;
  }

  /** `file` was written: its next failure is said again. */
  written(file: string): void {
    this.#last.delete(file);
  }
}
