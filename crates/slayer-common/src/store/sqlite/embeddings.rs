//! Embedding rows; filled by `slayer-embed`, deleted here when their docs go.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::{under_sql, StoreError};
pub use crate::store::rows::{ChangedRow, Coverage, LiveRow, Stamp, VectorChanges, VectorsState};

/// Deletes the embedding rows of `root` and of its strict dotted descendants (every model name).
pub fn delete_under(conn: &Connection, root: &str) -> Result<usize, StoreError> {
    let sql = format!(
        "DELETE FROM embeddings WHERE {}",
        under_sql("canonical_id", 1)
    );
    Ok(conn.execute(&sql, params![root])?)
}

/// Deletes the embedding rows of exactly these canonical ids.
pub fn delete_exact(conn: &Connection, canonical_id: &str) -> Result<usize, StoreError> {
    Ok(conn.execute(
        "DELETE FROM embeddings WHERE canonical_id = ?1",
        params![canonical_id],
    )?)
}

/// Row counts per embedding model name, sorted by name.
pub fn counts_by_model(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT model_name, count(*) FROM embeddings GROUP BY model_name ORDER BY model_name",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A stored vector as its BLOB: little-endian f32s.
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A BLOB back to its vector (a trailing partial float is ignored).
pub fn decode(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// For each of these docs that exists: its embedding text (the doc text when it has none of
/// its own) and the [`Stamp`] of its row under `model`, if it has one.
pub fn texts_and_stamps(
    conn: &Connection,
    model: &str,
    canonical_ids: &[String],
) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT d.canonical_id, COALESCE(d.embedding_text, d.text), e.content_hash,
                e.model_revision
         FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = ?1
         WHERE d.canonical_id IN (SELECT value FROM json_each(?2))",
    )?;
    let json = serde_json::to_string(canonical_ids).unwrap_or_else(|_| "[]".into());
    let rows = stmt.query_map(params![model, json], |r| {
        let hash: Option<String> = r.get(2)?;
        let stamp = match hash {
            Some(content_hash) => Some(Stamp {
                content_hash,
                revision: r.get(3)?,
            }),
            None => None,
        };
        Ok((r.get(0)?, (r.get(1)?, stamp)))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Writes (or replaces) one row, stamped with the revision of the model that embedded it.
pub fn put(
    conn: &Connection,
    canonical_id: &str,
    model: &str,
    revision: &str,
    content_hash: &str,
    vector: &[f32],
    updated_at: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO embeddings
             (canonical_id, model_name, content_hash, dim, vector, updated_at, model_revision)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        canonical_id,
        model,
        content_hash,
        vector.len() as i64,
        encode(vector),
        updated_at,
        revision
    ])?;
    Ok(())
}

/// The [`Coverage`] of every doc, in one pass over the docs (each looked up by the primary
/// key); rows of removed docs are not counted.
pub fn coverage(conn: &Connection, model: &str, revision: &str) -> Result<Coverage, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT count(*) FILTER (WHERE e.model_revision = ?2),
                count(*) FILTER (WHERE e.model_revision <> ?2),
                count(*) FILTER (WHERE e.model_revision IS NULL)
         FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = ?1",
    )?;
    Ok(stmt.query_row(params![model, revision], |r| {
        Ok(Coverage {
            current: r.get(0)?,
            stale: r.get(1)?,
            missing: r.get(2)?,
        })
    })?)
}

/// The docs whose row under `model` is stale (another revision) or missing, in canonical id
/// order: what a re-embed of the whole store has to do, whatever the texts.
pub fn stale_or_missing(
    conn: &Connection,
    model: &str,
    revision: &str,
) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT d.canonical_id FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = ?1
         WHERE e.model_revision IS NULL OR e.model_revision <> ?2
         ORDER BY d.canonical_id",
    )?;
    let rows = stmt.query_map(params![model, revision], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Live rows (their doc is in the store) under `model` written by another revision.
pub fn stale_live_rows(conn: &Connection, model: &str, revision: &str) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM embeddings e JOIN docs d ON d.canonical_id = e.canonical_id
             WHERE e.model_name = ?1 AND e.model_revision <> ?2",
        )?
        .query_row(params![model, revision], |r| r.get(0))?)
}

/// How many docs the store holds (read from the smallest index).
pub fn doc_count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM docs")?
        .query_row([], |r| r.get(0))?)
}

const VERSION_SQL: &str = "e.rowid || ' ' || e.content_hash || ' ' || e.updated_at";

/// Every row of one model name and revision whose doc is still in the store, in canonical id
/// order. Rows of removed docs, and rows another revision wrote, are inert and left out.
pub fn live_rows(
    conn: &Connection,
    model: &str,
    revision: &str,
) -> Result<Vec<LiveRow>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.canonical_id, d.doc_kind, {VERSION_SQL}, e.vector FROM embeddings e
         JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = ?1 AND e.model_revision = ?2 ORDER BY e.canonical_id"
    ))?;
    let rows = stmt.query_map([model, revision], |r| {
        Ok(LiveRow {
            canonical_id: r.get(0)?,
            doc_kind: r.get(1)?,
            version: r.get(2)?,
            vector: decode(r.get_ref(3)?.as_blob()?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`live_rows`] without the vectors: `(canonical_id, doc_kind, version)` in the same order.
/// A long-lived reader compares versions to re-read only the rows that changed.
pub fn live_row_versions(
    conn: &Connection,
    model: &str,
    revision: &str,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.canonical_id, d.doc_kind, {VERSION_SQL}
         FROM embeddings e JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = ?1 AND e.model_revision = ?2 ORDER BY e.canonical_id"
    ))?;
    let rows = stmt.query_map([model, revision], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many writes so far could have changed which embedding rows are live or what they hold
/// (kept by triggers since schema 6); `None` on an older store. Equal counts mean nothing
/// changed, so a long-lived reader keeps its vectors after one indexed read.
pub fn change_count(conn: &Connection) -> Result<Option<i64>, StoreError> {
    super::settings::get_count(conn, "embeddings_changes")
}

/// One row's vector and version, if the row exists and this revision wrote it.
pub fn vector_and_version(
    conn: &Connection,
    canonical_id: &str,
    model: &str,
    revision: &str,
) -> Result<Option<(Vec<f32>, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.vector, {VERSION_SQL} FROM embeddings e
         WHERE e.canonical_id = ?1 AND e.model_name = ?2 AND e.model_revision = ?3"
    ))?;
    let found = stmt
        .query_row(params![canonical_id, model, revision], |r| {
            Ok((decode(r.get_ref(0)?.as_blob()?), r.get(1)?))
        })
        .optional()?;
    Ok(found)
}

/// How many docs have no row under this model name.
pub fn docs_lacking(conn: &Connection, model: &str) -> Result<i64, StoreError> {
    Ok(conn.query_row(
        "SELECT count(*) FROM docs d WHERE NOT EXISTS (
             SELECT 1 FROM embeddings e WHERE e.canonical_id = d.canonical_id
             AND e.model_name = ?1)",
        [model],
        |r| r.get(0),
    )?)
}

/// The store's [`VectorsState`], read in one statement.
pub fn vectors_state(conn: &Connection) -> Result<Option<VectorsState>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT (SELECT value FROM settings WHERE key = 'store_id'),
                (SELECT value FROM settings WHERE key = 'embeddings_changes'),
                (SELECT value FROM settings WHERE key = 'memory_tags_changes')",
    )?;
    let (id, e, m): (Option<String>, Option<String>, Option<String>) =
        stmt.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(
        match (
            id,
            e.and_then(|e| e.parse().ok()),
            m.and_then(|m| m.parse().ok()),
        ) {
            (Some(store_id), Some(embeddings_changes), Some(memory_tags_changes)) => {
                Some(VectorsState {
                    store_id,
                    embeddings_changes,
                    memory_tags_changes,
                })
            }
            _ => None,
        },
    )
}

/// The docs logged in `vector_changes` after `since` (schema 10), as they are now: see
/// [`crate::store::StoreRead::vector_changes`].
pub fn vector_changes(
    conn: &Connection,
    since: &VectorsState,
    model: &str,
    revision: &str,
    limit: usize,
) -> Result<Option<VectorChanges>, StoreError> {
    let Some(to) = vectors_state(conn)? else {
        return Ok(None);
    };
    let logged_from = |key: &str| super::settings::get_count(conn, key);
    let (Some(from_e), Some(from_m)) = (
        logged_from("vector_changes_from_e")?,
        logged_from("vector_changes_from_m")?,
    ) else {
        return Ok(None);
    };
    let covered = to.store_id == since.store_id
        && (from_e..=to.embeddings_changes).contains(&since.embeddings_changes)
        && (from_m..=to.memory_tags_changes).contains(&since.memory_tags_changes);
    if !covered {
        return Ok(None);
    }
    let mut stmt = conn.prepare_cached(
        "WITH c AS (SELECT DISTINCT key FROM vector_changes
                    WHERE (stream = 'e' AND n > ?1 AND n <= ?2)
                       OR (stream = 'm' AND n > ?3 AND n <= ?4))
         SELECT c.key, d.doc_kind, e.model_revision = ?6, e.vector FROM c
         LEFT JOIN docs d ON d.canonical_id = c.key
         LEFT JOIN embeddings e ON e.canonical_id = c.key AND e.model_name = ?5
             AND d.canonical_id IS NOT NULL
         ORDER BY c.key LIMIT ?7",
    )?;
    let mut found = stmt.query(params![
        since.embeddings_changes,
        to.embeddings_changes,
        since.memory_tags_changes,
        to.memory_tags_changes,
        model,
        revision,
        limit as i64 + 1,
    ])?;
    let mut rows = Vec::new();
    while let Some(r) = found.next()? {
        let canonical_id: String = r.get(0)?;
        let kind: Option<String> = r.get(1)?;
        let current: Option<bool> = r.get(2)?;
        let (live, stale) = match (kind, current) {
            (Some(kind), Some(true)) => (Some((kind, r.get::<_, Vec<u8>>(3)?)), false),
            (_, Some(false)) => (None, true),
            _ => (None, false),
        };
        rows.push(ChangedRow {
            canonical_id,
            live,
            stale,
            tags: Vec::new(),
        });
    }
    if rows.len() > limit {
        return Ok(None);
    }
    let mut tags = conn.prepare_cached(
        "SELECT entity FROM memory_entities WHERE memory_id = ?1 ORDER BY entity",
    )?;
    for row in &mut rows {
        if let Some(memory) = crate::canonical::memory_id_of(&row.canonical_id) {
            row.tags = tags
                .query_map([memory], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
        }
    }
    // Outside a snapshot another writer may have pruned the log since it was found to cover
    // `since`: pruning only moves these forward, so reading them again after the select tells.
    let still_covered = logged_from("vector_changes_from_e")?
        .is_some_and(|f| f <= since.embeddings_changes)
        && logged_from("vector_changes_from_m")?.is_some_and(|f| f <= since.memory_tags_changes);
    if !still_covered {
        return Ok(None);
    }
    Ok(Some(VectorChanges { to, rows }))
}

/// How many changes per stream the `vector_changes` log keeps: a sidecar further behind is
/// rebuilt. Pruned when a write commits with twice as many, so the log stays small.
const VECTOR_CHANGES_KEPT: i64 = 50_000;

/// Drops the oldest `vector_changes` once a stream holds twice [`VECTOR_CHANGES_KEPT`],
/// moving `vector_changes_from_*` past them (two index reads when there is nothing to do).
pub fn prune_vector_changes(conn: &Connection) -> Result<(), StoreError> {
    prune_vector_changes_keeping(conn, VECTOR_CHANGES_KEPT)
}

fn prune_vector_changes_keeping(conn: &Connection, keep: i64) -> Result<(), StoreError> {
    if super::migrations::schema_version(conn)? < 10 {
        return Ok(());
    }
    for (stream, from) in [
        ("e", "vector_changes_from_e"),
        ("m", "vector_changes_from_m"),
    ] {
        super::settings::prune_change_log(conn, "vector_changes", Some(stream), from, keep)?;
    }
    Ok(())
}

/// Calls `each(canonical_id, doc_kind, vector blob)` for every live row of one model name and
/// revision, in canonical id order ([`live_rows`] without holding them all).
pub fn for_each_live_row(
    conn: &Connection,
    model: &str,
    revision: &str,
    mut each: impl FnMut(&str, &str, &[u8]),
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.canonical_id, d.doc_kind, e.vector FROM embeddings e
         JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = ?1 AND e.model_revision = ?2 ORDER BY e.canonical_id",
    )?;
    let mut rows = stmt.query([model, revision])?;
    while let Some(row) = rows.next()? {
        let sql = rusqlite::Error::from;
        each(
            row.get_ref(0)?.as_str().map_err(sql)?,
            row.get_ref(1)?.as_str().map_err(sql)?,
            row.get_ref(2)?.as_blob().map_err(sql)?,
        );
    }
    Ok(())
}

/// Calls `each(memory_id, tag)` for every stored tag of every memory.
pub fn for_each_memory_tag(
    conn: &Connection,
    mut each: impl FnMut(&str, &str),
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached("SELECT memory_id, entity FROM memory_entities")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let sql = rusqlite::Error::from;
        each(
            row.get_ref(0)?.as_str().map_err(sql)?,
            row.get_ref(1)?.as_str().map_err(sql)?,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{docs, OpenMode, SqliteStore as Store};

    fn doc(conn: &Connection, id: &str) {
        let stored = docs::StoredDoc::placeholder(id, "model", Some("db"));
        docs::upsert(conn, &stored).unwrap();
    }

    #[test]
    fn the_vector_change_log_is_pruned_and_a_state_before_it_is_not_covered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let conn = store.conn();
        doc(conn, "db.a");
        let start = vectors_state(conn).unwrap().unwrap();
        for i in 0..30 {
            put(
                conn,
                "db.a",
                "m",
                "r",
                &format!("h{i}"),
                &[i as f32, 1.0],
                "t",
            )
            .unwrap();
        }
        let covered = |since: &VectorsState| {
            vector_changes(conn, since, "m", "r", 100)
                .unwrap()
                .is_some()
        };
        assert!(covered(&start));
        prune_vector_changes_keeping(conn, 5).unwrap();
        let kept: i64 = conn
            .query_row(
                "SELECT count(*) FROM vector_changes WHERE stream = 'e'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, 5);
        assert!(!covered(&start), "the changes after it are gone");
        let mut recent = vectors_state(conn).unwrap().unwrap();
        recent.embeddings_changes -= 5;
        let changes = vector_changes(conn, &recent, "m", "r", 100)
            .unwrap()
            .unwrap();
        assert_eq!(changes.rows.len(), 1);
        assert_eq!(changes.rows[0].canonical_id, "db.a");
        recent.embeddings_changes -= 1;
        assert!(!covered(&recent));
    }

    #[test]
    fn rows_of_another_revision_are_stale_and_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let conn = store.conn();
        for id in ["db.a", "db.b", "db.c", "db.d"] {
            doc(conn, id);
        }
        put(conn, "db.a", "local/m", "new", "h", &[1.0], "t").unwrap();
        put(conn, "db.b", "local/m", "old", "h", &[1.0], "t").unwrap();
        // Written before schema 8: no revision recorded.
        conn.execute(
            "INSERT INTO embeddings (canonical_id, model_name, content_hash, dim, vector, updated_at)
             VALUES ('db.c', 'local/m', 'h', 1, x'0000803f', 't')",
            [],
        )
        .unwrap();
        // Another model name, and a row whose doc is gone: neither counts.
        put(conn, "db.d", "local/other", "new", "h", &[1.0], "t").unwrap();
        put(conn, "db.gone", "local/m", "old", "h", &[1.0], "t").unwrap();
        assert_eq!(
            coverage(conn, "local/m", "new").unwrap(),
            Coverage {
                current: 1,
                stale: 2,
                missing: 1
            }
        );
        assert_eq!(stale_live_rows(conn, "local/m", "new").unwrap(), 2);
        assert_eq!(
            stale_or_missing(conn, "local/m", "new").unwrap(),
            ["db.b", "db.c", "db.d"]
        );
        assert_eq!(doc_count(conn).unwrap(), 4);
        let live: Vec<String> = live_rows(conn, "local/m", "new")
            .unwrap()
            .into_iter()
            .map(|r| r.canonical_id)
            .collect();
        assert_eq!(live, ["db.a"]);
        assert_eq!(live_row_versions(conn, "local/m", "new").unwrap().len(), 1);
        assert!(vector_and_version(conn, "db.b", "local/m", "new")
            .unwrap()
            .is_none());
        assert!(vector_and_version(conn, "db.b", "local/m", "old")
            .unwrap()
            .is_some());
        let stamps = texts_and_stamps(conn, "local/m", &["db.b".into(), "db.d".into()]).unwrap();
        assert_eq!(
            stamps["db.b"].1,
            Some(Stamp {
                content_hash: "h".into(),
                revision: "old".into()
            })
        );
        assert_eq!(stamps["db.d"].1, None);
    }
}
