import type { ChangeCounterRepository } from '../../domain/model/change-counter.js';
import { onWrite, type Db } from '../database.js';

export function createChangeCounterRepository(db: Db): ChangeCounterRepository {
  const read = db.prepare<[], number>('SELECT generation FROM change_counter WHERE id = 1').pluck(true);
  const readOta = db.prepare<[], number>('SELECT generation FROM ota_change_counter WHERE id = 1').pluck(true);
  let reading: number | undefined;
  let forgetting = false;
  onWrite(db, () => {
    reading = undefined;
  });
  return {
    async generation() {
      // Inside a transaction the value may yet be rolled back: read it, never keep it.
      if (db.inTransaction) return read.get() ?? 0;
      if (reading === undefined) {
        reading = read.get() ?? 0;
        if (!forgetting) {
          forgetting = true;
          setImmediate(() => {
            forgetting = false;
            reading = undefined;
          });
        }
      }
      return reading;
    },
    async otaGeneration() {
      return readOta.get() ?? 0;
    },
  };
}
