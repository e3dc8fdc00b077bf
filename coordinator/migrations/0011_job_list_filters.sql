-- The dashboard's job list filtered by agent (docs/jobs.md, "Reading jobs"): an agent's jobs,
-- newest first, without scanning the organization's.
CREATE INDEX jobs_agent_seq ON jobs(agent_id, seq DESC);
