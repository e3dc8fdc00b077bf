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
