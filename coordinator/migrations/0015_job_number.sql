-- A number per organization for every job (docs/jobs.md, "Job numbers"): 1, 2, 3, ... in the
-- order the organization's jobs were created, shown wherever a job is shown (the dashboard,
-- chat messages). Assigned at insert as the organization's highest number plus one, in the
-- same write transaction; the unique index makes that a seek and keeps two jobs from sharing one.
ALTER TABLE jobs ADD COLUMN number INTEGER;
UPDATE jobs SET number = numbered.n
  FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY org_id ORDER BY seq) AS n FROM jobs) AS numbered
  WHERE numbered.id = jobs.id;
CREATE UNIQUE INDEX jobs_org_number ON jobs(org_id, number);
