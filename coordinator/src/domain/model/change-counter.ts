/**
 * The change counter that database triggers bump on every insert, update and delete of the
 * tables memory caches mirror: agents, workflows, triggers and api_tokens (migration 0002).
 */
export interface ChangeCounterRepository {
  /**
   * A number that changes whenever any of those tables is written, by this process or another
   * (the CLI). A cache filled at generation G is exact while `generation()` still returns G.
   *
   * One reading serves until the event loop's next check phase (every request of the turn that
   * read it; the trigger-run route reads it once per call, docs/performance.md), and is forgotten
   * at once after any write through this connection. So this process's own writes are seen by
   * the very next call, and another process's (the CLI's) within one turn of the event loop.
   */
  generation(): Promise<number>;
  /** The same for the OTA tables applications and releases (migration 0007). */
  otaGeneration(): Promise<number>;
}
