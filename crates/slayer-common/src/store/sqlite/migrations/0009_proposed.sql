-- Review of agent memories: a proposed memory awaits a person's approval and no search sees it,
-- so the partial index of memories that are not plain lessons must hold it too; an index's
-- predicate cannot be altered, so it is made again. (The `proposed` column is added by
-- `add_missing_columns`, which skips it when it is already there.)
DROP INDEX IF EXISTS idx_memories_marked;
CREATE INDEX idx_memories_marked ON memories(id, tier, confidence, strength, project, agent, deleted, proposed)
WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
   OR agent IS NOT NULL OR deleted <> 0 OR proposed <> 0;
