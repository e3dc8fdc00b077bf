import type { ChangeCounterRepository } from '../../../domain/model/change-counter.js';
import type { PgPool } from '../pool.js';
import { one } from '../rows.js';

/**
 * Read at every call: another coordinator's writes move the counter too, and a reading kept for
 * the rest of the event-loop turn (as on SQLite) would also have to be forgotten after each of
 * this process's writes. One indexed read of one row.
 */
export function createChangeCounterRepository(pool: PgPool): ChangeCounterRepository {
  return {
    async generation() {
      return (await one<{ g: number }>(pool, 'SELECT generation AS g FROM change_counter WHERE id = 1'))?.g ?? 0;
    },
    async otaGeneration() {
      return (await one<{ g: number }>(pool, 'SELECT generation AS g FROM ota_change_counter WHERE id = 1'))?.g ?? 0;
    },
  };
}
