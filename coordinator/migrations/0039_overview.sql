-- The home page's overview (GET /v1/orgs/:orgId/overview, docs/dashboard.md): an organization's
-- running jobs, newest first, from an index of the running ones alone instead of a walk back
-- through every job of the organization (100,000 jobs none of which runs: the whole table).
CREATE INDEX jobs_org_running ON jobs(org_id, seq) WHERE status = 'running';
