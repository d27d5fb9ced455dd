//! Memories: the JSON of the full memory plus a `memory_entities` index for tag lookups.

use rusqlite::{params, Connection, OptionalExtension};

use super::{parse_row, to_row, under_sql, StoreError};
use crate::canonical::is_under;
use crate::records::{Memory, Occasion, Standing, Tier};
pub use crate::store::rows::{Marked, TaggedMemory};

/// Inserts or replaces a memory and its tag index.
pub fn put(conn: &Connection, memory: &Memory) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO memories (id, data, created_at, has_query, tier, confidence, strength,
                               project, agent, deleted, proposed, event_time, session)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT(id) DO UPDATE SET data = excluded.data, created_at = excluded.created_at,
             has_query = excluded.has_query, tier = excluded.tier,
             confidence = excluded.confidence, strength = excluded.strength,
             project = excluded.project, agent = excluded.agent, deleted = excluded.deleted,
             proposed = excluded.proposed, event_time = excluded.event_time,
             session = excluded.session",
        params![
            memory.id,
            to_row("memory", memory)?,
            memory.created_at,
            memory.query.is_some(),
            memory.standing.tier.name(),
            memory.standing.confidence,
            memory.standing.strength,
            memory.standing.project,
            memory.standing.agent,
            memory.standing.deleted,
            memory.standing.proposed,
            memory.occasion.event_time,
            memory.occasion.session,
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

/// The largest id `<prefix>_<n>` (n a plain decimal number, as [`largest_int_id`]): where
/// the allocator of a tier with that id prefix continues.
pub fn largest_prefixed_id(conn: &Connection, prefix: &str) -> Result<Option<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT substr(id, length(?1) + 2) AS n FROM memories
         WHERE id > ?1 || '_' AND id < ?1 || '`' AND substr(id, length(?1) + 1, 1) = '_'
           AND n <> '' AND n NOT GLOB '*[^0-9]*' AND (n = '0' OR n NOT GLOB '0*')
         ORDER BY length(n) DESC, n DESC LIMIT 1",
    )?;
    Ok(stmt.query_row([prefix], |r| r.get(0)).optional()?)
}

/// The ids starting with `prefix`, in id order; `id >= ?1` lets the primary key's index start
/// at the prefix.
pub fn ids_with_prefix(conn: &Connection, prefix: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM memories WHERE id >= ?1 AND substr(id, 1, length(?1)) = ?1 ORDER BY id",
    )?;
    let ids = stmt.query_map([prefix], |r| r.get(0))?;
    Ok(ids.collect::<Result<Vec<String>, _>>()?)
}

/// Every memory that is not a plain lesson (another tier, a trust below 1, an owner, a soft
/// delete, a proposal awaiting review), in id order, from the partial index that holds only
/// them.
pub fn marked(conn: &Connection) -> Result<Vec<Marked>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, tier, confidence, strength, project, agent, deleted, proposed
         FROM memories INDEXED BY idx_memories_marked
         WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
            OR agent IS NOT NULL OR deleted <> 0 OR proposed <> 0
         ORDER BY id",
    )?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let tier: String = row.get(1)?;
        let tier = Tier::parse(&tier).map_err(|cause| StoreError::CorruptRow {
            table: "memories",
            key: id.clone(),
            cause: cause.to_string(),
        })?;
        out.push(Marked {
            id,
            standing: Standing {
                tier,
                confidence: row.get(2)?,
                strength: row.get(3)?,
                project: row.get(4)?,
                agent: row.get(5)?,
                deleted: row.get(6)?,
                proposed: row.get(7)?,
            },
        });
    }
    Ok(out)
}

/// The event time and session of each of `ids` that has either, in id order, from the columns
/// (never the JSON).
pub fn occasions(conn: &Connection, ids: &[String]) -> Result<Vec<(String, Occasion)>, StoreError> {
    let json = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut stmt = conn.prepare_cached(
        "SELECT id, event_time, session FROM memories
         WHERE id IN (SELECT value FROM json_each(?1))
           AND (event_time IS NOT NULL OR session IS NOT NULL)
         ORDER BY id",
    )?;
    let rows = stmt.query_map([json], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Occasion {
                event_time: r.get(1)?,
                session: r.get(2)?,
            },
        ))
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// Whether any memory has a session (one probe of the session index).
pub fn any_session(conn: &Connection) -> Result<bool, StoreError> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM memories INDEXED BY idx_memories_session
                        WHERE session IS NOT NULL)",
        [],
        |r| r.get(0),
    )?)
}

/// The memories saved just before and just after `id` in its session (by `created_at`, then
/// id), when it has a session: the neighbours a hit may bring beside it. Two probes of the
/// session index.
pub fn session_neighbours(
    conn: &Connection,
    id: &str,
) -> Result<(Option<String>, Option<String>), StoreError> {
    let around = |sql: &str| -> Result<Option<String>, StoreError> {
        Ok(conn
            .prepare_cached(sql)?
            .query_row([id], |r| r.get(0))
            .optional()?)
    };
    let before = around(
        "SELECT n.id FROM memories m, memories n INDEXED BY idx_memories_session
         WHERE m.id = ?1 AND n.session = m.session
           AND (n.created_at < m.created_at OR (n.created_at = m.created_at AND n.id < m.id))
         ORDER BY n.created_at DESC, n.id DESC LIMIT 1",
    )?;
    let after = around(
        "SELECT n.id FROM memories m, memories n INDEXED BY idx_memories_session
         WHERE m.id = ?1 AND n.session = m.session
           AND (n.created_at > m.created_at OR (n.created_at = m.created_at AND n.id > m.id))
         ORDER BY n.created_at, n.id LIMIT 1",
    )?;
    Ok((before, after))
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
    tx.execute_batch(super::migrations::COUNT_TRIGGERS)?;
    Ok(())
}

/// `column` is a `memory:` reference (`;` is the byte after `:`, so the range is indexable).
fn memory_ref_sql(column: &str) -> String {
    format!("({column} >= 'memory:' AND {column} < 'memory;')")
}

/// A memory's tags and query flag, or `None` when there is no such memory. Reads the covering
/// index and the tag rows, never the JSON.
pub fn tagged(conn: &Connection, id: &str) -> Result<Option<TaggedMemory>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT has_query FROM memories INDEXED BY idx_memories_meta WHERE id = ?1",
    )?;
    let Some(has_query) = stmt.query_row([id], |r| r.get(0)).optional()? else {
        return Ok(None);
    };
    let mut tags = conn.prepare_cached(
        "SELECT entity FROM memory_entities WHERE memory_id = ?1 ORDER BY entity",
    )?;
    let tags = tags
        .query_map([id], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(Some(TaggedMemory {
        id: id.to_owned(),
        tags,
        has_query,
    }))
}

/// The memories that carry any of `tags`, or that a `memory:` tag among them names, in id
/// order, in one statement.
pub fn sharing_a_tag(conn: &Connection, tags: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
    let json = serde_json::to_string(tags).unwrap_or_else(|_| "[]".into());
    let mut stmt = conn.prepare_cached(
        "SELECT m.id, m.has_query, e.entity
         FROM memories m INDEXED BY idx_memories_meta
         LEFT JOIN memory_entities e ON e.memory_id = m.id
         WHERE m.id IN (
             SELECT memory_id FROM memory_entities
             WHERE entity IN (SELECT value FROM json_each(?1))
             UNION
             SELECT substr(value, 8) FROM json_each(?1) WHERE substr(value, 1, 7) = 'memory:')
         ORDER BY m.id, e.entity",
    )?;
    let mut rows = stmt.query([json])?;
    let mut out: Vec<TaggedMemory> = Vec::new();
    while let Some(row) = rows.next()? {
        let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        if out.last().is_none_or(|m| m.id != id) {
            out.push(TaggedMemory {
                id: id.to_owned(),
                tags: Vec::new(),
                has_query: row.get(1)?,
            });
        }
        if let Some(tag) = row.get::<_, Option<String>>(2)? {
            if let Some(m) = out.last_mut() {
                m.tags.push(tag);
            }
        }
    }
    Ok(out)
}

/// How many memories carry a tag under `datasource`: with no datasource, the trigger-kept
/// count (counting them would read a whole index).
pub fn count_under(conn: &Connection, datasource: Option<&str>) -> Result<usize, StoreError> {
    let count: i64 = match datasource {
        None => conn.query_row(
            "SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'memory_count'",
            [],
            |r| r.get(0),
        )?,
        // One probe of the (memory_id, entity) key per memory beats de-duplicating every
        // tag row under the datasource.
        Some(d) => conn
            .prepare_cached(&format!(
                "SELECT COUNT(*) FROM memories m WHERE EXISTS (SELECT 1 FROM memory_entities
                 WHERE memory_id = m.id AND {})",
                under_sql("entity", 1)
            ))?
            .query_row([d], |r| r.get(0))?,
    };
    Ok(count as usize)
}

/// How many memories carry each entity tag (not `memory:` ones) equal to `datasource` or under
/// it, or of every datasource: `visit(entity, memories)` per tag, from the trigger-kept counts.
pub fn entity_tag_counts(
    conn: &Connection,
    datasource: Option<&str>,
    mut visit: impl FnMut(&str, usize),
) -> Result<(), StoreError> {
    let sql = match datasource {
        None => format!(
            "SELECT entity, memories FROM tag_counts WHERE NOT {}",
            memory_ref_sql("entity")
        ),
        Some(_) => format!(
            "SELECT entity, memories FROM tag_counts WHERE {}",
            under_sql("entity", 1)
        ),
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = match datasource {
        None => stmt.query([])?,
        Some(d) => stmt.query([d])?,
    };
    while let Some(row) = rows.next()? {
        let entity = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        visit(entity, row.get::<_, i64>(1)? as usize);
    }
    Ok(())
}

/// How many `memory:` tags (a memory's tag naming itself aside) name a memory that exists.
pub fn live_memory_tag_count(conn: &Connection) -> Result<usize, StoreError> {
    let live: i64 = conn.query_row(
        &format!(
            "SELECT COALESCE(SUM(memories), 0) FROM tag_counts WHERE {}
             AND EXISTS (SELECT 1 FROM memories WHERE id = substr(entity, 8))",
            memory_ref_sql("entity")
        ),
        [],
        |r| r.get(0),
    )?;
    Ok(live as usize)
}

/// Every `memory:` tag but a memory's tag naming itself: `(memory id, tag)` pairs.
pub fn memory_tag_links(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT memory_id, entity FROM memory_entities WHERE {}
         AND entity <> 'memory:' || memory_id",
        memory_ref_sql("entity")
    ))?;
    let pairs = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(pairs)
}

/// The ids of the memories that carry a query (a partial index holds them). Named, because
/// SQLite's planner otherwise prefers the covering `idx_memories_meta` and reads every
/// memory's entry (a third of a broad one-shot search's time at 100,000 memories).
pub fn ids_with_query(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM memories INDEXED BY idx_memories_with_query WHERE has_query",
    )?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(ids)
}

/// Memory ids newest first (ties by id), each passed to `visit` until it returns `false`.
pub fn ids_newest_first(
    conn: &Connection,
    mut visit: impl FnMut(&str) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached("SELECT id FROM memories ORDER BY created_at DESC, id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        if !visit(id)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{OpenMode, SqliteStore as Store};

    fn memory(id: &str, tags: &[&str], query: bool) -> Memory {
        Memory {
            version: 4,
            id: id.into(),
            learning: "x".into(),
            description: None,
            entities: tags.iter().map(|t| t.to_string()).collect(),
            query: query.then(|| serde_json::json!({"source_model": "m"})),
            created_at: format!("2026-01-0{}", id.len()),
            standing: Standing::default(),
            occasion: Default::default(),
        }
    }

    #[test]
    fn search_reads_answer_from_the_tag_index_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let tx = store.write().unwrap();
        put(&tx, &memory("1", &["a.m", "a.m.c", "memory:22"], false)).unwrap();
        put(&tx, &memory("22", &["a.m", "memory:22"], true)).unwrap();
        put(&tx, &memory("333", &["a_b.n", "memory:9"], false)).unwrap();
        tx.commit().unwrap();
        let conn = store.conn();

        let one = tagged(conn, "1").unwrap().unwrap();
        assert_eq!(one.tags, ["a.m", "a.m.c", "memory:22"]);
        assert!(!one.has_query && tagged(conn, "22").unwrap().unwrap().has_query);
        assert_eq!(tagged(conn, "nope").unwrap(), None);

        let ids = |found: Vec<TaggedMemory>| found.into_iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(ids(sharing_a_tag(conn, &["a.m.c".into()]).unwrap()), ["1"]);
        assert_eq!(
            ids(sharing_a_tag(conn, &["memory:333".into()]).unwrap()),
            ["333"]
        );
        assert_eq!(
            ids(sharing_a_tag(conn, &["a.m".into(), "memory:9".into()]).unwrap()),
            ["1", "22", "333"]
        );

        assert_eq!(count_under(conn, None).unwrap(), 3);
        assert_eq!(count_under(conn, Some("a")).unwrap(), 2);
        let counts = |ds| {
            let mut out = Vec::new();
            entity_tag_counts(conn, ds, |e, n| out.push((e.to_owned(), n))).unwrap();
            out
        };
        assert_eq!(counts(Some("a")), [("a.m".into(), 2), ("a.m.c".into(), 1)]);
        assert_eq!(counts(None).len(), 3);
        // memory:22 on 1 counts (22 exists), memory:9 on 333 does not; 22's own tag never.
        assert_eq!(live_memory_tag_count(conn).unwrap(), 1);
        assert_eq!(
            memory_tag_links(conn).unwrap(),
            [
                ("1".to_owned(), "memory:22".to_owned()),
                ("333".to_owned(), "memory:9".to_owned())
            ]
        );
        assert_eq!(ids_with_query(conn).unwrap(), ["22"]);
        let mut newest = Vec::new();
        ids_newest_first(conn, |id| {
            newest.push(id.to_owned());
            Ok(newest.len() < 2)
        })
        .unwrap();
        assert_eq!(newest, ["333", "22"]);
    }
}
