-- Stored files (spec: Stored file, File status; CONTRACT §6): the metadata of every file kept in
-- a storage binding. The blob itself lives in the binding's backend under `blob_key`, which is
-- derived from the file id only (never from the filename). Rows are kept after deletion (status
-- `deleted`, `deleted_at`) so that the metadata still answers.

CREATE TABLE files (
  id                   TEXT PRIMARY KEY,
  org_id               TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  binding_id           TEXT NOT NULL REFERENCES storage_bindings(id),
  filename             TEXT NOT NULL,
  content_type         TEXT NOT NULL,
  size                 INTEGER,          -- NULL until complete
  sha256               TEXT,             -- lowercase hex; NULL until complete
  -- What the uploader announced (agent job outputs): complete refuses a blob that differs.
  declared_size        INTEGER,
  declared_sha256      TEXT,
  status               TEXT NOT NULL CHECK (status IN ('pending', 'active', 'deleting', 'deleted', 'delete_failed')),
  -- 'on_job_end' is internal (never accepted by the public API).
  cleanup_rule         TEXT NOT NULL CHECK (cleanup_rule IN ('ttl', 'persistent', 'on_job_end')),
  ttl_seconds          INTEGER,          -- with 'ttl': the lifetime counted from completion
  expires_at           TEXT,
  deleted_at           TEXT,
  created_at           TEXT NOT NULL,
  completed_at         TEXT,
  -- When the upload URL issued at presign expires; a file still pending long after is swept.
  upload_expires_at    TEXT NOT NULL,
  blob_key             TEXT NOT NULL,
  origin               TEXT NOT NULL CHECK (origin IN ('api', 'agent')),
  created_by_token_id  TEXT,
  job_id               TEXT,             -- output files of a job
  delete_attempts      INTEGER NOT NULL DEFAULT 0,
  -- For 'deleting': the end of the current attempt's lease; for 'delete_failed': the next retry.
  next_delete_at       TEXT,
  last_delete_error    TEXT
);
-- Listing, newest first, per organization and per binding.
CREATE INDEX files_org_created ON files(org_id, created_at DESC);
CREATE INDEX files_binding_created ON files(binding_id, created_at DESC);
-- The sweeper: expired files, abandoned uploads, deletions to retry.
CREATE INDEX files_expiry ON files(expires_at) WHERE status = 'active' AND expires_at IS NOT NULL;
CREATE INDEX files_abandoned ON files(upload_expires_at) WHERE status = 'pending';
CREATE INDEX files_delete_retry ON files(next_delete_at) WHERE status IN ('deleting', 'delete_failed');
CREATE INDEX files_job ON files(job_id) WHERE job_id IS NOT NULL;
