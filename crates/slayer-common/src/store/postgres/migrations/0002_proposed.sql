-- Version 2 (SQLite's version 9): review of agent memories. A proposed memory awaits a person's
-- approval and no search sees it, so the partial index of memories that are not plain lessons
-- holds it too; an index's predicate cannot be altered, so it is made again.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS proposed boolean NOT NULL DEFAULT false;
DROP INDEX IF EXISTS idx_memories_marked;
CREATE INDEX idx_memories_marked ON memories (id)
    INCLUDE (tier, confidence, strength, project, agent, deleted, proposed)
    WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
       OR agent IS NOT NULL OR deleted OR proposed;
