//! The change log's readings: the versions a long-lived reader compares on every request (each
//! one index-only backward scan of `changes (stream, seq)`), and what changed in the docs
//! since a version a per-host full-text index synced to.

use super::docs::{doc_columns, from_row, rebuild_order};
use super::{PgResult, Session};
use crate::store::rows::{ChangedRow, IndexLag, VectorChanges, VectorsState};

/// The largest `seq` of every stream: moves whenever any host commits a write.
pub(super) fn data_version(s: &mut Session) -> PgResult<i64> {
    Ok(
        s.query_one("SELECT COALESCE(max(seq), 0) FROM changes", &[])?
            .get(0),
    )
}

/// The largest `seq` of the docs' stream.
pub(super) fn docs_version(s: &mut Session) -> PgResult<String> {
    let seq: i64 = s
        .query_one(
            "SELECT COALESCE(max(seq), 0) FROM changes WHERE stream = 'docs'",
            &[],
        )?
        .get(0);
    Ok(seq.to_string())
}

/// The largest `seq` of the embeddings' stream.
pub(super) fn embedding_changes(s: &mut Session) -> PgResult<Option<i64>> {
    Ok(Some(
        s.query_one(
            "SELECT COALESCE(max(seq), 0) FROM changes WHERE stream = 'embeddings'",
            &[],
        )?
        .get(0),
    ))
}

/// The store's identity and the largest `seq`s of the embeddings' and memory tags' streams,
/// in one statement.
pub(super) fn vectors_state(s: &mut Session) -> PgResult<Option<VectorsState>> {
    let r = s.query_one(
        "SELECT (SELECT value FROM settings WHERE key = 'store_id'),
                (SELECT COALESCE(max(seq), 0) FROM changes WHERE stream = 'embeddings'),
                (SELECT COALESCE(max(seq), 0) FROM changes WHERE stream = 'memory_tags')",
        &[],
    )?;
    Ok(r.get::<_, Option<String>>(0).map(|store_id| VectorsState {
        store_id,
        embeddings_changes: r.get(1),
        memory_tags_changes: r.get(2),
    }))
}

/// The docs whose rows or tags changed after `since`, as they are now: the change log's
/// `embeddings` stream (keyed by doc) and `memory_tags` stream (keyed by memory id) keep each
/// key's latest change (migration 0004), so any state of this store is covered. The rows are
/// read with no upper bound: a key changed before `to` and again since has only its later row
/// left, and is read now rather than missed; what changed after `to` is read again next time.
pub(super) fn vector_changes(
    s: &mut Session,
    since: &VectorsState,
    model: &str,
    revision: &str,
    limit: usize,
) -> PgResult<Option<VectorChanges>> {
    let Some(to) = vectors_state(s)? else {
        return Ok(None);
    };
    let covered = to.store_id == since.store_id
        && since.embeddings_changes <= to.embeddings_changes
        && since.memory_tags_changes <= to.memory_tags_changes;
    if !covered {
        return Ok(None);
    }
    let found = s.query(
        "WITH c AS (SELECT DISTINCT CASE stream WHEN 'memory_tags' THEN 'memory:' || key
                                              ELSE key END AS key
                    FROM changes
                    WHERE (stream = 'embeddings' AND seq > $1)
                       OR (stream = 'memory_tags' AND seq > $2))
         SELECT c.key, d.doc_kind, e.model_revision = $4, e.vector,
                CASE WHEN c.key LIKE 'memory:%' THEN
                    ARRAY(SELECT entity FROM memory_entities
                          WHERE memory_id = substr(c.key, 8) ORDER BY entity)
                END
         FROM c
         LEFT JOIN docs d ON d.canonical_id = c.key
         LEFT JOIN embeddings e ON e.canonical_id = c.key AND e.model_name = $3
             AND d.canonical_id IS NOT NULL
         ORDER BY c.key LIMIT $5",
        &[
            &since.embeddings_changes,
            &since.memory_tags_changes,
            &model,
            &revision,
            &(limit as i64 + 1),
        ],
    )?;
    if found.len() > limit {
        return Ok(None);
    }
    let rows = found
        .iter()
        .map(|r| {
            let kind: Option<String> = r.get(1);
            let current: Option<bool> = r.get(2);
            let (live, stale) = match (kind, current) {
                (Some(kind), Some(true)) => (Some((kind, r.get::<_, Vec<u8>>(3))), false),
                (_, Some(false)) => (None, true),
                _ => (None, false),
            };
            ChangedRow {
                canonical_id: r.get(0),
                live,
                stale,
                tags: r.get::<_, Option<Vec<String>>>(4).unwrap_or_default(),
            }
        })
        .collect();
    Ok(Some(VectorChanges { to, rows }))
}

/// The docs changed after `since` (a [`docs_version`]; anything else counts as 0, every change
/// ever): those that exist in rebuild order, those that are gone sorted. One statement, so
/// both halves read one state.
pub(super) fn docs_changed_since(s: &mut Session, since: &str) -> PgResult<IndexLag> {
    let since: i64 = since.trim().parse().unwrap_or(0);
    let rows = s.query(
        concat!(
            "SELECT c.key, ",
            doc_columns!(),
            " FROM (SELECT DISTINCT key FROM changes WHERE stream = 'docs' AND seq > $1) c
             LEFT JOIN docs ON canonical_id = c.key",
            rebuild_order!()
        ),
        &[&since],
    )?;
    let mut lag = IndexLag::default();
    for r in &rows {
        if r.get::<_, Option<&str>>(1).is_some() {
            lag.upserts.push(from_row(r, 1));
        } else {
            lag.deletes.push(r.get(0));
        }
    }
    lag.deletes.sort();
    Ok(lag)
}
