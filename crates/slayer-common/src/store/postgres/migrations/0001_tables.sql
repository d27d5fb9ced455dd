-- The PostgreSQL store, version 1: the tables of the SQLite store at its version 8, in the
-- store's own schema (the connection's search_path names it). Every compared or sorted text is
-- COLLATE "C": SQLite compares bytes, and results must come back in the same order whatever the
-- database's default collation. JSON stays `text`, byte for byte as written.
CREATE TABLE schema_version (
    version bigint NOT NULL
);
CREATE TABLE datasources (
    name text COLLATE "C" PRIMARY KEY,
    data text NOT NULL
);
CREATE TABLE models (
    data_source text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (data_source, name)
);
-- A model's skeleton goes with it (SQLite: the model_skeletons_delete trigger).
CREATE TABLE model_skeletons (
    data_source text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    skeleton text NOT NULL,
    PRIMARY KEY (data_source, name),
    FOREIGN KEY (data_source, name) REFERENCES models ON DELETE CASCADE
);
CREATE TABLE memories (
    id text COLLATE "C" PRIMARY KEY,
    data text NOT NULL,
    created_at text COLLATE "C" NOT NULL,
    has_query boolean NOT NULL DEFAULT false,
    tier text COLLATE "C" NOT NULL DEFAULT 'lesson',
    confidence double precision NOT NULL DEFAULT 1,
    strength double precision NOT NULL DEFAULT 1,
    project text COLLATE "C",
    agent text COLLATE "C",
    deleted boolean NOT NULL DEFAULT false
);
CREATE INDEX idx_memories_recency ON memories (created_at DESC, id);
CREATE INDEX idx_memories_with_query ON memories (id) WHERE has_query;
CREATE INDEX idx_memories_marked ON memories (id)
    INCLUDE (tier, confidence, strength, project, agent, deleted)
    WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
       OR agent IS NOT NULL OR deleted;
CREATE TABLE memory_entities (
    memory_id text COLLATE "C" NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    entity text COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, entity)
);
CREATE INDEX idx_memory_entities_entity ON memory_entities (entity, memory_id);
CREATE TABLE docs (
    canonical_id text COLLATE "C" PRIMARY KEY,
    doc_kind text COLLATE "C" NOT NULL,
    datasource text COLLATE "C",
    model text COLLATE "C",
    position bigint NOT NULL,
    text text NOT NULL,
    content_hash text COLLATE "C" NOT NULL,
    embedding_text text
);
CREATE INDEX idx_docs_datasource ON docs (datasource);
-- A row's version is "<row_version> <content_hash> <updated_at>": row_version is drawn anew on
-- every insert and update (SQLite's INSERT OR REPLACE gave the row a new rowid).
CREATE SEQUENCE embedding_row_versions;
CREATE TABLE embeddings (
    canonical_id text COLLATE "C" NOT NULL,
    model_name text COLLATE "C" NOT NULL,
    content_hash text COLLATE "C" NOT NULL,
    dim integer NOT NULL,
    vector bytea NOT NULL,
    updated_at text COLLATE "C" NOT NULL,
    model_revision text COLLATE "C" NOT NULL DEFAULT '',
    row_version bigint NOT NULL DEFAULT nextval('embedding_row_versions'),
    PRIMARY KEY (canonical_id, model_name)
);
-- Live rows and their versions come from the index alone, in canonical id order.
CREATE INDEX idx_embeddings_versions ON embeddings (model_name, model_revision, canonical_id)
    INCLUDE (row_version, content_hash, updated_at);
CREATE TABLE settings (
    key text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO settings (key, value) VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''));
-- How many memories carry each tag (a memory's tag naming itself aside), and how many memories
-- there are, kept by triggers: search reads them per request.
CREATE TABLE tag_counts (
    entity text COLLATE "C" PRIMARY KEY,
    memories bigint NOT NULL
);
CREATE TABLE counters (
    name text COLLATE "C" PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO counters (name, value) VALUES ('memory_count', 0);
-- The change log: one row per changed row, numbered in commit order (writers hold the store's
-- advisory lock, so a smaller seq never commits later). A reader synced to seq N has seen every
-- change up to N; the largest seq of a stream is its version.
CREATE TABLE changes (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL
);
CREATE INDEX idx_changes_stream ON changes (stream, seq);

CREATE FUNCTION embedding_row_version() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    NEW.row_version := nextval('embedding_row_versions');
    RETURN NEW;
END $$;
CREATE TRIGGER embeddings_row_version BEFORE UPDATE ON embeddings
FOR EACH ROW EXECUTE FUNCTION embedding_row_version();

-- docs: stream `docs` always; stream `embeddings` when a doc with a row comes, goes or changes
-- kind (SQLite's embeddings_changes_doc_* triggers).
CREATE FUNCTION docs_changes() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'UPDATE' THEN
        PERFORM set_config('slayer.docs_delta', (docs_delta()
            + CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END)::text, true);
    END IF;
    IF TG_OP = 'DELETE' THEN
        INSERT INTO changes (stream, key) VALUES ('docs', OLD.canonical_id);
        IF EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = OLD.canonical_id) THEN
            INSERT INTO changes (stream, key) VALUES ('embeddings', OLD.canonical_id);
        END IF;
        RETURN NULL;
    END IF;
    INSERT INTO changes (stream, key) VALUES ('docs', NEW.canonical_id);
    IF (TG_OP = 'INSERT' OR OLD.doc_kind <> NEW.doc_kind)
       AND EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) THEN
        INSERT INTO changes (stream, key) VALUES ('embeddings', NEW.canonical_id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER docs_changes AFTER INSERT OR UPDATE OR DELETE ON docs
FOR EACH ROW EXECUTE FUNCTION docs_changes();

-- The doc count, kept exact without a scan: counting docs reads a whole index (1.6 ms at 14k
-- docs, on every search), and bumping one counter row per doc is quadratic in a transaction
-- (each update walks the row's versions: a 14k-doc load took 1.1 s more). So each doc written
-- or deleted adds to a transaction-local delta, and a deferred trigger adds the delta to the
-- counter once, at commit; reads inside the transaction add the pending delta themselves.
CREATE FUNCTION docs_delta() RETURNS bigint LANGUAGE sql AS $$
    SELECT COALESCE(NULLIF(current_setting('slayer.docs_delta', true), ''), '0')::bigint
$$;
INSERT INTO counters (name, value) VALUES ('doc_count', 0);
CREATE FUNCTION docs_count_flush() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    delta bigint := docs_delta();
BEGIN
    IF delta <> 0 THEN
        UPDATE counters SET value = value + delta WHERE name = 'doc_count';
        PERFORM set_config('slayer.docs_delta', '0', true);
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER docs_count_flush AFTER INSERT OR DELETE ON docs
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION docs_count_flush();

-- Every other logged table: the stream is the first argument, the key its row's key.
CREATE FUNCTION row_changes() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    k text;
BEGIN
    IF TG_TABLE_NAME = 'embeddings' THEN
        k := CASE TG_OP WHEN 'DELETE' THEN OLD.canonical_id ELSE NEW.canonical_id END;
    ELSIF TG_TABLE_NAME = 'datasources' THEN
        k := CASE TG_OP WHEN 'DELETE' THEN OLD.name ELSE NEW.name END;
    ELSIF TG_TABLE_NAME = 'models' THEN
        k := CASE TG_OP WHEN 'DELETE' THEN OLD.data_source || '.' || OLD.name
                        ELSE NEW.data_source || '.' || NEW.name END;
    ELSIF TG_TABLE_NAME = 'memories' THEN
        k := CASE TG_OP WHEN 'DELETE' THEN OLD.id ELSE NEW.id END;
    ELSE
        k := CASE TG_OP WHEN 'DELETE' THEN OLD.key ELSE NEW.key END;
    END IF;
    INSERT INTO changes (stream, key) VALUES (TG_ARGV[0], k);
    RETURN NULL;
END $$;
CREATE TRIGGER embeddings_changes AFTER INSERT OR UPDATE OR DELETE ON embeddings
FOR EACH ROW EXECUTE FUNCTION row_changes('embeddings');
CREATE TRIGGER datasources_changes AFTER INSERT OR UPDATE OR DELETE ON datasources
FOR EACH ROW EXECUTE FUNCTION row_changes('catalog');
CREATE TRIGGER models_changes AFTER INSERT OR UPDATE OR DELETE ON models
FOR EACH ROW EXECUTE FUNCTION row_changes('catalog');
CREATE TRIGGER settings_changes AFTER INSERT OR UPDATE OR DELETE ON settings
FOR EACH ROW EXECUTE FUNCTION row_changes('settings');

-- memories: stream `memories`, and the memory count unless a bulk write suspended counting
-- (`SET LOCAL slayer.suspend_counts = 'on'`, which resume_counts recounts after).
CREATE FUNCTION memories_changes() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    counting boolean := current_setting('slayer.suspend_counts', true) IS DISTINCT FROM 'on';
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO changes (stream, key) VALUES ('memories', OLD.id);
        IF counting THEN
            UPDATE counters SET value = value - 1 WHERE name = 'memory_count';
        END IF;
    ELSE
        INSERT INTO changes (stream, key) VALUES ('memories', NEW.id);
        IF TG_OP = 'INSERT' AND counting THEN
            UPDATE counters SET value = value + 1 WHERE name = 'memory_count';
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memories_changes AFTER INSERT OR UPDATE OR DELETE ON memories
FOR EACH ROW EXECUTE FUNCTION memories_changes();

-- memory_entities (only ever inserted and deleted): stream `memory_tags`, and the tag counts.
CREATE FUNCTION memory_tags_changes() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    counting boolean := current_setting('slayer.suspend_counts', true) IS DISTINCT FROM 'on';
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO changes (stream, key) VALUES ('memory_tags', OLD.memory_id);
        IF counting AND OLD.entity <> 'memory:' || OLD.memory_id THEN
            UPDATE tag_counts SET memories = memories - 1 WHERE entity = OLD.entity;
            DELETE FROM tag_counts WHERE entity = OLD.entity AND memories <= 0;
        END IF;
    ELSE
        INSERT INTO changes (stream, key) VALUES ('memory_tags', NEW.memory_id);
        IF counting AND NEW.entity <> 'memory:' || NEW.memory_id THEN
            INSERT INTO tag_counts (entity, memories) VALUES (NEW.entity, 1)
                ON CONFLICT (entity) DO UPDATE SET memories = tag_counts.memories + 1;
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_tags_changes AFTER INSERT OR DELETE ON memory_entities
FOR EACH ROW EXECUTE FUNCTION memory_tags_changes();
