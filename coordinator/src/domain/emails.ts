/**
 * The one rule by which two emails name the same account (docs/management.md, "Members"): equal
 * once their ASCII letters `A` to `Z` are in lower case; every other character compares as it is.
 * It is what SQLite's `COLLATE NOCASE` does and what PostgreSQL's `lower(email COLLATE "C")` does
 * (db/repositories/users.ts, `sameEmail`), whatever the database's locale: `ÉMILE@x.test` and
 * `émile@x.test` are two accounts on both, and the Kelvin sign's `\u212Aim@…` is not `kim@…`
 * (Unicode's case folding would make it so). A mailbox's local part is case-sensitive in principle
 * (RFC 5321) and a domain is ASCII once IDNA-encoded: folding ASCII only is the safe common ground.
 */
export const emailKey = (email: string): string => email.replace(/[A-Z]+/g, (s) => s.toLowerCase());

/** Whether `a` and `b` name the same account (`emailKey`). */
export const sameEmail = (a: string, b: string): boolean => emailKey(a) === emailKey(b);

/** The longest email address taken (RFC 5321's path limit, with room). */
export const MAX_EMAIL_LENGTH = 320;

/**
 * Something before and after one `@`, without white space, control characters (a BEL, an escape)
 * or invisible formatting ones (bidirectional overrides, zero-width characters): an address that
 * is shown in the dashboard, the CLI and the audit log as it was typed. Whether mail reaches it is
 * not Drover's to know (it sends none).
 */
const EMAIL_ADDRESS = /^[^\s@\p{Cc}\p{Cf}]+@[^\s@\p{Cc}\p{Cf}]+$/u;

export const isEmailAddress = (text: string): boolean => text.length <= MAX_EMAIL_LENGTH && EMAIL_ADDRESS.test(text);
