-- Version 4: the change log keeps one row per (stream, key), the key's latest. Readers ask only
-- which keys changed after a seq (and each stream's largest seq): a key changed after N has
-- its latest row after N, so dropping its earlier rows answers every reader the same, while
-- the log stops growing with every write (a memory saved a thousand times is one row, not a
-- thousand). A change replaces the key's row as it is logged; the rows logged before this
-- version are compacted once. Safe to run again.
CREATE INDEX IF NOT EXISTS idx_changes_key ON changes (stream, key);
DELETE FROM changes c
WHERE EXISTS (SELECT 1 FROM changes n WHERE n.stream = c.stream AND n.key = c.key AND n.seq > c.seq);
CREATE OR REPLACE FUNCTION changes_replace() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM changes WHERE stream = NEW.stream AND key = NEW.key;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS changes_replace ON changes;
CREATE TRIGGER changes_replace BEFORE INSERT ON changes
FOR EACH ROW EXECUTE FUNCTION changes_replace();
