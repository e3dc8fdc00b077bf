import type { Db } from '../database.js';

/**
 * The change counter that database triggers bump on every insert, update and delete of the
 * tables memory caches mirror: agents, workflows, triggers and api_tokens (migration 0002).
 */
export interface ChangeCounterRepository {
  /**
   * A number that changes whenever any of those tables is written, by this process or another
   * (the CLI). A cache filled at generation G is exact while `generation()` still returns G.
   */
  generation(): Promise<number>;
  /** The same for the OTA tables applications and releases (migration 0007). */
  otaGeneration(): Promise<number>;
}

export function createChangeCounterRepository(db: Db): ChangeCounterRepository {
  const read = db.prepare<[], number>('SELECT generation FROM change_counter WHERE id = 1').pluck(true);
  const readOta = db.prepare<[], number>('SELECT generation FROM ota_change_counter WHERE id = 1').pluck(true);
  return {
    async generation() {
      return read.get() ?? 0;
    },
    async otaGeneration() {
      return readOta.get() ?? 0;
    },
  };
}
