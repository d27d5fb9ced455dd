//! Canonical entity resolution against the catalog (docs/spec/resolution.md §3): the rules and
//! messages of the Python original, so an agent that learned its errors reads the same ones here.

use std::collections::BTreeSet;

use slayer_common::canonical::{check_memory_id, MEMORY_PREFIX};
use slayer_common::records::skeleton::Model;

use crate::aggref::{split_agg_ref, AggRef};

/// What the resolver needs to know about the store.
pub trait Lookup {
    /// Whether a memory with this id exists; `Err` when the store could not say.
    fn memory_exists(&self, id: &str) -> Result<bool, slayer_common::store::StoreError>;
}

/// Why a reference did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The reference names nothing, or names it ambiguously: the original's message.
    #[error("{0}")]
    Invalid(String),
    /// The store failed while answering a lookup: not a verdict on the reference.
    #[error("store error while resolving: {0}")]
    Lookup(String),
}

impl From<String> for ResolveError {
    fn from(message: String) -> Self {
        ResolveError::Invalid(message)
    }
}

/// The catalog as the resolver sees it: datasource names and every model.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    /// Known datasources, sorted.
    pub datasources: BTreeSet<String>,
    /// Every model, sorted by datasource then name (byte order, as the store returns them):
    /// lookups binary-search it.
    pub models: Vec<Model>,
}

/// Canonical forms plus non-fatal warnings.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// Canonical ids (usually one).
    pub canonical_forms: Vec<String>,
    /// Warnings (a name that is both a datasource and a model, …).
    pub warnings: Vec<String>,
}

impl Resolution {
    fn one(id: String) -> Resolution {
        Resolution {
            canonical_forms: vec![id],
            warnings: vec![],
        }
    }
}

/// The verdict on a reference that names nothing (or names it ambiguously).
fn invalid(message: String) -> ResolveError {
    ResolveError::Invalid(message)
}

fn is_leaf(model: &Model, name: &str) -> bool {
    model.columns.iter().any(|c| c.name == name)
        || model
            .measures
            .iter()
            .any(|m| m.name.as_deref() == Some(name))
        || model.aggregations.iter().any(|a| a.name == name)
}

fn py_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// A path segment is any name `slayer-index load` accepts (quotes, spaces, `/`, any script): the
/// Python original's `^[a-zA-Z_][\w-]*$` would make real columns such as `charter school (y/n)`
/// unreachable.
fn valid_segment(s: &str) -> bool {
    slayer_common::canonical::check_entity_name("segment", s).is_ok()
}

impl Catalog {
    /// The model `name` of datasource `ds`: a binary search, `models` being sorted by
    /// (datasource, name) as the store returns them, so search can ask per tag.
    pub fn model_in(&self, ds: &str, name: &str) -> Option<&Model> {
        self.models
            .binary_search_by(|m| (m.data_source.as_str(), m.name.as_str()).cmp(&(ds, name)))
            .ok()
            .map(|i| &self.models[i])
    }

    /// The one model of this name across datasources; several → the original's ambiguity error.
    /// The one model of this name in any datasource; an error names the datasources when there
    /// are several.
    pub(crate) fn model_named(&self, name: &str) -> Result<Option<&Model>, ResolveError> {
        let found: Vec<&Model> = self.models.iter().filter(|m| m.name == name).collect();
        match found.len() {
            0 => Ok(None),
            1 => Ok(Some(found[0])),
            _ => {
                let dss: Vec<String> = found.iter().map(|m| m.data_source.clone()).collect();
                Err(invalid(format!(
                    "Model '{name}' exists in multiple datasources: {}. Specify a data_source or set a datasource priority to disambiguate.",
                    py_list(&dss)
                )))
            }
        }
    }

    /// Whether a canonical id (not `memory:`) names a datasource, model or leaf of the catalog.
    /// Allocation-free: search asks it for every tag it counts.
    pub fn contains(&self, canonical: &str) -> bool {
        let mut parts = canonical.split('.');
        let ds = parts.next().unwrap_or_default();
        match (parts.next(), parts.next(), parts.next()) {
            (None, _, _) => self.datasources.contains(ds),
            (Some(m), None, _) => self.model_in(ds, m).is_some(),
            (Some(m), Some(leaf), None) => self.model_in(ds, m).is_some_and(|x| is_leaf(x, leaf)),
            _ => false,
        }
    }

    /// Resolves one reference (docs/spec/resolution.md §3.1). `source_model` is the query's model,
    /// if any.
    pub fn resolve(
        &self,
        raw: &str,
        source_model: Option<&Model>,
        lookup: &dyn Lookup,
    ) -> Result<Resolution, ResolveError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err("entity reference is empty".to_owned().into());
        }
        if let Some(id) = text.strip_prefix(MEMORY_PREFIX) {
            check_memory_id(id).map_err(|e| ResolveError::Invalid(e.to_string()))?;
            if !lookup
                .memory_exists(id)
                .map_err(|e| ResolveError::Lookup(e.to_string()))?
            {
                return Err(format!("No memory with id '{id}'.").into());
            }
            return Ok(Resolution::one(text.to_owned()));
        }
        self.resolve_entity(text, source_model)
    }

    /// Resolves a reference to a datasource, model or leaf (not a memory).
    fn resolve_entity(
        &self,
        text: &str,
        source_model: Option<&Model>,
    ) -> Result<Resolution, ResolveError> {
        let AggRef { prefix, agg } = match split_agg_ref(text) {
            Ok(parts) => parts,
            // `sum(amount - quantity)` is an expression, unless a view named a column that way.
            Err(not_one) => {
                return self
                    .resolve_plain(text, text, source_model)
                    .map_err(|_| invalid(not_one.to_string()))
            }
        };
        let is_count = agg.as_deref() == Some("count");
        if prefix == "*" {
            if !is_count {
                return Err(invalid(format!("'{text}' is not a valid entity reference; use 'count(*)' to refer to a model's row count.")));
            }
            let Some(src) = source_model else {
                return Err(invalid("'count(*)' requires a model context: write 'count(<model>.*)' or invoke from a query that has a source_model.".to_owned()));
            };
            return Ok(Resolution::one(src.canonical_id()));
        }
        if let Some(model_ref) = prefix.strip_suffix(".*") {
            if !is_count {
                return Err(invalid(format!(
                    "'{text}' is not a valid entity reference; use the 'count(<model>.*)' form."
                )));
            }
            return self.resolve_entity(model_ref, source_model);
        }
        self.resolve_plain(&prefix, text, source_model)
    }

    /// Resolves a dotted path of names (no aggregation, no wildcard); `text` is the whole
    /// reference, for messages.
    fn resolve_plain(
        &self,
        prefix: &str,
        text: &str,
        source_model: Option<&Model>,
    ) -> Result<Resolution, ResolveError> {
        let segments: Vec<&str> = prefix.split('.').collect();
        if !segments.iter().all(|s| valid_segment(s)) {
            return Err(invalid(format!(
                "'{text}' contains an invalid identifier segment."
            )));
        }
        let head = segments[0];
        if self.datasources.contains(head) {
            let mut warnings = Vec::new();
            if self.models.iter().any(|m| m.name == head) {
                warnings.push(format!(
                    "'{head}' is both a datasource and a model; interpreted as datasource. To force the model interpretation, qualify as <other_ds>.{head}..."
                ));
            }
            let mut res = match &segments[1..] {
                [] => Resolution::one(head.to_owned()),
                [model_name, rest @ ..] => {
                    let Some(model) = self.model_in(head, model_name) else {
                        return Err(invalid(format!(
                            "No model '{model_name}' in datasource '{head}'."
                        )));
                    };
                    Resolution::one(self.walk(model, rest, text)?)
                }
            };
            res.warnings.splice(0..0, warnings);
            return Ok(res);
        }
        if segments.len() == 1 {
            return self.resolve_bare(head, source_model);
        }
        let Some(model) = self.model_named(head)? else {
            return Err(invalid(format!(
                "'{head}' is neither a known datasource nor a saved model. (segment of '{text}')."
            )));
        };
        Ok(Resolution::one(self.walk(model, &segments[1..], text)?))
    }

    fn resolve_bare(
        &self,
        name: &str,
        source_model: Option<&Model>,
    ) -> Result<Resolution, ResolveError> {
        if let Some(src) = source_model {
            if is_leaf(src, name) {
                return Ok(Resolution::one(format!("{}.{name}", src.canonical_id())));
            }
        }
        if let Some(model) = self.model_named(name)? {
            let mut res = Resolution::one(model.canonical_id());
            let owners: Vec<String> = self
                .models
                .iter()
                .filter(|m| {
                    m.data_source == model.data_source && m.name != model.name && is_leaf(m, name)
                })
                .map(|m| m.name.clone())
                .collect();
            if !owners.is_empty() {
                res.warnings.push(format!(
                    "'{name}' is both a model and a column on {}; resolved as the model. Qualify as <model>.{name} to refer to the column.",
                    py_list(&owners)
                ));
            }
            return Ok(res);
        }
        for ds in &self.datasources {
            let owners: Vec<&Model> = self
                .models
                .iter()
                .filter(|m| &m.data_source == ds && is_leaf(m, name))
                .collect();
            match owners.len() {
                0 => continue,
                1 => {
                    return Ok(Resolution::one(format!(
                        "{}.{name}",
                        owners[0].canonical_id()
                    )))
                }
                _ => {
                    let mut names: Vec<String> = owners.iter().map(|m| m.name.clone()).collect();
                    names.sort();
                    return Err(invalid(format!(
                        "Ambiguous bare name '{name}' matches columns / measures / aggregations on {} in datasource '{ds}'. Qualify as '<model>.{name}'.",
                        py_list(&names)
                    )));
                }
            }
        }
        Err(invalid(format!(
            "Entity '{name}' not found in any datasource (checked all known datasources)."
        )))
    }

    /// The dotted-path rule (docs/spec/resolution.md §3.7): all but the last segment are join hops
    /// and the last a leaf; failing that, every segment is a hop and the reached model is the
    /// answer.
    fn walk(&self, start: &Model, segments: &[&str], path: &str) -> Result<String, ResolveError> {
        let Some((last, hops)) = segments.split_last() else {
            return Ok(start.canonical_id());
        };
        if let Ok(reached) = self.hop_all(start, hops, path) {
            if is_leaf(reached, last) {
                return Ok(format!("{}.{last}", reached.canonical_id()));
            }
        }
        Ok(self.hop_all(start, segments, path)?.canonical_id())
    }

    fn hop_all<'a>(
        &'a self,
        start: &'a Model,
        hops: &[&str],
        path: &str,
    ) -> Result<&'a Model, ResolveError> {
        let mut visited = vec![start.name.as_str()];
        let mut current = start;
        for token in hops {
            let next = self.hop(current, token, path, &start.name)?;
            if visited.contains(&next.name.as_str()) {
                return Err(invalid(format!(
                    "Circular join detected resolving '{path}' from '{}': hop '{token}' revisits model '{}'.",
                    start.name, next.name
                )));
            }
            visited.push(next.name.as_str());
            current = next;
        }
        Ok(current)
    }

    /// One hop along a join in either direction: an edge's `name` first, else the model at its
    /// other end.
    fn hop<'a>(
        &'a self,
        from: &Model,
        token: &str,
        path: &str,
        root: &str,
    ) -> Result<&'a Model, ResolveError> {
        let ds = &from.data_source;
        // (edge name, model at the other end)
        let mut edges: Vec<(Option<&str>, &str)> = from
            .joins
            .iter()
            .map(|j| (j.name.as_deref(), j.target_model.as_str()))
            .collect();
        for m in self
            .models
            .iter()
            .filter(|m| &m.data_source == ds && m.name != from.name)
        {
            for j in m.joins.iter().filter(|j| j.target_model == from.name) {
                edges.push((j.name.as_deref(), m.name.as_str()));
            }
        }
        let by_name: BTreeSet<&str> = edges
            .iter()
            .filter(|(n, _)| *n == Some(token))
            .map(|(_, m)| *m)
            .collect();
        let candidates = if by_name.is_empty() {
            edges
                .iter()
                .filter(|(_, m)| *m == token)
                .map(|(_, m)| *m)
                .collect()
        } else {
            by_name
        };
        let not_a_target = || {
            invalid(format!(
                "'{token}' is not a join target on model '{}'.",
                from.name
            ))
        };
        match candidates.len() {
            0 => Err(not_a_target()),
            1 => {
                let target = candidates.into_iter().next().unwrap_or_default();
                self.model_in(ds, target).ok_or_else(not_a_target)
            }
            _ => Err(invalid(format!(
                "Ambiguous join path resolving '{path}' from '{root}': hop '{token}' matches joins to {} on model '{}'.",
                py_list(&candidates.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
                from.name
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoMemories;
    impl Lookup for NoMemories {
        fn memory_exists(&self, _: &str) -> Result<bool, slayer_common::store::StoreError> {
            Ok(false)
        }
    }

    #[test]
    fn random_references_never_panic() {
        // Sorted by (datasource, name), as the store returns them.
        let models: Vec<Model> = serde_json::from_value(serde_json::json!([
            {"name": "customers", "data_source": "db", "columns": [{"name": "id"}],
             "joins": [{"target_model": "orders", "name": "buyer", "join_pairs": [["id", "c"]]}]},
            {"name": "orders", "data_source": "db", "columns": [{"name": "amount"}, {"name": "a (b)"}],
             "joins": [{"target_model": "customers", "name": "buyer", "join_pairs": [["c", "id"]]}]}
        ]))
        .unwrap();
        let catalog = Catalog {
            datasources: ["db".to_owned()].into_iter().collect(),
            models,
        };
        let pieces = [
            "db",
            "orders",
            "customers",
            "buyer",
            "amount",
            "a (b)",
            ".",
            ":",
            "(",
            ")",
            "*",
            ",",
            "'",
            "\"",
            " ",
            "sum",
            "count",
            "memory:",
            "=",
            "é",
            "\n",
            "\u{0}",
            "..",
            "*:",
        ];
        let mut state = 99u64;
        for _ in 0..20_000 {
            let mut raw = String::new();
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            for k in 0..(state >> 60) {
                let pick = ((state >> (k * 5 % 55)) as usize) % pieces.len();
                raw.push_str(pieces[pick]);
            }
            // Any verdict is fine; a panic or a hang is not.
            let _ = catalog.resolve(&raw, catalog.models.first(), &NoMemories);
            let _ = crate::aggref::split_args(&raw);
        }
    }

    #[test]
    fn an_empty_reference_is_named() {
        let c = Catalog::default();
        assert_eq!(
            c.resolve("  ", None, &NoMemories),
            Err(ResolveError::Invalid(
                "entity reference is empty".to_owned()
            ))
        );
        assert_eq!(
            c.resolve("memory:", None, &NoMemories),
            Err(ResolveError::Invalid(
                "memory id must be non-empty.".to_owned()
            ))
        );
    }
}
