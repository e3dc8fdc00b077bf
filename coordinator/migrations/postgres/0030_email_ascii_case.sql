-- Emails name the same account when they are equal once their ASCII letters are in lower case,
-- every other character compared as it is: what SQLite's `COLLATE NOCASE` does (docs/management.md,
-- "Members"). `lower(email)` folded by the locale of the database's collation: `ÉMILE@x.test` and
-- `émile@x.test` were one account here (on `en_US`, `C.UTF-8` too) and two on SQLite, so copying
-- such a SQLite database here (`drover-coordinator copy-data`) failed on `users_email`. Under
-- `COLLATE "C"`, `lower()` folds `A` to `Z` only, whatever the locale. No SQLite twin: SQLite
-- compares so already.
--
-- Not breaking: a coordinator before it, during a rolling upgrade, compares with `lower(email)` as
-- it always did, which folds more: it refuses more than the new indexes do. Only a pair such as
-- `ÉMILE@…` and `émile@…`, of which this version made the second, is one account to it (either).
--
-- Two emails the new key makes one were one under the old key too, wherever the locale's `lower()`
-- folds `A` to `Z` as ASCII does: the rows fit. Not on a Turkish or Azerbaijani locale, where
-- `lower('I')` is `ı`: there `IVAN@x.test` and `ivan@x.test` could be two accounts, which the new
-- index refuses. Such rows are named, for the operator to settle (remove one account, revoke one
-- invitation), rather than left to a bare unique violation.
DO $$
DECLARE
  clash text;
BEGIN
  SELECT string_agg(emails, '; ' ORDER BY kind, emails COLLATE "C") INTO clash FROM (
    SELECT 1 AS kind, 'users ' || string_agg(email, ', ' ORDER BY email COLLATE "C") AS emails
      FROM users GROUP BY lower(email COLLATE "C") HAVING count(*) > 1
    UNION ALL
    SELECT 2, 'pending invitations of organization ' || org_id || ' ' || string_agg(email, ', ' ORDER BY email COLLATE "C")
      FROM org_invitations WHERE status = 'pending' GROUP BY org_id, lower(email COLLATE "C") HAVING count(*) > 1
  ) clashes;
  IF clash IS NOT NULL THEN
    RAISE EXCEPTION 'emails that differ only in the case of ASCII letters are one account from this version on: %', clash;
  END IF;
END $$;

DROP INDEX users_email;
CREATE UNIQUE INDEX users_email ON users (lower(email COLLATE "C"));
DROP INDEX org_invitations_pending;
CREATE UNIQUE INDEX org_invitations_pending ON org_invitations (org_id, lower(email COLLATE "C")) WHERE status = 'pending';
DROP INDEX org_invitations_email;
CREATE INDEX org_invitations_email ON org_invitations (lower(email COLLATE "C")) WHERE status = 'pending';
