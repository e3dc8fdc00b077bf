-- Who may run a chat trigger (docs/chat.md, "Who may run"): a JSON array of the provider's user
-- ids, or NULL for anyone who can write in the trigger's channel.
ALTER TABLE triggers ADD COLUMN chat_allowed_user_ids TEXT;
