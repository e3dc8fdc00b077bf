-- One trigger's batches, newest first (GET /v1/orgs/:orgId/batches?triggerId=, the trigger page):
-- a seek instead of a walk back through every batch of the organization (100,000 batches, a
-- trigger with 5 old ones: 14-35 ms on SQLite, a scan of every organization's on PostgreSQL; with
-- the index under 0.5 ms).
CREATE INDEX batches_org_trigger ON batches(org_id, trigger_id, number);
