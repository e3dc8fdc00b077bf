--! breaking-change
-- Breaking (docs/scaling.md, "Breaking migrations"): coordinators before it store log lines
-- without counting them here, so the counts of the jobs they serve would go wrong.
-- A job's stored log is capped (DROVER_JOB_LOG_MAX_BYTES, docs/jobs.md "Log lines"). One row per
-- job with log lines: what its log holds now and the gap the cap made in it, so that each batch
-- of lines is checked against the cap without reading the log.
CREATE TABLE job_log_usage (
  job_id         TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  lines          INTEGER NOT NULL,            -- lines stored, the gap's line included
  bytes          INTEGER NOT NULL,            -- their text's bytes (UTF-8)
  -- The dropped lines' seqs run from gap_first_seq to gap_last_seq; the line that says how many
  -- were dropped is stored at gap_last_seq. Both NULL: nothing was dropped.
  gap_first_seq  INTEGER,
  gap_last_seq   INTEGER,
  dropped_lines  INTEGER NOT NULL DEFAULT 0,
  dropped_bytes  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO job_log_usage (job_id, lines, bytes)
  SELECT job_id, count(*), sum(length(CAST(text AS BLOB))) FROM job_logs GROUP BY job_id;
