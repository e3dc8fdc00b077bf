/** A value as validation messages quote it: short strings and scalars literally, other values by kind. */
export function describeValue(value: unknown): string {
  if (value === null) return '`null`';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `\`${value.length > 40 ? `${value.slice(0, 40)}…` : value}\` (string)`;
  if (typeof value === 'object') return 'an object';
  return `\`${String(value)}\` (${typeof value})`;
}
