-- A long-lived search keeps every vector in memory. `embeddings_changes` counts the writes
-- that can change which rows are live (a row written or deleted, a doc with a row deleted
-- or added), so one read tells it that nothing changed; when something did, it compares the
-- rows' versions (rowid, content hash, write time) from this index, without reading the
-- vectors' pages, and reads only the rows that changed.
CREATE INDEX IF NOT EXISTS idx_embeddings_versions ON embeddings(model_name, canonical_id, content_hash, updated_at);
INSERT OR IGNORE INTO settings (key, value) VALUES ('embeddings_changes', '0');
CREATE TRIGGER IF NOT EXISTS embeddings_changes_insert AFTER INSERT ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_update AFTER UPDATE ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_delete AFTER DELETE ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_doc_delete AFTER DELETE ON docs
WHEN EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = OLD.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_doc_insert AFTER INSERT ON docs
WHEN EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_doc_kind AFTER UPDATE OF doc_kind ON docs
WHEN OLD.doc_kind <> NEW.doc_kind
AND EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
