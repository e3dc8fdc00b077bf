import type { ChangeCounterRepository } from '../../domain/model/change-counter.js';
import { onWrite, type Db } from '../database.js';
import { values, type Database } from '../sql/index.js';

const GENERATION = values<number, []>('SELECT generation FROM change_counter WHERE id = 1');
const OTA_GENERATION = values<number, []>('SELECT generation FROM ota_change_counter WHERE id = 1');

export type Reading = () => Promise<number>;

/**
 * `keep` decides how long a reading of the main counter serves: by default it is read at every
 * call, as PostgreSQL needs (another coordinator's writes move it too, and a reading kept for the
 * rest of the event-loop turn would also have to be forgotten after each of this process's
 * writes; one indexed read of one row); SQLite keeps it for the turn (`keptForTheTurn`).
 */
export function createChangeCounterRepository(
  db: Database,
  keep = (read: Reading): Reading => read,
): ChangeCounterRepository {
  return {
    generation: keep(async () => (await db.one(GENERATION, [])) ?? 0),
    async otaGeneration() {
      return (await db.one(OTA_GENERATION, [])) ?? 0;
    },
  };
}

/**
 * SQLite's reading, kept for the rest of the event-loop turn (another process's write is seen at
 * the next one) and forgotten at once when this process writes on `db`. Inside a transaction the
 * value may yet be rolled back: it is read, never kept.
 */
export function keptForTheTurn(db: Db) {
  return (read: Reading): Reading => {
    let reading: Promise<number> | undefined;
    let forgetting = false;
    onWrite(db, () => {
      reading = undefined;
    });
    return () => {
      if (db.inTransaction) return read();
      if (reading === undefined) {
        const kept = (reading = read());
        // A failed reading is not served again.
        kept.catch(() => {
          if (reading === kept) reading = undefined;
        });
        if (!forgetting) {
          forgetting = true;
          setImmediate(() => {
            forgetting = false;
            reading = undefined;
          });
        }
      }
      return reading;
    };
  };
}
