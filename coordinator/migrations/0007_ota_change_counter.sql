-- A change counter for the OTA tables the signed-manifest path keeps in memory (an application
-- and its releases, per application): triggers bump it on every insert, update and delete of
-- applications and releases, whoever writes. Kept apart from change_counter (0002), which agents'
-- heartbeats bump, so that a busy fleet does not empty this cache (docs/performance.md).
CREATE TABLE ota_change_counter (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  generation  INTEGER NOT NULL
);
INSERT INTO ota_change_counter (id, generation) VALUES (1, 0);

CREATE TRIGGER applications_ota_counted_insert AFTER INSERT ON applications BEGIN
  UPDATE ota_change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER applications_ota_counted_update AFTER UPDATE ON applications BEGIN
  UPDATE ota_change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER applications_ota_counted_delete AFTER DELETE ON applications BEGIN
  UPDATE ota_change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER releases_ota_counted_insert AFTER INSERT ON releases BEGIN
  UPDATE ota_change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER releases_ota_counted_update AFTER UPDATE ON releases BEGIN
  UPDATE ota_change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER releases_ota_counted_delete AFTER DELETE ON releases BEGIN
  UPDATE ota_change_counter SET generation = generation + 1 WHERE id = 1;
END;
