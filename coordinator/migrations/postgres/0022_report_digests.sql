-- What the agent last reported (docs/agent-protocol.md §6.1): the SHA-256 of the exact body of its
-- last accepted workflows report and of its last accepted labels report. An agent reconnecting
-- with nothing new claims these instead of reporting both again; a claim that differs (a database
-- restored from a backup, say) is refused with 409 and the agent reports again.
ALTER TABLE agents ADD COLUMN workflows_digest text;
ALTER TABLE agents ADD COLUMN labels_digest text;
