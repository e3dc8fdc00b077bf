--! breaking-change
-- Breaking (docs/scaling.md, "Breaking migrations"): coordinators before it store log lines
-- without counting them here, so the counts of the jobs they serve would go wrong.
-- A job's stored log is capped (DROVER_JOB_LOG_MAX_BYTES, docs/jobs.md "Log lines"). One row per
-- job with log lines: what its log holds now and the gap the cap made in it, so that each batch
-- of lines is checked against the cap without reading the log.
CREATE TABLE job_log_usage (
  job_id         text PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  lines          bigint NOT NULL,             -- lines stored, the gap's line included
  bytes          bigint NOT NULL,             -- their text's bytes (UTF-8)
  -- The dropped lines' seqs run from gap_first_seq to gap_last_seq; the line that says how many
  -- were dropped is stored at gap_last_seq. Both NULL: nothing was dropped.
  gap_first_seq  bigint,
  gap_last_seq   bigint,
  dropped_lines  bigint NOT NULL DEFAULT 0,
  dropped_bytes  bigint NOT NULL DEFAULT 0
);

INSERT INTO job_log_usage (job_id, lines, bytes)
  SELECT job_id, count(*), sum(octet_length(text)) FROM job_logs GROUP BY job_id;
