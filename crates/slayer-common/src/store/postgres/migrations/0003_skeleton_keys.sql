-- Version 3 (SQLite's version 11): model skeletons keep join pairs and primary keys, so search
-- can give the keys that connect two models evidence. No table changes: the migration rewrites
-- every skeleton from its model's full JSON (`catalog::rewrite_skeletons`).
SELECT 1;
