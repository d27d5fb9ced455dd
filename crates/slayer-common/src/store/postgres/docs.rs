//! Rendered docs (as SQLite's `docs.rs`). There is no `index_state`: a server store's
//! full-text index is a per-host cache that records its own state against the change log.

use postgres::Row;

use super::{PgResult, Session};
use crate::canonical::datasource_of;
use crate::records::Doc;
use crate::store::rows::StoredDoc;

/// The columns [`from_row`] reads, in its order.
macro_rules! doc_columns {
    () => {
        "canonical_id, doc_kind, datasource, model, position, text, content_hash, embedding_text"
    };
}

/// Rebuild order: datasources, then model subtrees by (datasource, model), then memories by
/// id. SQLite sorts NULL first; PostgreSQL, unless told, last.
macro_rules! rebuild_order {
    () => {
        " ORDER BY CASE doc_kind WHEN 'datasource' THEN 0 WHEN 'memory' THEN 2 ELSE 1 END, \
         datasource NULLS FIRST, model NULLS FIRST, position, canonical_id"
    };
}
pub(super) use {doc_columns, rebuild_order};

/// A doc from the columns of [`doc_columns`], starting at `at`.
pub(super) fn from_row(r: &Row, at: usize) -> StoredDoc {
    StoredDoc {
        doc: Doc {
            canonical_id: r.get(at),
            doc_kind: r.get(at + 1),
            datasource: r.get(at + 2),
            text: r.get(at + 5),
            content_hash: r.get(at + 6),
            embedding_text: r.get(at + 7),
        },
        model: r.get(at + 3),
        position: r.get(at + 4),
    }
}

pub(super) fn upsert(s: &mut Session, stored: &StoredDoc) -> PgResult<()> {
    let d = &stored.doc;
    s.execute(
        concat!(
            "INSERT INTO docs (",
            doc_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (canonical_id) DO UPDATE SET doc_kind = excluded.doc_kind,
               datasource = excluded.datasource, model = excluded.model,
               position = excluded.position, text = excluded.text,
               content_hash = excluded.content_hash, embedding_text = excluded.embedding_text"
        ),
        &[
            &d.canonical_id,
            &d.doc_kind,
            &d.datasource,
            &stored.model,
            &stored.position,
            &d.text,
            &d.content_hash,
            &d.embedding_text,
        ],
    )?;
    Ok(())
}

pub(super) fn get_many(s: &mut Session, canonical_ids: &[String]) -> PgResult<Vec<StoredDoc>> {
    let rows = s.query(
        concat!(
            "SELECT ",
            doc_columns!(),
            " FROM docs WHERE canonical_id = ANY($1)"
        ),
        &[&canonical_ids],
    )?;
    Ok(rows.iter().map(|r| from_row(r, 0)).collect())
}

pub(super) fn get(s: &mut Session, canonical_id: &str) -> PgResult<Option<StoredDoc>> {
    let row = s.query_opt(
        concat!(
            "SELECT ",
            doc_columns!(),
            " FROM docs WHERE canonical_id = $1"
        ),
        &[&canonical_id],
    )?;
    Ok(row.map(|r| from_row(&r, 0)))
}

pub(super) fn of_datasource(s: &mut Session, datasource: &str) -> PgResult<Vec<StoredDoc>> {
    let rows = s.query(
        concat!(
            "SELECT ",
            doc_columns!(),
            " FROM docs WHERE datasource = $1",
            rebuild_order!()
        ),
        &[&datasource],
    )?;
    Ok(rows.iter().map(|r| from_row(r, 0)).collect())
}

pub(super) fn all(s: &mut Session) -> PgResult<Vec<StoredDoc>> {
    let rows = s.query(
        concat!("SELECT ", doc_columns!(), " FROM docs", rebuild_order!()),
        &[],
    )?;
    Ok(rows.iter().map(|r| from_row(r, 0)).collect())
}

pub(super) fn ids(s: &mut Session) -> PgResult<Vec<String>> {
    let rows = s.query("SELECT canonical_id FROM docs ORDER BY canonical_id", &[])?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

pub(super) fn delete(s: &mut Session, canonical_id: &str) -> PgResult<bool> {
    Ok(s.execute("DELETE FROM docs WHERE canonical_id = $1", &[&canonical_id])? > 0)
}

/// Deletes `root`'s doc and its strict dotted descendants; the deleted ids, sorted.
pub(super) fn delete_under(s: &mut Session, root: &str) -> PgResult<Vec<String>> {
    let rows = s.query(
        concat!(
            "DELETE FROM docs WHERE ",
            under!("canonical_id"),
            " RETURNING canonical_id"
        ),
        &[&root],
    )?;
    let mut ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    ids.sort();
    Ok(ids)
}

pub(super) fn counts_by_kind(s: &mut Session) -> PgResult<Vec<(String, i64)>> {
    let rows = s.query(
        "SELECT doc_kind, count(*) FROM docs GROUP BY doc_kind ORDER BY doc_kind",
        &[],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub(super) fn memory_datasources(s: &mut Session, memory_id: &str) -> PgResult<Vec<String>> {
    let rows = s.query(
        "SELECT entity FROM memory_entities WHERE memory_id = $1",
        &[&memory_id],
    )?;
    let mut roots: Vec<String> = rows
        .iter()
        .filter_map(|r| datasource_of(r.get(0)).map(str::to_owned))
        .collect();
    roots.sort();
    roots.dedup();
    Ok(roots)
}

/// The trigger-kept count, with what this transaction has written and not yet added to it.
pub(super) fn count(s: &mut Session) -> PgResult<i64> {
    Ok(s.query_one(
        "SELECT value + docs_delta() FROM counters WHERE name = 'doc_count'",
        &[],
    )?
    .get(0))
}
