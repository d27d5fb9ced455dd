-- The vector sidecar (`<store>.vectors/`) records each row's datasources, and a memory's come
-- from its tags: it is current while `embeddings_changes` and `memory_tags_changes` are what
-- it recorded, in the store `store_id` names (a new store at the same path restarts the
-- counters, never the id).
INSERT OR IGNORE INTO settings (key, value) VALUES ('memory_tags_changes', '0');
INSERT OR IGNORE INTO settings (key, value) VALUES ('store_id', lower(hex(randomblob(16))));
CREATE TRIGGER IF NOT EXISTS memory_tags_changes_insert AFTER INSERT ON memory_entities BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_tags_changes';
END;
CREATE TRIGGER IF NOT EXISTS memory_tags_changes_delete AFTER DELETE ON memory_entities BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_tags_changes';
END;
