/** A JSON object (not null, not an array): what a parsed file or event must be before its fields are read. */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
