-- Which docs' rows changed, not only how many writes there were: a vector sidecar that lags
-- the store catches up by re-reading the docs logged after the state it records (a save at
-- 100k rows re-reads one row, not every row). Each trigger that counts a write also logs the
-- doc it touched, under the count it reached (stream 'e' for `embeddings_changes`, 'm' for
-- `memory_tags_changes`, a memory's doc id for its tags). The log holds every change after the
-- counts in `vector_changes_from_e` / `_m`; a sidecar older than those is rebuilt whole.
CREATE TABLE IF NOT EXISTS vector_changes (
    stream TEXT NOT NULL,
    n INTEGER NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (stream, n, key)
) WITHOUT ROWID;
INSERT OR REPLACE INTO settings (key, value)
    SELECT 'vector_changes_from_e', value FROM settings WHERE key = 'embeddings_changes';
INSERT OR REPLACE INTO settings (key, value)
    SELECT 'vector_changes_from_m', value FROM settings WHERE key = 'memory_tags_changes';
DROP TRIGGER IF EXISTS embeddings_changes_insert;
DROP TRIGGER IF EXISTS embeddings_changes_update;
DROP TRIGGER IF EXISTS embeddings_changes_delete;
DROP TRIGGER IF EXISTS embeddings_changes_doc_delete;
DROP TRIGGER IF EXISTS embeddings_changes_doc_insert;
DROP TRIGGER IF EXISTS embeddings_changes_doc_kind;
DROP TRIGGER IF EXISTS memory_tags_changes_insert;
DROP TRIGGER IF EXISTS memory_tags_changes_delete;
CREATE TRIGGER embeddings_changes_insert AFTER INSERT ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key) SELECT 'e', CAST(value AS INTEGER), NEW.canonical_id
        FROM settings WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER embeddings_changes_update AFTER UPDATE ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key)
        SELECT 'e', CAST(s.value AS INTEGER), k.id
        FROM settings s, (SELECT NEW.canonical_id AS id UNION SELECT OLD.canonical_id) k
        WHERE s.key = 'embeddings_changes';
END;
CREATE TRIGGER embeddings_changes_delete AFTER DELETE ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key) SELECT 'e', CAST(value AS INTEGER), OLD.canonical_id
        FROM settings WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER embeddings_changes_doc_delete AFTER DELETE ON docs
WHEN EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = OLD.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key) SELECT 'e', CAST(value AS INTEGER), OLD.canonical_id
        FROM settings WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER embeddings_changes_doc_insert AFTER INSERT ON docs
WHEN EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key) SELECT 'e', CAST(value AS INTEGER), NEW.canonical_id
        FROM settings WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER embeddings_changes_doc_kind AFTER UPDATE OF doc_kind ON docs
WHEN OLD.doc_kind <> NEW.doc_kind
AND EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key) SELECT 'e', CAST(value AS INTEGER), NEW.canonical_id
        FROM settings WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER memory_tags_changes_insert AFTER INSERT ON memory_entities BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_tags_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key)
        SELECT 'm', CAST(value AS INTEGER), 'memory:' || NEW.memory_id
        FROM settings WHERE key = 'memory_tags_changes';
END;
CREATE TRIGGER memory_tags_changes_delete AFTER DELETE ON memory_entities BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_tags_changes';
    INSERT OR IGNORE INTO vector_changes (stream, n, key)
        SELECT 'm', CAST(value AS INTEGER), 'memory:' || OLD.memory_id
        FROM settings WHERE key = 'memory_tags_changes';
END;
