-- The queue capacity an agent's stream announced when it last connected (docs/agent-protocol.md):
-- a pool (docs/fleets.md) hands a job to an agent with room in its queue, whichever coordinator
-- holds its stream. NULL: not connected since this column came (the default capacity, 4).
ALTER TABLE agents ADD COLUMN queue_capacity integer;
