-- Roles beyond owner and member (docs/management.md, "Roles"): `operator` and `viewer`, in a
-- membership and in an invitation.
--
-- SQLite cannot alter a CHECK constraint; widening one changes nothing stored, so the tables'
-- definitions are edited in place, as SQLite's documentation describes for this change
-- (https://sqlite.org/lang_altertable.html, "making other kinds of table schema changes"), as
-- 0026_fleet_runs does. The migrator allows this on its connection while it migrates.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
  SET sql = replace(sql, 'role        TEXT NOT NULL CHECK (role IN (''owner'', ''member''))',
                         'role        TEXT NOT NULL CHECK (role IN (''owner'', ''operator'', ''member'', ''viewer''))')
  WHERE type = 'table' AND name IN ('memberships', 'org_invitations');
PRAGMA writable_schema = RESET;
-- Both edits took: otherwise this migration fails (and rolls back).
CREATE TEMP TABLE roles_check (edited INTEGER CHECK (edited = 2));
INSERT INTO roles_check
  SELECT count(*) FROM sqlite_master
  WHERE type = 'table' AND name IN ('memberships', 'org_invitations') AND sql LIKE '%''operator'', ''member'', ''viewer''%';
DROP TABLE roles_check;
