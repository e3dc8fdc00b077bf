-- An application's chat channel (docs/ota.md, "Staged rollouts"): a rollout that pauses by itself
-- posts there, naming the wave and its failed devices. NULL: none.
ALTER TABLE applications ADD COLUMN notify_provider text CHECK (notify_provider IN ('slack', 'discord'));
ALTER TABLE applications ADD COLUMN notify_team_id text;
ALTER TABLE applications ADD COLUMN notify_channel_id text;
