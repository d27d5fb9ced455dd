//! Memories, their tag rows and the counts triggers keep (as SQLite's `memories.rs`).

use std::collections::HashMap;
use std::hash::Hash;

use super::{PgResult, Session};
use crate::canonical::is_under;
use crate::records::{Memory, Occasion, Standing, Tier};
use crate::store::rows::{Marked, TaggedMemory};
use crate::store::sqlite::{parse_row, to_row};
use crate::store::StoreError;

/// `entity` is a `memory:` reference (`;` is the byte after `:`, so the range is indexable).
macro_rules! memory_ref {
    () => {
        "(entity >= 'memory:' AND entity < 'memory;')"
    };
}

/// The memory count: the trigger-kept one, or while a bulk write suspended the counting
/// (the setting is transaction-local), a real count.
const COUNT_SQL: &str = "SELECT CASE WHEN current_setting('slayer.suspend_counts', true) = 'on'
                 THEN (SELECT count(*) FROM memories)
                 ELSE (SELECT value FROM counters WHERE name = 'memory_count') END";

/// Rows a batch write or read sends in one statement: its arrays stay a few MB.
pub(super) const BATCH_ROWS: usize = 2000;

/// The last of each id's entries, in the order those last entries come: a statement may
/// upsert a row only once.
pub(super) fn last_of_each<'a, T, K: Hash + Eq>(
    items: &'a [T],
    key: impl Fn(&'a T) -> K,
) -> Vec<&'a T> {
    let mut last: HashMap<K, usize> = HashMap::with_capacity(items.len());
    for (at, item) in items.iter().enumerate() {
        last.insert(key(item), at);
    }
    items
        .iter()
        .enumerate()
        .filter(|&(at, item)| last.get(&key(item)) == Some(&at))
        .map(|(_, item)| item)
        .collect()
}

/// Inserts or replaces memories and their tag rows, [`BATCH_ROWS`] to a statement (one memory
/// is a batch of one): the rows, then their tag rows.
pub(super) fn put_many(s: &mut Session, memories: &[Memory]) -> PgResult<()> {
    for chunk in last_of_each(memories, |m| m.id.as_str()).chunks(BATCH_ROWS) {
        let mut rows = MemoryRows::default();
        for memory in chunk {
            rows.push(memory)?;
        }
        s.execute(
            "INSERT INTO memories (id, data, created_at, has_query, tier, confidence, strength,
                                   project, agent, deleted, proposed, event_time, session)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::text[],
                                  $6::float8[], $7::float8[], $8::text[], $9::text[],
                                  $10::bool[], $11::bool[], $12::text[], $13::text[])
             ON CONFLICT (id) DO UPDATE SET data = excluded.data, created_at = excluded.created_at,
                 has_query = excluded.has_query, tier = excluded.tier,
                 confidence = excluded.confidence, strength = excluded.strength,
                 project = excluded.project, agent = excluded.agent, deleted = excluded.deleted,
                 proposed = excluded.proposed, event_time = excluded.event_time,
                 session = excluded.session",
            &[
                &rows.id,
                &rows.data,
                &rows.created_at,
                &rows.has_query,
                &rows.tier,
                &rows.confidence,
                &rows.strength,
                &rows.project,
                &rows.agent,
                &rows.deleted,
                &rows.proposed,
                &rows.event_time,
                &rows.session,
            ],
        )?;
        s.execute(
            "DELETE FROM memory_entities WHERE memory_id = ANY($1)",
            &[&rows.id],
        )?;
        let (owners, tags): (Vec<&str>, Vec<&str>) = chunk
            .iter()
            .flat_map(|m| m.entities.iter().map(|t| (m.id.as_str(), t.as_str())))
            .unzip();
        if !tags.is_empty() {
            s.execute(
                "INSERT INTO memory_entities (memory_id, entity)
                 SELECT m, t FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u (m, t, n)
                 ORDER BY n
                 ON CONFLICT DO NOTHING",
                &[&owners, &tags],
            )?;
        }
    }
    Ok(())
}

/// The columns of a batch of memory rows, one array each.
#[derive(Default)]
struct MemoryRows<'a> {
    id: Vec<&'a str>,
    data: Vec<String>,
    created_at: Vec<&'a str>,
    has_query: Vec<bool>,
    tier: Vec<&'static str>,
    confidence: Vec<f64>,
    strength: Vec<f64>,
    project: Vec<Option<&'a str>>,
    agent: Vec<Option<&'a str>>,
    deleted: Vec<bool>,
    proposed: Vec<bool>,
    event_time: Vec<Option<&'a str>>,
    session: Vec<Option<&'a str>>,
}

impl<'a> MemoryRows<'a> {
    fn push(&mut self, memory: &'a Memory) -> Result<(), StoreError> {
        let standing = &memory.standing;
        self.id.push(&memory.id);
        self.data.push(to_row("memory", memory)?);
        self.created_at.push(&memory.created_at);
        self.has_query.push(memory.query.is_some());
        self.tier.push(standing.tier.name());
        self.confidence.push(standing.confidence);
        self.strength.push(standing.strength);
        self.project.push(standing.project.as_deref());
        self.agent.push(standing.agent.as_deref());
        self.deleted.push(standing.deleted);
        self.proposed.push(standing.proposed);
        self.event_time.push(memory.occasion.event_time.as_deref());
        self.session.push(memory.occasion.session.as_deref());
        Ok(())
    }
}

/// The memories of `ids` that exist, [`BATCH_ROWS`] ids to a statement.
pub(super) fn get_many(s: &mut Session, ids: &[String]) -> PgResult<Vec<Memory>> {
    let mut found = Vec::new();
    for chunk in ids.chunks(BATCH_ROWS) {
        let rows = s.query(
            "SELECT id, data FROM memories WHERE id = ANY($1)",
            &[&chunk],
        )?;
        for r in &rows {
            found.push(parse_row("memories", r.get(0), r.get(1))?);
        }
    }
    Ok(found)
}

pub(super) fn get(s: &mut Session, id: &str) -> PgResult<Option<Memory>> {
    let row = s.query_opt("SELECT data FROM memories WHERE id = $1", &[&id])?;
    Ok(row
        .map(|r| parse_row("memories", id, r.get(0)))
        .transpose()?)
}

pub(super) fn all(s: &mut Session) -> PgResult<Vec<Memory>> {
    let rows = s.query("SELECT id, data FROM memories ORDER BY id", &[])?;
    let parsed: Result<Vec<_>, StoreError> = rows
        .iter()
        .map(|r| parse_row("memories", r.get(0), r.get(1)))
        .collect();
    Ok(parsed?)
}

pub(super) fn delete(s: &mut Session, id: &str) -> PgResult<bool> {
    Ok(s.execute("DELETE FROM memories WHERE id = $1", &[&id])? > 0)
}

pub(super) fn exists(s: &mut Session, id: &str) -> PgResult<bool> {
    Ok(s.query_opt("SELECT 1 FROM memories WHERE id = $1", &[&id])?
        .is_some())
}

pub(super) fn largest_int_id(s: &mut Session) -> PgResult<Option<String>> {
    let row = s.query_opt(
        "SELECT id FROM memories WHERE id ~ '^[0-9]+$' AND (id = '0' OR id !~ '^0')
         ORDER BY length(id) DESC, id DESC LIMIT 1",
        &[],
    )?;
    Ok(row.map(|r| r.get(0)))
}

pub(super) fn largest_prefixed_id(s: &mut Session, prefix: &str) -> PgResult<Option<String>> {
    let row = s.query_opt(
        "SELECT n FROM (
             SELECT substr(id, length($1) + 2) AS n FROM memories
             WHERE id > $1 || '_' AND id < $1 || '`' AND substr(id, length($1) + 1, 1) = '_'
         ) t
         WHERE n ~ '^[0-9]+$' AND (n = '0' OR n !~ '^0')
         ORDER BY length(n) DESC, n DESC LIMIT 1",
        &[&prefix],
    )?;
    Ok(row.map(|r| r.get(0)))
}

pub(super) fn ids_with_prefix(s: &mut Session, prefix: &str) -> PgResult<Vec<String>> {
    // `id >= $1` lets the primary key's index start at the prefix (ids compare as "C").
    let rows = s.query(
        "SELECT id FROM memories WHERE id >= $1 AND left(id, length($1)) = $1 ORDER BY id",
        &[&prefix],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

pub(super) fn marked(s: &mut Session) -> PgResult<Vec<Marked>> {
    let rows = s.query(
        "SELECT id, tier, confidence, strength, project, agent, deleted, proposed FROM memories
         WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
            OR agent IS NOT NULL OR deleted OR proposed
         ORDER BY id",
        &[],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let id: String = r.get(0);
        let tier = Tier::parse(r.get(1)).map_err(|cause| StoreError::CorruptRow {
            table: "memories",
            key: id.clone(),
            cause: cause.to_string(),
        })?;
        out.push(Marked {
            id,
            standing: Standing {
                tier,
                confidence: r.get(2),
                strength: r.get(3),
                project: r.get(4),
                agent: r.get(5),
                deleted: r.get(6),
                proposed: r.get(7),
            },
        });
    }
    Ok(out)
}

pub(super) fn tagged_under(s: &mut Session, root: &str) -> PgResult<Vec<Memory>> {
    let rows = s.query(
        concat!(
            "SELECT m.id, m.data FROM memories m WHERE EXISTS (
                 SELECT 1 FROM memory_entities e WHERE e.memory_id = m.id AND ",
            under!("e.entity"),
            ") ORDER BY m.id"
        ),
        &[&root],
    )?;
    let parsed: Result<Vec<_>, StoreError> = rows
        .iter()
        .map(|r| parse_row("memories", r.get(0), r.get(1)))
        .collect();
    Ok(parsed?)
}

pub(super) fn strip_tags_under(s: &mut Session, root: &str) -> PgResult<Vec<Memory>> {
    let mut changed = tagged_under(s, root)?;
    for memory in &mut changed {
        memory.entities.retain(|tag| !is_under(tag, root));
    }
    put_many(s, &changed)?;
    Ok(changed)
}

pub(super) fn count(s: &mut Session) -> PgResult<i64> {
    Ok(s.query_one(COUNT_SQL, &[])?.get(0))
}

/// Stops the count triggers for the rest of the transaction (no DDL: readers are not blocked).
pub(super) fn suspend_counts(s: &mut Session) -> PgResult<()> {
    s.batch("SET LOCAL slayer.suspend_counts = 'on'")
}

/// Recounts, and (a bulk write having changed the tables wholesale) refreshes the planner's
/// statistics, which the partial index of marked memories depends on; a writer that does not
/// own the tables gets a notice instead, and autovacuum does it later.
pub(super) fn resume_counts(s: &mut Session) -> PgResult<()> {
    s.batch(
        "DELETE FROM tag_counts;
         INSERT INTO tag_counts (entity, memories)
             SELECT entity, count(*) FROM memory_entities
             WHERE entity <> 'memory:' || memory_id GROUP BY entity;
         UPDATE counters SET value = (SELECT count(*) FROM memories) WHERE name = 'memory_count';
         SET LOCAL slayer.suspend_counts = 'off';
         ANALYZE memories, memory_entities;",
    )
}

pub(super) fn tagged(s: &mut Session, id: &str) -> PgResult<Option<TaggedMemory>> {
    let row = s.query_opt(
        "SELECT m.has_query, ARRAY(SELECT entity FROM memory_entities
                                   WHERE memory_id = m.id ORDER BY entity)
         FROM memories m WHERE m.id = $1",
        &[&id],
    )?;
    Ok(row.map(|r| TaggedMemory {
        id: id.to_owned(),
        tags: r.get(1),
        has_query: r.get(0),
    }))
}

pub(super) fn occasions(s: &mut Session, ids: &[String]) -> PgResult<Vec<(String, Occasion)>> {
    let rows = s.query(
        "SELECT id, event_time, session FROM memories
         WHERE id = ANY($1) AND (event_time IS NOT NULL OR session IS NOT NULL)
         ORDER BY id",
        &[&ids],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                Occasion {
                    event_time: r.get(1),
                    session: r.get(2),
                },
            )
        })
        .collect())
}

pub(super) fn any_session(s: &mut Session) -> PgResult<bool> {
    Ok(s.query_one(
        "SELECT EXISTS (SELECT 1 FROM memories WHERE session IS NOT NULL)",
        &[],
    )?
    .get(0))
}

pub(super) fn session_neighbours(
    s: &mut Session,
    id: &str,
) -> PgResult<(Option<String>, Option<String>)> {
    let before = s.query_opt(
        "SELECT n.id FROM memories m JOIN memories n ON n.session = m.session
         WHERE m.id = $1 AND (n.created_at, n.id) < (m.created_at, m.id)
         ORDER BY n.created_at DESC, n.id DESC LIMIT 1",
        &[&id],
    )?;
    let after = s.query_opt(
        "SELECT n.id FROM memories m JOIN memories n ON n.session = m.session
         WHERE m.id = $1 AND (n.created_at, n.id) > (m.created_at, m.id)
         ORDER BY n.created_at, n.id LIMIT 1",
        &[&id],
    )?;
    Ok((before.map(|r| r.get(0)), after.map(|r| r.get(0))))
}

pub(super) fn tagged_many(s: &mut Session, ids: &[String]) -> PgResult<Vec<TaggedMemory>> {
    let rows = s.query(
        "SELECT m.id, m.has_query, ARRAY(SELECT entity FROM memory_entities
                                         WHERE memory_id = m.id ORDER BY entity)
         FROM memories m WHERE m.id = ANY($1)",
        &[&ids],
    )?;
    Ok(rows
        .iter()
        .map(|r| TaggedMemory {
            id: r.get(0),
            tags: r.get(2),
            has_query: r.get(1),
        })
        .collect())
}

pub(super) fn sharing_a_tag(s: &mut Session, tags: &[String]) -> PgResult<Vec<TaggedMemory>> {
    let rows = s.query(
        "SELECT m.id, m.has_query, e.entity
         FROM memories m LEFT JOIN memory_entities e ON e.memory_id = m.id
         WHERE m.id IN (
             SELECT memory_id FROM memory_entities WHERE entity = ANY($1)
             UNION ALL
             SELECT substr(t, 8) FROM unnest($1::text[]) AS t WHERE substr(t, 1, 7) = 'memory:')
         ORDER BY m.id, e.entity",
        &[&tags],
    )?;
    let mut out: Vec<TaggedMemory> = Vec::new();
    for r in &rows {
        let id: &str = r.get(0);
        if out.last().is_none_or(|m| m.id != id) {
            out.push(TaggedMemory {
                id: id.to_owned(),
                tags: Vec::new(),
                has_query: r.get(1),
            });
        }
        if let (Some(tag), Some(m)) = (r.get::<_, Option<String>>(2), out.last_mut()) {
            m.tags.push(tag);
        }
    }
    Ok(out)
}

pub(super) fn count_under(s: &mut Session, datasource: Option<&str>) -> PgResult<usize> {
    let count: i64 = match datasource {
        None => s.query_one(COUNT_SQL, &[])?.get(0),
        // Every tag row's memory exists (a foreign key), so the distinct ids are the count.
        Some(d) => s
            .query_one(
                concat!(
                    "SELECT count(DISTINCT memory_id) FROM memory_entities WHERE ",
                    under!("entity")
                ),
                &[&d],
            )?
            .get(0),
    };
    Ok(count as usize)
}

/// `(entity, memories)` for each entity tag under `datasource` (or every non-`memory:` one).
pub(super) fn entity_tag_counts(
    s: &mut Session,
    datasource: Option<&str>,
) -> PgResult<Vec<(String, i64)>> {
    let rows = match datasource {
        None => s.query(
            concat!(
                "SELECT entity, memories FROM tag_counts WHERE NOT ",
                memory_ref!(),
                " ORDER BY entity"
            ),
            &[],
        )?,
        Some(d) => s.query(
            concat!(
                "SELECT entity, memories FROM tag_counts WHERE ",
                under!("entity"),
                " ORDER BY entity"
            ),
            &[&d],
        )?,
    };
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub(super) fn live_memory_tag_count(s: &mut Session) -> PgResult<usize> {
    let live: i64 = s
        .query_one(
            concat!(
                "SELECT COALESCE(sum(memories), 0)::bigint FROM tag_counts WHERE ",
                memory_ref!(),
                " AND EXISTS (SELECT 1 FROM memories WHERE id = substr(entity, 8))"
            ),
            &[],
        )?
        .get(0);
    Ok(live as usize)
}

/// By tag then memory id: the order SQLite reads them in (from its (entity, memory_id) index).
pub(super) fn memory_tag_links(s: &mut Session) -> PgResult<Vec<(String, String)>> {
    let rows = s.query(
        concat!(
            "SELECT memory_id, entity FROM memory_entities WHERE ",
            memory_ref!(),
            " AND entity <> 'memory:' || memory_id ORDER BY entity, memory_id"
        ),
        &[],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub(super) fn ids_with_query(s: &mut Session) -> PgResult<Vec<String>> {
    let rows = s.query("SELECT id FROM memories WHERE has_query ORDER BY id", &[])?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// One page of `(created_at, id)` newest first (ties by id), after `after` (from the newest
/// when `None`): pages keep the connection free while the caller's visitor reads the store.
pub(super) fn newest_first_page(
    s: &mut Session,
    after: Option<(&str, &str)>,
    limit: i64,
) -> PgResult<Vec<(String, String)>> {
    let rows = match after {
        None => s.query(
            "SELECT created_at, id FROM memories ORDER BY created_at DESC, id LIMIT $1",
            &[&limit],
        )?,
        Some((created_at, id)) => s.query(
            "SELECT created_at, id FROM memories
             WHERE created_at <= $2 AND (created_at < $2 OR id > $3)
             ORDER BY created_at DESC, id LIMIT $1",
            &[&limit, &created_at, &id],
        )?,
    };
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
