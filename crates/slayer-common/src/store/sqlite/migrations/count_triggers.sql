CREATE TRIGGER tag_counts_insert AFTER INSERT ON memory_entities
WHEN NEW.entity <> 'memory:' || NEW.memory_id BEGIN
    INSERT INTO tag_counts (entity, memories) VALUES (NEW.entity, 1)
        ON CONFLICT(entity) DO UPDATE SET memories = memories + 1;
END;
CREATE TRIGGER tag_counts_delete AFTER DELETE ON memory_entities
WHEN OLD.entity <> 'memory:' || OLD.memory_id BEGIN
    UPDATE tag_counts SET memories = memories - 1 WHERE entity = OLD.entity;
    DELETE FROM tag_counts WHERE entity = OLD.entity AND memories <= 0;
END;
CREATE TRIGGER memory_count_insert AFTER INSERT ON memories BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_count';
END;
CREATE TRIGGER memory_count_delete AFTER DELETE ON memories BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) - 1 WHERE key = 'memory_count';
END;
