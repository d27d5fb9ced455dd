-- Which docs changed, not only how many writes there were: a full-text index that lags the
-- store catches up by comparing the docs logged after the `docs_version` it synced to (a save
-- at 100k docs compares one doc, not every doc). Each trigger that bumps `docs_version` also
-- logs the doc it touched under the count it reached. The log holds every change after
-- `docs_changes_from`; an index synced before that compares every doc, as before.
CREATE TABLE IF NOT EXISTS docs_changes (
    n INTEGER NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (n, key)
) WITHOUT ROWID;
INSERT OR REPLACE INTO settings (key, value)
    SELECT 'docs_changes_from', value FROM settings WHERE key = 'docs_version';
DROP TRIGGER IF EXISTS docs_version_insert;
DROP TRIGGER IF EXISTS docs_version_update;
DROP TRIGGER IF EXISTS docs_version_delete;
CREATE TRIGGER docs_version_insert AFTER INSERT ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
    INSERT OR IGNORE INTO docs_changes (n, key) SELECT CAST(value AS INTEGER), NEW.canonical_id
        FROM settings WHERE key = 'docs_version';
END;
CREATE TRIGGER docs_version_update AFTER UPDATE ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
    INSERT OR IGNORE INTO docs_changes (n, key)
        SELECT CAST(s.value AS INTEGER), k.id
        FROM settings s, (SELECT NEW.canonical_id AS id UNION SELECT OLD.canonical_id) k
        WHERE s.key = 'docs_version';
END;
CREATE TRIGGER docs_version_delete AFTER DELETE ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
    INSERT OR IGNORE INTO docs_changes (n, key) SELECT CAST(value AS INTEGER), OLD.canonical_id
        FROM settings WHERE key = 'docs_version';
END;
