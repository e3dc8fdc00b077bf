-- The audit log filtered by target (docs/management.md, "Audit log"): one target's entries,
-- newest first, without scanning the organization's.
CREATE INDEX audit_log_target ON audit_log(org_id, target_id, id DESC);
