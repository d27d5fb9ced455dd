//! Rendered docs and the record of which doc versions the full-text index holds.
//!
//! `docs` is what the index and the embedder should see; `index_state` is what the index does
//! see. Their difference is the work a lagging index has to do, so any binary can catch it up.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{settings, under_sql, StoreError};
use crate::canonical::datasource_of;
use crate::records::Doc;
pub use crate::store::rows::{IndexLag, StoredDoc};

const COLUMNS: &str =
    "canonical_id, doc_kind, datasource, model, position, text, content_hash, embedding_text";

/// Rebuild order (columns prefixed with `alias`): datasources, then model subtrees by (datasource, model), then memories by id —
/// the insertion order of the original, which fixes tantivy's tie-break on equal scores.
fn rebuild_order(alias: &str) -> String {
    format!(
        "ORDER BY CASE {alias}doc_kind WHEN 'datasource' THEN 0 WHEN 'memory' THEN 2 ELSE 1 END, \
         {alias}datasource, {alias}model, {alias}position, {alias}canonical_id"
    )
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<StoredDoc> {
    Ok(StoredDoc {
        doc: Doc {
            canonical_id: r.get(0)?,
            doc_kind: r.get(1)?,
            datasource: r.get(2)?,
            text: r.get(5)?,
            content_hash: r.get(6)?,
            embedding_text: r.get(7)?,
        },
        model: r.get(3)?,
        position: r.get(4)?,
    })
}

fn collect(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<StoredDoc>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Inserts or replaces a doc.
pub fn upsert(conn: &Connection, stored: &StoredDoc) -> Result<(), StoreError> {
    let d = &stored.doc;
    conn.prepare_cached(&format!(
        "INSERT INTO docs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(canonical_id) DO UPDATE SET doc_kind = excluded.doc_kind,
           datasource = excluded.datasource, model = excluded.model, position = excluded.position,
           text = excluded.text, content_hash = excluded.content_hash,
           embedding_text = excluded.embedding_text"
    ))?
    .execute(params![
        d.canonical_id,
        d.doc_kind,
        d.datasource,
        stored.model,
        stored.position,
        d.text,
        d.content_hash,
        d.embedding_text
    ])?;
    Ok(())
}

/// One doc.
pub fn get(conn: &Connection, canonical_id: &str) -> Result<Option<StoredDoc>, StoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM docs WHERE canonical_id = ?1"),
            [canonical_id],
            from_row,
        )
        .optional()?)
}

/// Every entity doc of one datasource (its own doc and its models' subtrees).
pub fn of_datasource(conn: &Connection, datasource: &str) -> Result<Vec<StoredDoc>, StoreError> {
    collect(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM docs WHERE datasource = ?1 {}",
            rebuild_order("")
        ),
        [datasource],
    )
}

/// Every doc in rebuild order.
pub fn all(conn: &Connection) -> Result<Vec<StoredDoc>, StoreError> {
    collect(
        conn,
        &format!("SELECT {COLUMNS} FROM docs {}", rebuild_order("")),
        [],
    )
}

/// The canonical id of every doc, sorted.
pub fn ids(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare("SELECT canonical_id FROM docs ORDER BY canonical_id")?;
    let ids = stmt.query_map([], |r| r.get(0))?;
    Ok(ids.collect::<Result<_, _>>()?)
}

/// Deletes one doc; returns whether it existed.
pub fn delete(conn: &Connection, canonical_id: &str) -> Result<bool, StoreError> {
    Ok(conn.execute("DELETE FROM docs WHERE canonical_id = ?1", [canonical_id])? > 0)
}

/// Deletes `root`'s doc and its strict dotted descendants; returns the deleted ids.
pub fn delete_under(conn: &Connection, root: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "DELETE FROM docs WHERE {} RETURNING canonical_id",
        under_sql("canonical_id", 1)
    ))?;
    let ids = stmt.query_map([root], |r| r.get(0))?;
    let mut out: Vec<String> = ids.collect::<Result<_, _>>()?;
    out.sort();
    Ok(out)
}

/// Doc counts per kind, sorted by kind.
pub fn counts_by_kind(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT doc_kind, count(*) FROM docs GROUP BY doc_kind ORDER BY doc_kind",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The datasources a memory doc belongs to: the roots of its entity tags, sorted.
pub fn memory_datasources(conn: &Connection, memory_id: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT entity FROM memory_entities WHERE memory_id = ?1")?;
    let tags = stmt.query_map([memory_id], |r| r.get::<_, String>(0))?;
    let mut roots = Vec::new();
    for tag in tags {
        if let Some(ds) = datasource_of(&tag?) {
            roots.push(ds.to_owned());
        }
    }
    roots.sort();
    roots.dedup();
    Ok(roots)
}

/// The setting holding the `docs_version` the full-text index last synced to (written by
/// slayer-index in the transaction that records `index_state`).
pub const FULLTEXT_SYNCED_VERSION: &str = "fulltext_docs_version";

/// Computes the index's lag behind `docs`. Where the index synced to a `docs_version` the
/// change log still covers (schema 12), only the docs logged since are compared; otherwise
/// every doc is. Both give the same lag: a doc changed at or before the synced version was
/// compared by that sync, and `index_state` was written in the same transaction.
pub fn index_lag(conn: &Connection) -> Result<IndexLag, StoreError> {
    match logged_index_lag(conn)? {
        Some(lag) => Ok(lag),
        None => full_index_lag(conn),
    }
}

/// The `d.`-prefixed doc columns.
fn doc_columns() -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("d.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lag from the docs the change log names since the synced version, where it still
/// covers them.
pub(super) fn logged_index_lag(conn: &Connection) -> Result<Option<IndexLag>, StoreError> {
    let (cols, order) = (doc_columns(), rebuild_order("d."));
    if let Some(since) = logged_since(conn)? {
        let upserts = collect(
            conn,
            &format!(
                "SELECT {cols} FROM docs d
                 JOIN (SELECT DISTINCT key FROM docs_changes WHERE n > ?1) c
                     ON c.key = d.canonical_id
                 LEFT JOIN index_state s ON s.canonical_id = d.canonical_id
                 WHERE s.content_hash IS NULL OR s.content_hash <> d.content_hash {order}"
            ),
            [since],
        )?;
        let mut stmt = conn.prepare_cached(
            "SELECT s.canonical_id FROM index_state s
             JOIN (SELECT DISTINCT key FROM docs_changes WHERE n > ?1) c
                 ON c.key = s.canonical_id
             LEFT JOIN docs d ON d.canonical_id = s.canonical_id
             WHERE d.canonical_id IS NULL ORDER BY s.canonical_id",
        )?;
        let deletes = stmt
            .query_map([since], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        // Outside a snapshot another writer may have pruned the log meanwhile: pruning only
        // moves its start forward, so reading it again tells.
        if logged_from(conn)?.is_some_and(|from| from <= since) {
            return Ok(Some(IndexLag { upserts, deletes }));
        }
    }
    Ok(None)
}

/// The lag from every doc and every `index_state` row.
pub(super) fn full_index_lag(conn: &Connection) -> Result<IndexLag, StoreError> {
    let (cols, order) = (doc_columns(), rebuild_order("d."));
    let upserts = collect(
        conn,
        &format!(
            "SELECT {cols} FROM docs d LEFT JOIN index_state s ON s.canonical_id = d.canonical_id
             WHERE s.content_hash IS NULL OR s.content_hash <> d.content_hash {order}"
        ),
        [],
    )?;
    let mut stmt = conn.prepare_cached(
        "SELECT s.canonical_id FROM index_state s LEFT JOIN docs d ON d.canonical_id = s.canonical_id
         WHERE d.canonical_id IS NULL ORDER BY s.canonical_id",
    )?;
    let deletes = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(IndexLag { upserts, deletes })
}

/// The first `docs_version` whose changes the log may lack (schema 12; none before).
fn logged_from(conn: &Connection) -> Result<Option<i64>, StoreError> {
    settings::get_count(conn, "docs_changes_from")
}

/// The `docs_version` the index synced to, where the change log holds every change since.
fn logged_since(conn: &Connection) -> Result<Option<i64>, StoreError> {
    let synced = settings::get_count(conn, FULLTEXT_SYNCED_VERSION)?;
    Ok(match (synced, logged_from(conn)?) {
        (Some(synced), Some(from)) if from <= synced => Some(synced),
        _ => None,
    })
}

/// How many changes the `docs_changes` log keeps: an index further behind compares every doc.
/// Pruned when a write commits with twice as many, so the log stays small.
const DOCS_CHANGES_KEPT: i64 = 50_000;

/// Drops the oldest `docs_changes` once the log holds twice [`DOCS_CHANGES_KEPT`], moving
/// `docs_changes_from` past them.
pub fn prune_docs_changes(conn: &Connection) -> Result<(), StoreError> {
    prune_docs_changes_keeping(conn, DOCS_CHANGES_KEPT)
}

pub(super) fn prune_docs_changes_keeping(conn: &Connection, keep: i64) -> Result<(), StoreError> {
    if super::migrations::schema_version(conn)? < 12 {
        return Ok(());
    }
    settings::prune_change_log(conn, "docs_changes", None, "docs_changes_from", keep)
}

/// Records that the index now holds `lag`'s changes.
pub fn mark_indexed(conn: &Connection, lag: &IndexLag) -> Result<(), StoreError> {
    let mut put = conn.prepare_cached(
        "INSERT INTO index_state (canonical_id, content_hash) VALUES (?1, ?2)
         ON CONFLICT(canonical_id) DO UPDATE SET content_hash = excluded.content_hash",
    )?;
    for stored in &lag.upserts {
        put.execute(params![stored.doc.canonical_id, stored.doc.content_hash])?;
    }
    let mut del = conn.prepare_cached("DELETE FROM index_state WHERE canonical_id = ?1")?;
    for id in &lag.deletes {
        del.execute([id])?;
    }
    Ok(())
}

/// Forgets what the index holds (before a rebuild from scratch).
pub fn clear_index_state(conn: &Connection) -> Result<(), StoreError> {
    conn.execute("DELETE FROM index_state", [])?;
    Ok(())
}

/// Number of docs the store believes the index holds.
pub fn indexed_count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT count(*) FROM index_state", [], |r| r.get(0))?)
}

/// The docs change counter (bumped by triggers on every insert, update and delete).
pub fn version(conn: &Connection) -> Result<String, StoreError> {
    Ok(super::settings::get(conn, "docs_version")?.unwrap_or_else(|| "0".to_owned()))
}
