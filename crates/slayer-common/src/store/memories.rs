//! Memories: the JSON of the full memory plus a `memory_entities` index for tag lookups.

use rusqlite::{params, Connection, OptionalExtension};

use super::{parse_row, to_row, under_sql, StoreError};
use crate::canonical::is_under;
use crate::records::Memory;

/// Inserts or replaces a memory and its tag index.
pub fn put(conn: &Connection, memory: &Memory) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO memories (id, data, created_at, has_query) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(id) DO UPDATE SET data = excluded.data, created_at = excluded.created_at,
                                       has_query = excluded.has_query",
        params![
            memory.id,
            to_row("memory", memory)?,
            memory.created_at,
            memory.query.is_some()
        ],
    )?;
    conn.execute(
        "DELETE FROM memory_entities WHERE memory_id = ?1",
        [&memory.id],
    )?;
    let mut insert = conn.prepare_cached(
        "INSERT OR IGNORE INTO memory_entities (memory_id, entity) VALUES (?1, ?2)",
    )?;
    for entity in &memory.entities {
        insert.execute(params![memory.id, entity])?;
    }
    Ok(())
}

/// One memory by id.
pub fn get(conn: &Connection, id: &str) -> Result<Option<Memory>, StoreError> {
    let data: Option<String> = conn
        .query_row("SELECT data FROM memories WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?;
    data.map(|d| parse_row("memories", id, &d)).transpose()
}

/// Every memory, in id text order (the original's SQLite listing order).
pub fn all(conn: &Connection) -> Result<Vec<Memory>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT id, data FROM memories ORDER BY id")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (id, data) = row?;
        out.push(parse_row("memories", &id, &data)?);
    }
    Ok(out)
}

/// Deletes a memory (its tag rows cascade); returns whether it existed.
pub fn delete(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn.execute("DELETE FROM memories WHERE id = ?1", [id])? > 0)
}

/// Whether a memory with this id exists.
pub fn exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    let found = conn
        .prepare_cached("SELECT 1 FROM memories WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?;
    Ok(found.is_some())
}

/// The largest id that is a plain decimal number without leading zeros (the ids the store
/// hands out), compared as numbers of any length.
pub fn largest_int_id(conn: &Connection) -> Result<Option<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM memories WHERE id <> '' AND id NOT GLOB '*[^0-9]*' AND (id = '0' OR id NOT GLOB '0*')
         ORDER BY length(id) DESC, id DESC LIMIT 1",
    )?;
    Ok(stmt.query_row([], |r| r.get(0)).optional()?)
}

/// Memories with at least one tag equal to `root` or under it, in id order.
pub fn tagged_under(conn: &Connection, root: &str) -> Result<Vec<Memory>, StoreError> {
    let sql = format!(
        "SELECT m.id, m.data FROM memories m WHERE EXISTS (
             SELECT 1 FROM memory_entities e WHERE e.memory_id = m.id AND {})
         ORDER BY m.id",
        under_sql("e.entity", 1)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([root], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, data) = row?;
        out.push(parse_row("memories", &id, &data)?);
    }
    Ok(out)
}

/// Strips every tag equal to `root` or a strict dotted descendant of it (a `memory:` root strips
/// only itself) and returns the rewritten memories. Memories left untagged are kept.
pub fn strip_tags_under(conn: &Connection, root: &str) -> Result<Vec<Memory>, StoreError> {
    let mut changed = Vec::new();
    for mut memory in tagged_under(conn, root)? {
        memory.entities.retain(|tag| !is_under(tag, root));
        put(conn, &memory)?;
        changed.push(memory);
    }
    Ok(changed)
}

/// Number of memories.
pub fn count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?)
}

/// For a write of many memories in one transaction: drops the count triggers (a per-row cost
/// that nearly doubled a 100,000-memory import). [`resume_counts`] must follow in the same
/// transaction, so no other connection ever sees the store without them.
pub fn suspend_counts(tx: &Connection) -> Result<(), StoreError> {
    tx.execute_batch(
        "DROP TRIGGER tag_counts_insert; DROP TRIGGER tag_counts_delete;
         DROP TRIGGER memory_count_insert; DROP TRIGGER memory_count_delete;",
    )?;
    Ok(())
}

/// Recounts what [`suspend_counts`] stopped maintaining, in two passes, and restores the
/// triggers.
pub fn resume_counts(tx: &Connection) -> Result<(), StoreError> {
    tx.execute_batch(
        "DELETE FROM tag_counts;
         INSERT INTO tag_counts (entity, memories)
             SELECT entity, COUNT(*) FROM memory_entities
             WHERE entity <> 'memory:' || memory_id GROUP BY entity;
         UPDATE settings SET value = (SELECT COUNT(*) FROM memories) WHERE key = 'memory_count';",
    )?;
    tx.execute_batch(count_triggers!())?;
    Ok(())
}
