import { maskDeep, type Masker } from '../exec/secret-masker.js';

/** The secret values to keep out of the agent's log: as they are, and as JSON writes them. */
export interface LogSecrets {
  readonly masker: Masker;
  readonly jsonMasker: Masker;
}

/**
 * A pino JSON line with every secret value masked in its strings, field names included. Lines
 * where no value appears (the JSON-escaped form is looked for) are kept as they are; the others
 * are parsed, masked and written again, so that a mask never lands inside a JSON escape.
 */
export function maskLogLine(line: string, secrets: LogSecrets): string {
  if (secrets.masker.longest === 0 || secrets.jsonMasker(line) === line) return line;
  try {
    return `${JSON.stringify(maskDeep(JSON.parse(line), secrets.masker))}\n`;
  } catch {
    return secrets.jsonMasker(line); // not JSON (never from pino): mask the text as it is
  }
}
