-- A change counter for the tables that memory caches mirror (token lookups, token discovery):
-- triggers bump it on every insert, update and delete of agents, workflows, triggers and
-- api_tokens, and memberships (a token's issuer must still be a member), whoever writes (the server, the CLI, a cascade). A cache entry that remembers the
-- generation it was filled at is exact while the generation is unchanged; reading it is one
-- single-row lookup (docs/performance.md).
CREATE TABLE change_counter (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  generation  INTEGER NOT NULL
);
INSERT INTO change_counter (id, generation) VALUES (1, 0);

CREATE TRIGGER agents_counted_insert AFTER INSERT ON agents BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER agents_counted_update AFTER UPDATE ON agents BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER agents_counted_delete AFTER DELETE ON agents BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER workflows_counted_insert AFTER INSERT ON workflows BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER workflows_counted_update AFTER UPDATE ON workflows BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER workflows_counted_delete AFTER DELETE ON workflows BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER triggers_counted_insert AFTER INSERT ON triggers BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER triggers_counted_update AFTER UPDATE ON triggers BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER triggers_counted_delete AFTER DELETE ON triggers BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER api_tokens_counted_insert AFTER INSERT ON api_tokens BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER api_tokens_counted_update AFTER UPDATE ON api_tokens BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER api_tokens_counted_delete AFTER DELETE ON api_tokens BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER memberships_counted_insert AFTER INSERT ON memberships BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER memberships_counted_update AFTER UPDATE ON memberships BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER memberships_counted_delete AFTER DELETE ON memberships BEGIN
  UPDATE change_counter SET generation = generation + 1 WHERE id = 1;
END;
