-- A counter bumped by every change to docs, so a reader can tell in one lookup whether the
-- full-text index (which records the counter it synced to) is current.
INSERT OR IGNORE INTO settings (key, value) VALUES ('docs_version', '0');
CREATE TRIGGER docs_version_insert AFTER INSERT ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
END;
CREATE TRIGGER docs_version_update AFTER UPDATE ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
END;
CREATE TRIGGER docs_version_delete AFTER DELETE ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
END;
