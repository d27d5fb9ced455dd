//! Stage 2, resolve inputs: `--entity` refs and the query's entities to canonical ids,
//! leniently (a bad input is a warning and the search goes on), and which of them the entity
//! side can rank (the named refs).

use slayer_common::canonical::memory_id_of;
use slayer_index::pyfmt::repr_str as py_repr;
use slayer_memory::extract::query_entities;
use slayer_memory::resolve::{Catalog, Lookup, Resolution, ResolveError};

use crate::corpus::{Corpus, Scope};
use crate::output::warnings::Warnings;
use crate::request::Request;
use crate::scoping::MemoryFilter;
use crate::SearchError;
use slayer_common::limits::Limits;

/// What a request's inputs resolved to.
pub(crate) struct Inputs<'a> {
    /// Canonical ids, de-duplicated in order: the response's `resolved_input_entities`.
    pub canonical: Vec<String>,
    /// The catalog they were resolved against; empty (never parsed) without entities or query.
    pub catalog: &'a Catalog,
    /// The question, unless missing or blank.
    pub question: Option<&'a str>,
    /// Whether entities or a query were given (even if nothing resolved).
    pub has_refs: bool,
}

impl Inputs<'_> {
    /// No entities, no query, no question: the recency fallback answers.
    pub(crate) fn is_empty(&self) -> bool {
        !self.has_refs && self.question.is_none()
    }
}

/// `memory:` references resolve only to memories the request's owner may see: another
/// project's or agent's memory, or a soft-deleted one, does not exist for it (the same message
/// as an id that names nothing, so a search cannot probe for them).
struct OwnedMemories<'c, 'x> {
    corpus: &'c Corpus<'x>,
    filter: &'c MemoryFilter,
}

impl Lookup for OwnedMemories<'_, '_> {
    fn memory_exists(&self, id: &str) -> Result<bool, slayer_common::store::StoreError> {
        self.corpus
            .memory(id)
            .map(|found| found.is_some_and(|m| self.filter.owns(&m.standing)))
    }
}

/// The catalog of a request without entity inputs.
static NO_CATALOG: Catalog = Catalog {
    datasources: std::collections::BTreeSet::new(),
    models: Vec::new(),
};

/// Resolves the entity refs, then the query's entities (warnings in that order); a `memory:`
/// ref resolves only to a memory `filter`'s owner may see; a question over the limit is cut.
pub(crate) fn resolve_inputs<'a>(
    corpus: &'a Corpus<'_>,
    limits: &Limits,
    req: &'a Request,
    filter: &MemoryFilter,
    warnings: &mut Warnings,
) -> Result<Inputs<'a>, SearchError> {
    let owned = OwnedMemories { corpus, filter };
    let lookup: &dyn Lookup = &owned;
    let has_refs = !req.entities.is_empty() || req.query.is_some();
    let catalog = if has_refs {
        corpus.catalog()?
    } else {
        &NO_CATALOG
    };
    let mut canonical: Vec<String> = Vec::new();
    let mut take = |resolved: Result<Resolution, ResolveError>,
                    dropped: &dyn Fn(String) -> String|
     -> Result<(), SearchError> {
        match resolved {
            Ok(r) => {
                for c in r.canonical_forms {
                    if !canonical.contains(&c) {
                        canonical.push(c);
                    }
                }
                r.warnings.into_iter().for_each(|w| warnings.push(w));
            }
            Err(ResolveError::Invalid(e)) => warnings.push(dropped(e)),
            Err(e) => return Err(SearchError::Memory(e.into())),
        }
        Ok(())
    };
    for raw in &req.entities {
        take(catalog.resolve(raw, None, lookup), &|e| {
            format!("entity {} dropped: {e}", py_repr(raw))
        })?;
    }
    if let Some(q) = &req.query {
        take(query_entities(q, catalog, lookup), &|e| {
            format!("query input dropped: {e}")
        })?;
    }
    let max = limits.question_bytes;
    let question = req.question.as_deref().map(|q| {
            let kept = slayer_common::limits::cut(q, max);
            if kept.len() < q.len() {
                warnings.push(format!(
                    "question cut to its first {} bytes of {}; the limit is {max} (limits.question_bytes in slayer.toml).",
                    kept.len(),
                    q.len()
                ));
            }
            kept
        });
    Ok(Inputs {
        canonical,
        catalog,
        question: question.filter(|q| !q.trim().is_empty()),
        has_refs,
    })
}

/// A question that may be an entity's name or dotted path: trimmed, without quotes or a
/// trailing `?`, lowercased; `None` when it has spaces (a sentence, not a name).
pub(crate) fn bare_name(question: &str) -> Option<String> {
    let name = question
        .trim()
        .trim_end_matches('?')
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| name.to_lowercase())
}

/// Named `memory:` inputs that exist but lie outside the datasource: a warning each.
pub(crate) fn warn_off_datasource_memories(
    inputs: &Inputs<'_>,
    scope: &Scope<'_, '_>,
    warnings: &mut Warnings,
) -> Result<(), SearchError> {
    let Some(d) = scope.datasource() else {
        return Ok(());
    };
    for id in inputs.canonical.iter().filter_map(|i| memory_id_of(i)) {
        if scope.memory_outside(id)? {
            warnings.push(format!(
                "memory:{id} is not rooted at datasource '{d}'; dropped."
            ));
        }
    }
    Ok(())
}

/// The entity inputs the entity side ranks first (channel 1's named ranking), in input order.
/// One outside the datasource, on a hidden model or column, or whose doc is gone is dropped
/// with a warning: an input problem, so warned about even with the entities channel off.
pub(crate) fn named_entities(
    inputs: &Inputs<'_>,
    scope: &Scope<'_, '_>,
    warnings: &mut Warnings,
) -> Result<Vec<String>, SearchError> {
    let conn = scope.conn();
    let mut named = Vec::new();
    for input in inputs
        .canonical
        .iter()
        .filter(|i| memory_id_of(i).is_none())
    {
        if let Some(d) = scope.datasource() {
            if !scope.keeps_doc(input)? {
                warnings.push(format!(
                    "entity {} is not rooted at datasource {}; dropped from entities bucket.",
                    py_repr(input),
                    py_repr(d)
                ));
                continue;
            }
        }
        if let Some(what) = hidden(inputs.catalog, input) {
            warnings.push(format!(
                "entity {} is on a hidden {what}; dropped from entities bucket.",
                py_repr(input)
            ));
            continue;
        }
        if conn.doc(input)?.is_none() {
            warnings.push(format!("entity {} resolved but is no longer present in storage; dropped from entities bucket.", py_repr(input)));
            continue;
        }
        named.push(input.clone());
    }
    Ok(named)
}

/// `Some("model")` / `Some("column")` when the entity sits on a hidden model or column.
fn hidden(catalog: &Catalog, canonical: &str) -> Option<&'static str> {
    let parts: Vec<&str> = canonical.split('.').collect();
    if parts.len() < 2 {
        return None;
    }
    let model = catalog.model_in(parts[0], parts[1])?;
    if model.hidden {
        return Some("model");
    }
    if parts.len() == 3 && model.columns.iter().any(|c| c.name == parts[2] && c.hidden) {
        return Some("column");
    }
    None
}
