-- Maintenance windows of applications (docs/ota.md, "Maintenance windows").

-- The application's window, as JSON `{"cron": "0 2 * * *", "timezone": "Europe/Berlin",
-- "durationMinutes": 120}` (the expression normalized, the zone canonical); NULL: no window,
-- updates start at once.
ALTER TABLE applications ADD COLUMN maintenance_window json;

-- The opening of the next window while the binding's update waits for it (the last evaluation
-- held it for the window); NULL otherwise. The retry sweep evaluates the binding again then.
ALTER TABLE device_bindings ADD COLUMN window_opens_at timestamptz;
-- The end of the window in which the binding's pending update job was issued: the sweep
-- evaluates the binding then, and withdraws the job if the agent has not taken it. NULL otherwise.
ALTER TABLE device_bindings ADD COLUMN window_closes_at timestamptz;
CREATE INDEX device_bindings_window_opens ON device_bindings (window_opens_at) WHERE window_opens_at IS NOT NULL;
CREATE INDEX device_bindings_window_closes ON device_bindings (window_closes_at) WHERE window_closes_at IS NOT NULL;
