//! Bridges of the schema answer (docs/spec/search.md §9.13): link tables that join two chosen
//! models the question's ranking left unjoined.

use rustc_hash::FxHashSet;
use slayer_common::canonical::{datasource_of, memory_id_of};
use slayer_common::records::skeleton::Model;
use slayer_memory::resolve::Catalog;

use crate::fusion::fuse::Fused;
use crate::fusion::model_evidence::is_model;
use crate::joins::{visible_model, JoinPair, Joins};
use slayer_common::canonical::model_of;

/// At most this many bridges join an answer's models.
const BRIDGES: usize = 2;

/// At most this many models are tried as a bridge (the fused order's first, then the
/// catalog's), so that a datasource of thousands of models stays cheap.
const BRIDGE_CANDIDATES: usize = 200;

/// Bridges: models not chosen that join two chosen models of their datasource that do not
/// join each other (a link table the question never names: `hero_power` between `superhero`
/// and `superpower`), best placed first, each with its join pairs to the chosen models it
/// joins.
pub(super) fn bridges(
    ordered: &[Fused],
    catalog: &Catalog,
    joins: &Joins<'_>,
    models: &[(String, f64)],
    mut unjoined: Vec<(usize, usize)>,
) -> Vec<(String, Vec<JoinPair>)> {
    let mut found: Vec<(String, Vec<JoinPair>)> = Vec::new();
    if unjoined.is_empty() {
        return found;
    }
    let chosen = |id: &str| models.iter().any(|(m, _)| m == id);
    let mut candidates: Vec<String> = Vec::new();
    let placed = ordered
        .iter()
        .filter_map(|f| model_part(&f.key))
        .map(|(m, _)| m.to_owned());
    let datasources: FxHashSet<&str> = unjoined
        .iter()
        .filter_map(|(i, _)| datasource_of(&models[*i].0))
        .collect();
    let catalogued = catalog
        .models
        .iter()
        .filter(|m| !m.hidden && datasources.contains(m.data_source.as_str()))
        .map(Model::canonical_id);
    for id in placed.chain(catalogued) {
        if candidates.len() >= BRIDGE_CANDIDATES {
            break;
        }
        if !chosen(&id) && !candidates.contains(&id) && visible_model(catalog, &id).is_some() {
            candidates.push(id);
        }
    }
    for candidate in candidates {
        if found.len() >= BRIDGES || unjoined.is_empty() {
            break;
        }
        // The candidate's pairs with each chosen model, read once.
        let mut with: rustc_hash::FxHashMap<usize, Vec<JoinPair>> = Default::default();
        let mut joins_to = |m: usize| {
            !with
                .entry(m)
                .or_insert_with(|| joins.pairs(&candidate, &models[m].0))
                .is_empty()
        };
        let mut linked: Vec<usize> = Vec::new();
        unjoined.retain(|&(a, b)| {
            let bridged = same_datasource(&candidate, &models[a].0) && joins_to(a) && joins_to(b);
            if bridged {
                for m in [a, b] {
                    if !linked.contains(&m) {
                        linked.push(m);
                    }
                }
            }
            !bridged
        });
        if !linked.is_empty() {
            let pairs = linked
                .iter()
                .flat_map(|m| with.remove(m).unwrap_or_default())
                .collect();
            found.push((candidate, pairs));
        }
    }
    found
}

/// The model of an entity id (`ds.model` or `ds.model.leaf`), and whether the id is the
/// model's own.
pub(super) fn model_part(key: &str) -> Option<(&str, bool)> {
    if is_model(key) {
        return Some((key, true));
    }
    model_of(key)
        .filter(|_| memory_id_of(key).is_none())
        .map(|m| (m, false))
}

/// Whether two ids lie in one datasource.
pub(super) fn same_datasource(a: &str, b: &str) -> bool {
    datasource_of(a) == datasource_of(b)
}
