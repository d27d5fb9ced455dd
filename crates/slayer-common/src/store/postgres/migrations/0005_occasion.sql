-- Version 5 (SQLite's version 13): a memory's event time and session as columns beside the
-- JSON (docs/spec/memory.md §4.6), read by search for a question's candidates and a hit's
-- session neighbours.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS event_time text COLLATE "C";
ALTER TABLE memories ADD COLUMN IF NOT EXISTS session text COLLATE "C";
UPDATE memories SET event_time = data::jsonb ->> 'event_time', session = data::jsonb ->> 'session'
WHERE data::jsonb ? 'event_time' OR data::jsonb ? 'session';
CREATE INDEX IF NOT EXISTS idx_memories_session ON memories (session, created_at, id)
    WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_memories_event_time ON memories (event_time, id)
    WHERE event_time IS NOT NULL;
