-- A cron trigger's runs answer no caller and are never debug runs (docs/schedules.md): cron
-- triggers made before this rule keep none of the answer settings the rule now refuses.
UPDATE triggers SET response_mode = 'async', response_timeout_ms = 30000, allow_debug = 0 WHERE type = 'cron';
