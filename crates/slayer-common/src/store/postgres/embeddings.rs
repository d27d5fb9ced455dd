//! Embedding rows (as SQLite's `embeddings.rs`): vectors are `bytea` in the same little-endian
//! f32 encoding, and a row's version is `"<row_version> <content_hash> <updated_at>"`.

use std::collections::HashMap;

use super::{PgResult, Session};
use crate::store::rows::{Coverage, LiveRow, Stamp};
use crate::store::sqlite::embeddings::{decode, encode};

/// A row's version: changes whenever the row is written (`row_version` is drawn anew).
macro_rules! version {
    () => {
        "e.row_version || ' ' || e.content_hash || ' ' || e.updated_at"
    };
}

pub(super) fn delete_under(s: &mut Session, root: &str) -> PgResult<usize> {
    Ok(s.execute(
        concat!("DELETE FROM embeddings WHERE ", under!("canonical_id")),
        &[&root],
    )? as usize)
}

pub(super) fn delete_exact(s: &mut Session, canonical_id: &str) -> PgResult<usize> {
    Ok(s.execute(
        "DELETE FROM embeddings WHERE canonical_id = $1",
        &[&canonical_id],
    )? as usize)
}

pub(super) fn counts_by_model(s: &mut Session) -> PgResult<Vec<(String, i64)>> {
    let rows = s.query(
        "SELECT model_name, count(*) FROM embeddings GROUP BY model_name ORDER BY model_name",
        &[],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub(super) fn texts_and_stamps(
    s: &mut Session,
    model: &str,
    canonical_ids: &[String],
) -> PgResult<HashMap<String, (String, Option<Stamp>)>> {
    let rows = s.query(
        "SELECT d.canonical_id, COALESCE(d.embedding_text, d.text), e.content_hash,
                e.model_revision
         FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = $1
         WHERE d.canonical_id = ANY($2)",
        &[&model, &canonical_ids],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let stamp = r.get::<_, Option<String>>(2).map(|content_hash| Stamp {
                content_hash,
                revision: r.get(3),
            });
            (r.get(0), (r.get(1), stamp))
        })
        .collect())
}

pub(super) fn put(
    s: &mut Session,
    canonical_id: &str,
    model: &str,
    revision: &str,
    content_hash: &str,
    vector: &[f32],
    updated_at: &str,
) -> PgResult<()> {
    s.execute(
        "INSERT INTO embeddings
             (canonical_id, model_name, content_hash, dim, vector, updated_at, model_revision)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (canonical_id, model_name) DO UPDATE SET
             content_hash = excluded.content_hash, dim = excluded.dim, vector = excluded.vector,
             updated_at = excluded.updated_at, model_revision = excluded.model_revision",
        &[
            &canonical_id,
            &model,
            &content_hash,
            &(vector.len() as i32),
            &encode(vector),
            &updated_at,
            &revision,
        ],
    )?;
    Ok(())
}

pub(super) fn coverage(s: &mut Session, model: &str, revision: &str) -> PgResult<Coverage> {
    let r = s.query_one(
        "SELECT count(*) FILTER (WHERE e.model_revision = $2),
                count(*) FILTER (WHERE e.model_revision <> $2),
                count(*) FILTER (WHERE e.model_revision IS NULL)
         FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = $1",
        &[&model, &revision],
    )?;
    Ok(Coverage {
        current: r.get(0),
        stale: r.get(1),
        missing: r.get(2),
    })
}

pub(super) fn stale_or_missing(
    s: &mut Session,
    model: &str,
    revision: &str,
) -> PgResult<Vec<String>> {
    let rows = s.query(
        "SELECT d.canonical_id FROM docs d LEFT JOIN embeddings e
             ON e.canonical_id = d.canonical_id AND e.model_name = $1
         WHERE e.model_revision IS NULL OR e.model_revision <> $2
         ORDER BY d.canonical_id",
        &[&model, &revision],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

pub(super) fn stale_live_rows(s: &mut Session, model: &str, revision: &str) -> PgResult<i64> {
    Ok(s.query_one(
        "SELECT count(*) FROM embeddings e JOIN docs d ON d.canonical_id = e.canonical_id
         WHERE e.model_name = $1 AND e.model_revision <> $2",
        &[&model, &revision],
    )?
    .get(0))
}

pub(super) fn docs_lacking(s: &mut Session, model: &str) -> PgResult<i64> {
    Ok(s.query_one(
        "SELECT count(*) FROM docs d WHERE NOT EXISTS (
             SELECT 1 FROM embeddings e WHERE e.canonical_id = d.canonical_id
             AND e.model_name = $1)",
        &[&model],
    )?
    .get(0))
}

pub(super) fn live_rows(s: &mut Session, model: &str, revision: &str) -> PgResult<Vec<LiveRow>> {
    let rows = s.query(
        concat!(
            "SELECT e.canonical_id, d.doc_kind, ",
            version!(),
            ", e.vector FROM embeddings e
             JOIN docs d ON d.canonical_id = e.canonical_id
             WHERE e.model_name = $1 AND e.model_revision = $2 ORDER BY e.canonical_id"
        ),
        &[&model, &revision],
    )?;
    Ok(rows
        .iter()
        .map(|r| LiveRow {
            canonical_id: r.get(0),
            doc_kind: r.get(1),
            version: r.get(2),
            vector: decode(r.get(3)),
        })
        .collect())
}

pub(super) fn live_row_versions(
    s: &mut Session,
    model: &str,
    revision: &str,
) -> PgResult<Vec<(String, String, String)>> {
    let rows = s.query(
        concat!(
            "SELECT e.canonical_id, d.doc_kind, ",
            version!(),
            " FROM embeddings e JOIN docs d ON d.canonical_id = e.canonical_id
             WHERE e.model_name = $1 AND e.model_revision = $2 ORDER BY e.canonical_id"
        ),
        &[&model, &revision],
    )?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

pub(super) fn vector_and_version(
    s: &mut Session,
    canonical_id: &str,
    model: &str,
    revision: &str,
) -> PgResult<Option<(Vec<f32>, String)>> {
    let row = s.query_opt(
        concat!(
            "SELECT e.vector, ",
            version!(),
            " FROM embeddings e
             WHERE e.canonical_id = $1 AND e.model_name = $2 AND e.model_revision = $3"
        ),
        &[&canonical_id, &model, &revision],
    )?;
    Ok(row.map(|r| (decode(r.get(0)), r.get(1))))
}

/// One chunk of the live rows, `(canonical id, doc kind, vector bytes)`, after the id `after`
/// (from the first when `None`), in canonical id order: the rows are handed out a chunk at a
/// time so the connection is free while the caller's callback runs (it may read the store).
pub(super) fn live_row_chunk(
    s: &mut Session,
    model: &str,
    revision: &str,
    after: Option<&str>,
    limit: i64,
) -> PgResult<Vec<(String, String, Vec<u8>)>> {
    let rows = match after {
        None => s.query(
            "SELECT e.canonical_id, d.doc_kind, e.vector FROM embeddings e
             JOIN docs d ON d.canonical_id = e.canonical_id
             WHERE e.model_name = $1 AND e.model_revision = $2
             ORDER BY e.canonical_id LIMIT $3",
            &[&model, &revision, &limit],
        )?,
        Some(after) => s.query(
            "SELECT e.canonical_id, d.doc_kind, e.vector FROM embeddings e
             JOIN docs d ON d.canonical_id = e.canonical_id
             WHERE e.model_name = $1 AND e.model_revision = $2 AND e.canonical_id > $4
             ORDER BY e.canonical_id LIMIT $3",
            &[&model, &revision, &limit, &after],
        )?,
    };
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

/// Every `(memory id, tag)`, by memory id then tag.
pub(super) fn memory_tags(s: &mut Session) -> PgResult<Vec<(String, String)>> {
    let rows = s.query(
        "SELECT memory_id, entity FROM memory_entities ORDER BY memory_id, entity",
        &[],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
