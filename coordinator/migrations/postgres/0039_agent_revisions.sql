-- An agent's revision counts the changes operators made to it (its name, its operators' labels):
-- the management API answers it, and a change sent with `If-Match: "<revision>"` is refused with
-- 412 once another was made since, where the later of two label edits made at once would have
-- replaced the earlier's labels unseen (docs/fleets.md, "Labels").
--
-- Not breaking: an older coordinator beside this schema changes names and labels without counting
-- them, so a change made through it during a rolling upgrade is not seen by an `If-Match`.
ALTER TABLE agents ADD COLUMN revision integer NOT NULL DEFAULT 0;
