-- A cron trigger on a label selector with fanout "all" makes a batch at each occurrence
-- (docs/fleets.md): the occurrence's record names it.
ALTER TABLE cron_occurrences ADD COLUMN batch_id TEXT;
