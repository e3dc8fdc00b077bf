-- Device groups (docs/ota.md, "Device groups"): an application's label selector, whose matching
-- agents are bound to it (NULL: none), and where each binding comes from: `manual` (bound by
-- `agentIds`, the default of the bindings made before) or `selector` (bound by the selector).
ALTER TABLE applications ADD COLUMN device_selector text;
ALTER TABLE device_bindings ADD COLUMN origin text NOT NULL DEFAULT 'manual' CHECK (origin IN ('manual', 'selector'));
-- The applications of an organization that have a selector: what an agent's new labels are checked against.
CREATE INDEX applications_org_selector ON applications (org_id) WHERE device_selector IS NOT NULL AND deleted_at IS NULL;
