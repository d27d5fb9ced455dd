-- Tiers, trust and owners (docs/spec/search.md §9.11). Memories written before have none of them in
-- their JSON, so the defaults are theirs. Search reads the few memories that are not plain lessons
-- (another tier, a trust below 1, an owner, a soft delete) from the partial index, never by
-- scanning every row.
-- (The columns are added by `add_missing_columns`, which skips those already there.)
CREATE INDEX IF NOT EXISTS idx_memories_marked ON memories(id, tier, confidence, strength, project, agent, deleted)
WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
   OR agent IS NOT NULL OR deleted <> 0;
-- Which revision of the model (a hash of its configuration and weights) wrote a vector, so a
-- changed model under the same name is told apart; rows written before carry '' (also added
-- by `add_missing_columns`).
