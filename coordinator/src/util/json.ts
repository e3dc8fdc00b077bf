/**
 * A column whose stored value does not parse: this process writes them whole, so only a damaged
 * or hand-edited database holds one. A server error, not user input.
 */
export class DamagedColumnError extends Error {
  constructor(
    /** `table.column`. */
    readonly column: string,
    cause: unknown,
    what = 'invalid JSON',
  ) {
    super(`Column ${column} holds ${what}`, { cause });
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

/**
 * Parses a JSON column written by this process and checks its shape (`isShape`): JSON of another
 * shape (valid JSON, hand-edited, or in a PostgreSQL `json` column) is damaged too, rather than a
 * TypeError wherever the value is used.
 */
export function parseJsonColumnOf<T>(value: string | null, column: string, isShape: (v: unknown) => v is T): T | null {
  const parsed = parseJsonColumn<unknown>(value, column);
  if (parsed !== null && !isShape(parsed)) {
    throw new DamagedColumnError(
      column,
      new TypeError(`unexpected value ${JSON.stringify(parsed).slice(0, 80)}`),
      'JSON of another shape',
    );
  }
  return parsed as T | null;
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
