-- Enrollment tokens are listed and revoked (GET and DELETE /v1/orgs/:orgId/enrollment-tokens): a
-- token made for a batch of machines lives up to 30 days, and one that leaked (pasted into a
-- ticket, a chat, a provisioning script in the wrong repository) could enroll a machine of
-- anyone's until it expired, which its selector-matching labels would then send jobs to.
-- `revoked_at` and `revoked_by` record the revocation; enrollment refuses a revoked token. The
-- list is newest first by insertion (the rowid), per organization.
--
-- Not breaking: two columns, empty on the tokens there are, and an index.
ALTER TABLE enrollment_tokens ADD COLUMN revoked_at TEXT;
ALTER TABLE enrollment_tokens ADD COLUMN revoked_by TEXT REFERENCES users(id) ON DELETE SET NULL;
CREATE INDEX enrollment_tokens_org ON enrollment_tokens(org_id);
