-- Members upload files from the dashboard (docs/storage.md, "Files in the dashboard"): the member
-- who uploaded a file is kept beside the API token that did (`created_by_token_id`); a file an
-- agent made for a job has neither. Files uploaded before this migration keep NULL.
ALTER TABLE files ADD COLUMN created_by_user_id TEXT;
