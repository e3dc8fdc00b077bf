/** A word the shell reads as itself, unquoted: nothing in it that the shell would interpret. */
const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * `value` as one word of a POSIX shell command: left as it is when it is plain, otherwise in single
 * quotes, each `'` in it written `'\''` (close the quotes, an escaped quote, open them again). Every
 * value a copyable command of the dashboard interpolates goes through it: a stored value (a ref, a
 * name) must never become shell syntax in the command someone pastes.
 */
export function shellQuote(value: string): string {
  if (PLAIN.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
