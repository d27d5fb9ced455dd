-- Version 6: the change log and the counts of memories, their tags and docs are kept by
-- statement-level triggers over transition tables, not a PL/pgSQL call per row: a batch write
-- (`import`, `load`: thousands of rows to a statement) logs its keys in one INSERT … SELECT
-- per statement. What they write is what the row triggers of version 1 wrote: one `changes`
-- row per (stream, key) (changes_replace keeps the latest), the memory and tag counts unless a
-- bulk write suspended them, and the transaction's docs delta. Safe to run again.

DROP TRIGGER IF EXISTS memories_changes ON memories;
DROP TRIGGER IF EXISTS memory_tags_changes ON memory_entities;
DROP TRIGGER IF EXISTS docs_changes ON docs;
DROP FUNCTION IF EXISTS memories_changes();
DROP FUNCTION IF EXISTS memory_tags_changes();
DROP FUNCTION IF EXISTS docs_changes();

CREATE OR REPLACE FUNCTION counting() RETURNS boolean LANGUAGE sql AS $$
    SELECT current_setting('slayer.suspend_counts', true) IS DISTINCT FROM 'on'
$$;

-- memories: stream `memories`, and the memory count.
CREATE OR REPLACE FUNCTION memories_inserted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO changes (stream, key) SELECT 'memories', id FROM new_rows;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 AND counting() THEN
        UPDATE counters SET value = value + n WHERE name = 'memory_count';
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memories_updated() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (stream, key) SELECT 'memories', id FROM new_rows;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memories_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO changes (stream, key) SELECT 'memories', id FROM old_rows;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 AND counting() THEN
        UPDATE counters SET value = value - n WHERE name = 'memory_count';
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS memories_inserted ON memories;
DROP TRIGGER IF EXISTS memories_updated ON memories;
DROP TRIGGER IF EXISTS memories_deleted ON memories;
CREATE TRIGGER memories_inserted AFTER INSERT ON memories
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memories_inserted();
CREATE TRIGGER memories_updated AFTER UPDATE ON memories
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memories_updated();
CREATE TRIGGER memories_deleted AFTER DELETE ON memories
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memories_deleted();

-- memory_entities (only ever inserted and deleted): stream `memory_tags` (one row per memory),
-- and the tag counts (a memory's tag on itself is not counted).
CREATE OR REPLACE FUNCTION memory_tags_inserted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (stream, key) SELECT DISTINCT 'memory_tags', memory_id FROM new_rows;
    IF counting() THEN
        INSERT INTO tag_counts (entity, memories)
            SELECT entity, count(*) FROM new_rows
            WHERE entity <> 'memory:' || memory_id GROUP BY entity
            ON CONFLICT (entity) DO UPDATE SET memories = tag_counts.memories + excluded.memories;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memory_tags_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (stream, key) SELECT DISTINCT 'memory_tags', memory_id FROM old_rows;
    IF counting() THEN
        UPDATE tag_counts t SET memories = t.memories - d.n
        FROM (SELECT entity, count(*) AS n FROM old_rows
              WHERE entity <> 'memory:' || memory_id GROUP BY entity) d
        WHERE t.entity = d.entity;
        DELETE FROM tag_counts WHERE memories <= 0 AND entity IN (SELECT entity FROM old_rows);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS memory_tags_inserted ON memory_entities;
DROP TRIGGER IF EXISTS memory_tags_deleted ON memory_entities;
CREATE TRIGGER memory_tags_inserted AFTER INSERT ON memory_entities
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_tags_inserted();
CREATE TRIGGER memory_tags_deleted AFTER DELETE ON memory_entities
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_tags_deleted();

-- docs: stream `docs` always; stream `embeddings` when a doc with a row comes, goes or changes
-- kind; and the transaction's docs delta (added to the counter at commit by docs_count_flush).
CREATE OR REPLACE FUNCTION docs_inserted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO changes (stream, key) SELECT 'docs', canonical_id FROM new_rows;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM set_config('slayer.docs_delta', (docs_delta() + n)::text, true);
        INSERT INTO changes (stream, key)
            SELECT 'embeddings', d.canonical_id FROM new_rows d
            WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.canonical_id = d.canonical_id);
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION docs_updated() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (stream, key) SELECT 'docs', canonical_id FROM new_rows;
    INSERT INTO changes (stream, key)
        SELECT 'embeddings', d.canonical_id FROM new_rows d
        JOIN old_rows o ON o.canonical_id = d.canonical_id
        WHERE o.doc_kind <> d.doc_kind
          AND EXISTS (SELECT 1 FROM embeddings e WHERE e.canonical_id = d.canonical_id);
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION docs_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO changes (stream, key) SELECT 'docs', canonical_id FROM old_rows;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM set_config('slayer.docs_delta', (docs_delta() - n)::text, true);
        INSERT INTO changes (stream, key)
            SELECT 'embeddings', d.canonical_id FROM old_rows d
            WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.canonical_id = d.canonical_id);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS docs_inserted ON docs;
DROP TRIGGER IF EXISTS docs_updated ON docs;
DROP TRIGGER IF EXISTS docs_deleted ON docs;
CREATE TRIGGER docs_inserted AFTER INSERT ON docs
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION docs_inserted();
CREATE TRIGGER docs_updated AFTER UPDATE ON docs
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION docs_updated();
CREATE TRIGGER docs_deleted AFTER DELETE ON docs
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION docs_deleted();
