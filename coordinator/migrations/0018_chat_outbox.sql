-- Messages to post to chat providers (docs/chat.md, "Notifications"): written in the same
-- transaction as the change that causes them (a job's end), sent later by the delivery worker,
-- so a coordinator that stops right after loses none and the job path never waits for a
-- provider. General enough for every message Drover posts: `target` says where (a channel of a
-- workspace today; a reply address such as Slack's response_url later), `payload` what, as JSON.
--
-- `status`: `pending` (waiting for `next_attempt_at`), `sending` (claimed by a worker until
-- `next_attempt_at`, its lease; `claim_token` names the claim, so a worker whose lease ran out
-- cannot overwrite the next one's result), `sent`, `failed` (given up; `last_error` says why).
-- `dedupe_key` makes the enqueue idempotent: one message per job's end.
CREATE TABLE chat_outbox (
  id               INTEGER PRIMARY KEY,
  org_id           TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  dedupe_key       TEXT NOT NULL UNIQUE,
  job_id           TEXT REFERENCES jobs(id) ON DELETE CASCADE,
  provider         TEXT NOT NULL CHECK (provider IN ('slack', 'discord')),
  target           TEXT NOT NULL,
  payload          TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT NOT NULL,
  claim_token      TEXT,
  last_error       TEXT,
  created_at       TEXT NOT NULL,
  sent_at          TEXT,
  failed_at        TEXT
);
CREATE INDEX chat_outbox_due ON chat_outbox(next_attempt_at) WHERE status IN ('pending', 'sending');
CREATE INDEX chat_outbox_job ON chat_outbox(job_id) WHERE job_id IS NOT NULL;
