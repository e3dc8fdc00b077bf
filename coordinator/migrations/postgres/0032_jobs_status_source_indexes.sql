-- The jobs list filtered by status or by source (GET /v1/orgs/:orgId/jobs?status=... or
-- ?source=..., the dashboard's filters) walks an index of the organization's trigger jobs of that
-- status or source instead of its whole history: a value few jobs have (queued, rejected, timed
-- out; Discord, Slack, runs by hand: none at all, often) read every job of the organization to
-- fill a page, 500,000 of them (on SQLite in 0.8-1.4 s, the event loop held meanwhile)
-- (docs/performance.md, "Jobs list"). Only trigger jobs, the only ones the list shows: an OTA
-- publish's update jobs pay for no entry.
--
-- Not breaking: indexes only.
CREATE INDEX jobs_org_status ON jobs (org_id, status, seq DESC) WHERE kind = 'trigger';
CREATE INDEX jobs_org_source ON jobs (org_id, source, seq DESC) WHERE kind = 'trigger';
