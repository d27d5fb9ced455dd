//! Rendered docs (as SQLite's `docs.rs`). There is no `index_state`: a server store's
//! full-text index is a per-host cache that records its own state against the change log.

use std::collections::HashMap;

use postgres::Row;

use super::memories::{last_of_each, BATCH_ROWS};
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

/// Inserts or replaces docs, [`BATCH_ROWS`] to a statement (one doc is a batch of one).
pub(super) fn upsert_many(s: &mut Session, stored: &[StoredDoc]) -> PgResult<()> {
    for chunk in last_of_each(stored, |d| d.doc.canonical_id.as_str()).chunks(BATCH_ROWS) {
        let column = |f: fn(&StoredDoc) -> &str| chunk.iter().map(|d| f(d)).collect::<Vec<_>>();
        let optional = |f: fn(&StoredDoc) -> Option<&str>| -> Vec<Option<&str>> {
            chunk.iter().map(|d| f(d)).collect()
        };
        let positions: Vec<i64> = chunk.iter().map(|d| d.position).collect();
        s.execute(
            concat!(
                "INSERT INTO docs (",
                doc_columns!(),
                ") SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[],
                                        $5::int8[], $6::text[], $7::text[], $8::text[])
                 ON CONFLICT (canonical_id) DO UPDATE SET doc_kind = excluded.doc_kind,
                   datasource = excluded.datasource, model = excluded.model,
                   position = excluded.position, text = excluded.text,
                   content_hash = excluded.content_hash, embedding_text = excluded.embedding_text"
            ),
            &[
                &column(|d| &d.doc.canonical_id),
                &column(|d| &d.doc.doc_kind),
                &optional(|d| d.doc.datasource.as_deref()),
                &optional(|d| d.model.as_deref()),
                &positions,
                &column(|d| &d.doc.text),
                &column(|d| &d.doc.content_hash),
                &optional(|d| d.doc.embedding_text.as_deref()),
            ],
        )?;
    }
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

/// [`memory_datasources`] of many memories, [`BATCH_ROWS`] to a statement.
pub(super) fn memories_datasources(
    s: &mut Session,
    memory_ids: &[&str],
) -> PgResult<HashMap<String, Vec<String>>> {
    let mut roots: HashMap<String, Vec<String>> = HashMap::with_capacity(memory_ids.len());
    for chunk in memory_ids.chunks(BATCH_ROWS) {
        let rows = s.query(
            "SELECT memory_id, entity FROM memory_entities WHERE memory_id = ANY($1)",
            &[&chunk],
        )?;
        for r in &rows {
            if let Some(ds) = datasource_of(r.get(1)) {
                roots.entry(r.get(0)).or_default().push(ds.to_owned());
            }
        }
    }
    for list in roots.values_mut() {
        list.sort();
        list.dedup();
    }
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
