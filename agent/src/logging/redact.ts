/** Field names whose values never reach the log: `secret`, `secrets`, `secretValue`..., `token`. */
const SECRET_FIELD = /^(secret.*|token)$/i;
export const REDACTED = '[redacted]';

/**
 * A copy of a log record's fields with secret-named fields replaced (at any depth up to a few
 * levels). The daemon masks secret values in text before logging; this is the second belt.
 */
export function redactFields(value: Record<string, unknown>, depth = 0): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(value)) {
    const field = value[key];
    let replaced: unknown = field;
    if (SECRET_FIELD.test(key)) replaced = REDACTED;
    else if (depth < 4 && isPlainObject(field)) replaced = redactFields(field, depth + 1);
    if (replaced !== field) {
      out ??= { ...value };
      out[key] = replaced;
    }
  }
  return out ?? value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
