//! The hit builder: a picked memory or entity becomes a response hit. The only place texts
//! and queries are read, so they are read for returned hits only.

use serde_json::Value;
use slayer_common::store::StoreRead;

use crate::corpus::MemoryMeta;
use crate::fusion::fuse::{Contribution, Fused};
use crate::output::response::{EntityHit, ExampleQueryHit, MemoryHit, Response};
use crate::SearchError;

/// Adds a memory's hit to the bucket its query flag names, with its doc text and (query-
/// bearing) its attached query. A memory whose doc is gone (forgotten since the ranking was
/// read) is skipped, never returned with an empty text.
pub(crate) fn push_memory(
    conn: &dyn StoreRead,
    response: &mut Response,
    m: &MemoryMeta,
    score: f64,
    matched_entities: Vec<String>,
    explain: Option<Vec<Contribution>>,
) -> Result<(), SearchError> {
    let Some(text) = conn.doc(&m.self_ref)?.map(|d| d.doc.text) else {
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
            explain,
        });
    }
    Ok(())
}

/// An entity's hit, or `None` when its doc is gone.
pub(crate) fn entity(
    conn: &dyn StoreRead,
    f: &Fused,
    explain: bool,
) -> Result<Option<EntityHit>, SearchError> {
    Ok(conn.doc(&f.key)?.map(|stored| EntityHit {
        id: f.key.clone(),
        kind: stored.doc.doc_kind,
        score: f.score,
        text: stored.doc.text,
        explain: explain.then(|| f.contributions.clone()),
    }))
}
