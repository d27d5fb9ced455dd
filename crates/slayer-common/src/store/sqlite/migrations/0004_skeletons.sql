-- What name resolution reads of a model (names, flags, join targets), in a table of its own:
-- resolving a reference then reads neither the descriptions and samples nor the pages they
-- fill. A model written before this version has no row and falls back to its full JSON.
CREATE TABLE model_skeletons (
    data_source TEXT NOT NULL,
    name TEXT NOT NULL,
    skeleton TEXT NOT NULL,
    PRIMARY KEY (data_source, name)
) WITHOUT ROWID;
CREATE TRIGGER model_skeletons_delete AFTER DELETE ON models BEGIN
    DELETE FROM model_skeletons WHERE data_source = OLD.data_source AND name = OLD.name;
END;
-- Search looks memories up by id for their query flag only: a covering index spares it the
-- rows and their JSON.
CREATE INDEX idx_memories_meta ON memories(id, has_query);
-- Tag lookups (which memories carry a tag) read the memory id from the index, not the row.
DROP INDEX idx_memory_entities_entity;
CREATE INDEX idx_memory_entities_entity ON memory_entities(entity, memory_id);
-- The recency fallback walks memories newest first (ties by id) without sorting them all.
CREATE INDEX idx_memories_recency ON memories(created_at DESC, id);
-- Search reads the few query-bearing memories whole to fill their bucket exactly.
CREATE INDEX idx_memories_with_query ON memories(id) WHERE has_query;
