-- The audit log's index by target holds only the entries that have one. Entries without a target
-- (a token's discovery calls, `api_token.discover`, one per call) no longer pay for an index entry
-- nobody can look up: the listing by target compares target_id with a value, which implies it is
-- not NULL, so it still uses this index (docs/performance.md, "Token discovery").
DROP INDEX audit_log_target;
CREATE INDEX audit_log_target ON audit_log(org_id, target_id, id DESC) WHERE target_id IS NOT NULL;
