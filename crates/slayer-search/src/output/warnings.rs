//! The response's warnings (de-duplicated, in emission order) and the last stage, which
//! warns about example queries whose attached query no longer resolves.

use slayer_common::canonical::memory_id_of;
use slayer_memory::extract::query_entities;
use slayer_memory::resolve::ResolveError;

use crate::corpus::{Corpus, Scope};
use crate::SearchError;

/// Warnings, each kept once, in the order first emitted.
#[derive(Debug, Default)]
pub(crate) struct Warnings(Vec<String>);

impl Warnings {
    /// Adds a warning unless it is already there.
    pub(crate) fn push(&mut self, warning: String) {
        if !self.0.contains(&warning) {
            self.0.push(warning);
        }
    }

    /// The warnings, in order.
    pub(crate) fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// The memories whose attached query is checked: the returned example queries, then the named
/// `memory:` inputs the datasource filter keeps.
pub(crate) fn stale_query_candidates(
    returned: impl IntoIterator<Item = String>,
    inputs: &[String],
    scope: &Scope<'_, '_>,
) -> Result<Vec<String>, SearchError> {
    let mut ids: Vec<String> = returned.into_iter().collect();
    for id in inputs.iter().filter_map(|i| memory_id_of(i)) {
        if scope.memory(id)?.is_some() && !ids.iter().any(|s| s == id) {
            ids.push(id.to_owned());
        }
    }
    Ok(ids)
}

/// One warning per memory whose attached query has references that no longer resolve.
pub(crate) fn warn_stale_queries(
    corpus: &Corpus<'_>,
    ids: &[String],
    warnings: &mut Warnings,
) -> Result<(), SearchError> {
    for id in ids {
        let Some(m) = corpus.conn().memory(id)? else {
            continue;
        };
        let Some(q) = &m.query else { continue };
        match query_entities(q, corpus.catalog()?, corpus) {
            Ok(_) => {}
            Err(ResolveError::Invalid(e)) => warnings.push(format!("example_query memory:{id}: attached query has stale references ({e}); re-save to clean.")),
            Err(e) => return Err(SearchError::Memory(e.into())),
        }
    }
    Ok(())
}
