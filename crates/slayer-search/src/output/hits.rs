//! The hit builder: a picked memory or entity becomes a response hit. The only place texts
//! and queries are read, so they are read for returned hits only.

use std::collections::HashMap;

use serde_json::Value;
use slayer_common::store::rows::StoredDoc;
use slayer_common::store::StoreRead;

use crate::corpus::MemoryMeta;
use crate::fusion::fuse::{Contribution, Fused};
use crate::output::response::{EntityHit, ExampleQueryHit, MemoryHit, Response};
use crate::SearchError;

/// The doc texts of these docs (memories' `memory:<id>` refs), by id, in one read.
pub(crate) fn texts<'r>(
    conn: &dyn StoreRead,
    ids: impl IntoIterator<Item = &'r str>,
) -> Result<HashMap<String, String>, SearchError> {
    let ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
    Ok(conn
        .docs(&ids)?
        .into_iter()
        .map(|d| (d.doc.canonical_id, d.doc.text))
        .collect())
}

/// Adds a memory's hit to the bucket its query flag names, with its doc text (from `texts`,
/// read by [`texts`]) and (query-bearing) its attached query. A memory whose doc is gone
/// (forgotten since the ranking was read) is skipped, never returned with an empty text.
pub(crate) fn push_memory(
    conn: &dyn StoreRead,
    texts: &mut HashMap<String, String>,
    response: &mut Response,
    m: &MemoryMeta,
    score: f64,
    matched_entities: Vec<String>,
    explain: Option<Vec<Contribution>>,
) -> Result<(), SearchError> {
    let Some(text) = texts.remove(&m.self_ref) else {
        return Ok(());
    };
    if m.has_query {
        let query = conn
            .memory(&m.id)?
            .and_then(|mm| mm.query)
            .unwrap_or(Value::Null);
        response.example_queries.push(ExampleQueryHit {
            id: m.id.clone(),
            tier: m.standing.tier,
            score,
            text,
            matched_entities,
            query,
            explain,
        });
    } else {
        response.memories.push(MemoryHit {
            id: m.id.clone(),
            tier: m.standing.tier,
            score,
            text,
            matched_entities,
            event_time: None,
            session: None,
            superseded_by: None,
            explain,
        });
    }
    Ok(())
}

/// Fills each memory hit's event time and session from the store, in one read.
pub(crate) fn add_occasions(
    conn: &dyn StoreRead,
    memories: &mut [MemoryHit],
) -> Result<(), SearchError> {
    if memories.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = memories.iter().map(|m| m.id.clone()).collect();
    let mut found: HashMap<String, _> = conn.memory_occasions(&ids)?.into_iter().collect();
    for hit in memories {
        if let Some(o) = found.remove(&hit.id) {
            hit.event_time = o.event_time;
            hit.session = o.session;
        }
    }
    Ok(())
}

/// Each entity's hit, in order, or `None` where its doc is gone; the docs in one read.
pub(crate) fn entities(
    conn: &dyn StoreRead,
    fused: &[Fused],
    explain: bool,
) -> Result<Vec<Option<EntityHit>>, SearchError> {
    let keys: Vec<String> = fused.iter().map(|f| f.key.clone()).collect();
    let mut docs: HashMap<String, StoredDoc> = conn
        .docs(&keys)?
        .into_iter()
        .map(|d| (d.doc.canonical_id.clone(), d))
        .collect();
    Ok(fused
        .iter()
        .map(|f| {
            docs.remove(&f.key).map(|stored| EntityHit {
                id: f.key.clone(),
                kind: stored.doc.doc_kind,
                score: f.score,
                text: stored.doc.text,
                explain: explain.then(|| f.contributions.clone()),
            })
        })
        .collect())
}

/// Marks each memory hit that a newer one supersedes (docs/spec/search.md §9.14).
pub(crate) fn mark_superseded(memories: &mut [MemoryHit], superseded: &HashMap<String, String>) {
    for hit in memories {
        hit.superseded_by = superseded.get(&hit.id).cloned();
    }
}
