-- Who started a chat run, and where (docs/chat.md, "Chat triggers"): JSON
-- `{provider, teamId, channelId, userId, userName}` on jobs whose source is slack or discord;
-- NULL for every other job. Shown on the job page and used to answer in the channel.
ALTER TABLE jobs ADD COLUMN chat_origin TEXT;

-- Chat triggers are found by provider, workspace and channel at every command.
CREATE INDEX triggers_chat ON triggers(type, chat_team_id, chat_channel_id) WHERE deleted_at IS NULL AND chat_team_id IS NOT NULL;
