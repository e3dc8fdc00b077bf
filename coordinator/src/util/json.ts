/** Parses a JSON column written by this process; a corrupt value is a server error, not user input. */
export function parseJsonColumn<T>(value: string | null, column: string): T | null {
  if (value === null) return null;
  try {
    return JSON.parse(value) as T;
  } catch (cause) {
    throw new Error(`Column ${column} holds invalid JSON`, { cause });
  }
}
