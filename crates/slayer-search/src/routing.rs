//! Routing a question across datasources (docs/spec/fusion.md §8.7): a store holding many
//! databases, asked without `--datasource`. The unfiltered answer's first entities are evidence of
//! which datasource the question is about; when one clearly leads, the entities are those of the
//! search filtered to it (its own BM25 statistics, no other database's tables in the way),
//! else they stay those of every datasource.

use std::collections::BTreeSet;

use crate::output::response::EntityHit;
pub use crate::output::routing_explain::{DatasourceEvidence, RoutingExplain};
use crate::tuning::Routing;

/// The datasource an entity id lies under: the longest known name that is the id or a prefix
/// of it ending at a `.` (a datasource name may hold dots).
fn datasource_of<'d>(id: &str, known: &'d BTreeSet<String>) -> Option<&'d str> {
    let mut found = None;
    let ends = id
        .match_indices('.')
        .map(|(at, _)| at)
        .chain(std::iter::once(id.len()));
    for end in ends {
        if let Some(name) = known.get(&id[..end]) {
            found = Some(name.as_str());
        }
    }
    found
}

/// Decides from an unfiltered answer's entities: the first datasource routes when its mass
/// over the first `routing.entities` entities is at least `routing.ratio` times the second's
/// (or no other datasource has any).
pub(crate) fn decide(
    entities: &[EntityHit],
    known: &BTreeSet<String>,
    routing: &Routing,
) -> RoutingExplain {
    let mut masses: Vec<DatasourceEvidence> = Vec::new();
    for hit in entities.iter().take(routing.entities) {
        let Some(name) = datasource_of(&hit.id, known) else {
            continue;
        };
        match masses.iter_mut().find(|m| m.name == name) {
            Some(m) => m.mass += hit.score.max(0.0),
            None => masses.push(DatasourceEvidence {
                name: name.to_owned(),
                mass: hit.score.max(0.0),
            }),
        }
    }
    // A stable sort: equal masses keep the order of first appearance.
    masses.sort_by(|a, b| b.mass.total_cmp(&a.mass));
    masses.truncate(3);
    let (routed, split, why) = match masses.as_slice() {
        [] => (
            None,
            Vec::new(),
            "no entity of a known datasource among the first ones".to_owned(),
        ),
        [only] if only.mass > 0.0 => (
            Some(only.name.clone()),
            Vec::new(),
            format!(
                "only {} has entities among the first {}",
                only.name, routing.entities
            ),
        ),
        [first, second, ..] if first.mass > 0.0 && first.mass >= routing.ratio * second.mass => (
            Some(first.name.clone()),
            Vec::new(),
            format!(
                "{} has {:.1}× the evidence of {} (at least {} routes)",
                first.name,
                first.mass / second.mass.max(f64::MIN_POSITIVE),
                second.name,
                routing.ratio
            ),
        ),
        [first, second, ..] if second.mass > 0.0 => (
            None,
            vec![first.name.clone(), second.name.clone()],
            format!(
                "no datasource has {}× the evidence of the next: answered under {} and {}, \
                 merged by score",
                routing.ratio, first.name, second.name
            ),
        ),
        _ => (
            None,
            Vec::new(),
            format!(
                "no datasource has {}× the evidence of the next: answered across datasources",
                routing.ratio
            ),
        ),
    };
    RoutingExplain {
        datasources: masses,
        routed,
        split,
        why,
    }
}

/// The entities of searches under several datasources as one list, each list's scores
/// weighed by its datasource's share of the evidence (`weights`, the first's 1): by weighed
/// score, highest first (a stable sort: the first search's entity first on a tie), each id
/// once. The scores returned are the searches' own; one list is returned as it is (its order
/// is its search's, which model evidence may have set apart from the scores).
pub(crate) fn merge_by_score(lists: Vec<Vec<EntityHit>>, weights: &[f64]) -> Vec<EntityHit> {
    if lists.len() == 1 {
        return lists.into_iter().flatten().collect();
    }
    let mut merged: Vec<(f64, EntityHit)> = lists
        .into_iter()
        .zip(weights)
        .flat_map(|(list, w)| list.into_iter().map(move |h| (h.score * w, h)))
        .collect();
    merged.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut merged: Vec<EntityHit> = merged.into_iter().map(|(_, h)| h).collect();
    let mut seen = std::collections::HashSet::new();
    merged.retain(|h| seen.insert(h.id.clone()));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, score: f64) -> EntityHit {
        EntityHit {
            id: id.into(),
            kind: "model".into(),
            score,
            text: String::new(),
            explain: None,
        }
    }

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn a_clear_lead_routes_and_a_close_one_does_not() {
        let routing = Routing::default();
        let names = known(&["shop", "hr", "a.b"]);
        let clear = [
            hit("shop.orders", 0.05),
            hit("shop.orders.amount", 0.02),
            hit("hr.staff", 0.02),
            hit("shop", 0.01),
        ];
        let r = decide(&clear, &names, &routing);
        assert_eq!(r.routed.as_deref(), Some("shop"));
        assert_eq!(r.datasources[0].name, "shop");
        assert!((r.datasources[0].mass - 0.08).abs() < 1e-12);
        let close = [hit("shop.orders", 0.05), hit("hr.staff", 0.04)];
        let r = decide(&close, &names, &routing);
        assert_eq!(r.routed, None);
        assert_eq!(r.split, ["shop", "hr"]);
        assert!(r.why.contains("answered under shop and hr"), "{}", r.why);
        let weights = r.split_weights();
        assert!(
            weights[0] == 1.0 && (weights[1] - 0.8).abs() < 1e-12,
            "{weights:?}"
        );
        // One datasource with evidence and another with none: routed; nothing: neither.
        let lone = [hit("shop.orders", 0.05), hit("hr.staff", 0.0)];
        let r = decide(&lone, &names, &routing);
        assert_eq!((r.routed.as_deref(), r.split.len()), (Some("shop"), 0));
        // A dotted datasource name; an id of no known datasource; only the first entities.
        let dotted = [hit("a.b.m", 0.03), hit("zz.m", 0.5)];
        assert_eq!(
            decide(&dotted, &names, &routing).routed.as_deref(),
            Some("a.b")
        );
        let mut late: Vec<_> = (0..routing.entities)
            .map(|i| hit(&format!("hr.t{i}"), 0.1))
            .collect();
        late.push(hit("shop.x", 5.0));
        assert_eq!(
            decide(&late, &names, &routing).routed.as_deref(),
            Some("hr")
        );
        let none = decide(&[], &names, &routing);
        assert_eq!((none.routed, none.split.len()), (None, 0));
        assert!(none.why.contains("no entity"), "{}", none.why);
    }

    #[test]
    fn split_answers_merge_by_weighed_score_each_id_once() {
        let shop = vec![hit("shop.orders", 0.05), hit("shop.orders.amount", 0.03)];
        let hr = vec![
            hit("hr.staff", 0.06),
            hit("hr.pay", 0.035),
            hit("shop.orders", 0.01),
        ];
        let merged = merge_by_score(vec![shop, hr], &[1.0, 0.5]);
        let ids: Vec<&str> = merged.iter().map(|h| h.id.as_str()).collect();
        // hr weighs half: staff 0.03 falls behind amount 0.03 (a tie keeps shop first).
        assert_eq!(
            ids,
            ["shop.orders", "shop.orders.amount", "hr.staff", "hr.pay"]
        );
        assert_eq!(merged[2].score, 0.06, "the search's own score is reported");
    }
}
