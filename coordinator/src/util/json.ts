/**
 * A column whose stored value does not parse: this process writes them whole, so only a damaged
 * or hand-edited database holds one. A server error, not user input.
 */
export class DamagedColumnError extends Error {
  constructor(
    /** `table.column`. */
    readonly column: string,
    cause: unknown,
  ) {
    super(`Column ${column} holds invalid JSON`, { cause });
    this.name = 'DamagedColumnError';
  }
}

/** Parses a JSON column written by this process; a corrupt value is a DamagedColumnError. */
export function parseJsonColumn<T>(value: string | null, column: string): T | null {
  if (value === null) return null;
  try {
    return JSON.parse(value) as T;
  } catch (cause) {
    throw new DamagedColumnError(column, cause);
  }
}

/** A row a listing left out because a column of it does not parse (a DamagedColumnError). */
export interface DamagedRow {
  /** The row's id. */
  id: string;
  /** `table.column`. */
  column: string;
  error: DamagedColumnError;
}

/**
 * Maps the rows of a listing that background work acts on row by row: a row whose column does not
 * parse is left out and reported, so that one damaged row does not stop the work for every other.
 * Any other error of `map` is thrown.
 */
export function mapSoundRows<R, T>(
  rows: readonly R[],
  map: (row: R) => T,
  idOf: (row: R) => string,
): { sound: T[]; damaged: DamagedRow[] } {
  const sound: T[] = [];
  const damaged: DamagedRow[] = [];
  for (const row of rows) {
    try {
      sound.push(map(row));
    } catch (error) {
      if (!(error instanceof DamagedColumnError)) throw error;
      damaged.push({ id: idOf(row), column: error.column, error });
    }
  }
  return { sound, damaged };
}
