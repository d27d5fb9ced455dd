//! Embedding rows; filled by `slayer-embed`, deleted here when their docs go.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::{under_sql, StoreError};

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
/// its own) and the content hash of its row under `model`, if it has one.
pub fn texts_and_hashes(
    conn: &Connection,
    model: &str,
    canonical_ids: &[String],
) -> Result<HashMap<String, (String, Option<String>)>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT d.canonical_id, COALESCE(d.embedding_text, d.text), e.content_hash
         FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = ?1
         WHERE d.canonical_id IN (SELECT value FROM json_each(?2))",
    )?;
    let json = serde_json::to_string(canonical_ids).unwrap_or_else(|_| "[]".into());
    let rows = stmt.query_map(params![model, json], |r| {
        Ok((r.get(0)?, (r.get(1)?, r.get(2)?)))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Writes (or replaces) one row.
pub fn put(
    conn: &Connection,
    canonical_id: &str,
    model: &str,
    content_hash: &str,
    vector: &[f32],
    updated_at: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO embeddings
             (canonical_id, model_name, content_hash, dim, vector, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        canonical_id,
        model,
        content_hash,
        vector.len() as i64,
        encode(vector),
        updated_at
    ])?;
    Ok(())
}

/// One stored row as a long-lived reader keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRow {
    /// The doc's canonical id.
    pub canonical_id: String,
    /// The doc's kind (`memory`, `column`, …).
    pub doc_kind: String,
    /// Changes whenever the row is written: its rowid, content hash and write time.
    pub version: String,
    /// The vector as stored.
    pub vector: Vec<f32>,
}

const VERSION_SQL: &str = "e.rowid || ' ' || e.content_hash || ' ' || e.updated_at";

/// Every row of one model name whose doc is still in the store, in canonical id order. Rows
/// of removed docs are inert and left out.
pub fn live_rows(conn: &Connection, model: &str) -> Result<Vec<LiveRow>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.canonical_id, d.doc_kind, {VERSION_SQL}, e.vector FROM embeddings e
         JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = ?1 ORDER BY e.canonical_id"
    ))?;
    let rows = stmt.query_map([model], |r| {
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
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.canonical_id, d.doc_kind, {VERSION_SQL}
         FROM embeddings e JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = ?1 ORDER BY e.canonical_id"
    ))?;
    let rows = stmt.query_map([model], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many writes so far could have changed which embedding rows are live or what they hold
/// (kept by triggers since schema 6); `None` on an older store. Equal counts mean nothing
/// changed, so a long-lived reader keeps its vectors after one indexed read.
pub fn change_count(conn: &Connection) -> Result<Option<i64>, StoreError> {
    Ok(super::settings::get(conn, "embeddings_changes")?.and_then(|v| v.parse().ok()))
}

/// One row's vector and version, if the row exists.
pub fn vector_and_version(
    conn: &Connection,
    canonical_id: &str,
    model: &str,
) -> Result<Option<(Vec<f32>, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.vector, {VERSION_SQL} FROM embeddings e
         WHERE e.canonical_id = ?1 AND e.model_name = ?2"
    ))?;
    let found = stmt
        .query_row(params![canonical_id, model], |r| {
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

/// What the vector sidecar of a store is current with: the store's identity and the counts of
/// the writes that change its rows (`embeddings_changes`) or their datasources
/// (`memory_tags_changes`). `None` on a store older than schema 7.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VectorsState {
    /// Random per store, kept across migrations.
    pub store_id: String,
    /// `settings.embeddings_changes`.
    pub embeddings_changes: i64,
    /// `settings.memory_tags_changes`.
    pub memory_tags_changes: i64,
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

/// Calls `each(canonical_id, doc_kind, vector blob)` for every live row of one model name, in
/// canonical id order ([`live_rows`] without holding them all).
pub fn for_each_live_row(
    conn: &Connection,
    model: &str,
    mut each: impl FnMut(&str, &str, &[u8]),
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.canonical_id, d.doc_kind, e.vector FROM embeddings e
         JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = ?1 ORDER BY e.canonical_id",
    )?;
    let mut rows = stmt.query([model])?;
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
