-- Job cancellation (docs/jobs.md, "Cancellation").

-- When a user asked to cancel the job. A pending or queued job is cancelled at once; a running one
-- stays running until its agent reports how it ended (or the deadline sweep ends it).
ALTER TABLE jobs ADD COLUMN cancel_requested_at TEXT;
-- When the agent confirmed the cancel: its first report about the job once the job had ended.
-- Until then the agent gets a `cancel` event at every stream (re)connect.
ALTER TABLE jobs ADD COLUMN cancel_acked_at TEXT;
-- The cancels still to confirm, per agent (read at every stream connect).
CREATE INDEX jobs_cancel_unacked ON jobs(agent_id, seq)
  WHERE cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL;

-- The workflow's `cancelGrace` (ms between SIGTERM and SIGKILL to a cancelled job's steps) as the
-- agent reported it; NULL: the default (10 s). Used to give a running job's agent time to confirm.
ALTER TABLE workflows ADD COLUMN cancel_grace_ms INTEGER;

-- The update job a user cancelled: while set, the binding gets no new update job, until a
-- reconcile, a publish, a yank, a channel change or a new update workflow (docs/ota.md).
ALTER TABLE device_bindings ADD COLUMN cancelled_job_id TEXT;
