-- When a memory's event happened and the session it was saved from (docs/spec/memory.md §4.6),
-- as columns beside the JSON: search reads them for a question's candidates and a hit's
-- session neighbours without parsing any JSON. Memories written before carry neither in their
-- JSON; the backfill reads whatever a record holds. (The columns are added by
-- `add_missing_columns`, which skips those already there.)
UPDATE memories SET event_time = json_extract(data, '$.event_time'),
                    session = json_extract(data, '$.session')
WHERE json_extract(data, '$.event_time') IS NOT NULL OR json_extract(data, '$.session') IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_memories_session ON memories(session, created_at, id)
WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_memories_event_time ON memories(event_time, id)
WHERE event_time IS NOT NULL;
