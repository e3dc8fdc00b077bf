-- Enrollment refuses a public key another agent already has, in any organization, revoked agents
-- included (docs/agent-protocol.md, "Enrollment"): the lookup goes through this index instead of a
-- scan of every agent inside the enrollment's transaction. Not unique: agents enrolled on one key
-- before this version keep working.
--
-- Not breaking: an index only.
CREATE INDEX agents_public_key ON agents (public_key);
