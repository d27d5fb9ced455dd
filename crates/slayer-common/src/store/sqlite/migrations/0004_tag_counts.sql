-- How many memories carry each tag (a memory's tag naming itself is not counted), so search
-- gets BM25's corpus statistics without reading every memory. Tag rows are only ever inserted
-- and deleted (a re-save deletes and re-inserts; a memory's deletion cascades), so two
-- triggers keep the counts exact.
CREATE TABLE tag_counts (
    entity TEXT PRIMARY KEY,
    memories INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO tag_counts (entity, memories)
    SELECT entity, COUNT(*) FROM memory_entities
    WHERE entity <> 'memory:' || memory_id GROUP BY entity;
-- The number of memories, kept the same way: counting them means reading a whole index.
INSERT OR REPLACE INTO settings (key, value)
    VALUES ('memory_count', (SELECT COUNT(*) FROM memories));
