-- Agent labels (docs/fleets.md): those the agent reports of itself when it connects, and those
-- operators set; each a JSON object of key to value. The agent view merges them (operators win).
ALTER TABLE agents ADD COLUMN reported_labels json NOT NULL DEFAULT '{}';
ALTER TABLE agents ADD COLUMN operator_labels json NOT NULL DEFAULT '{}';
