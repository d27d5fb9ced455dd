//! What routing (`crate::routing`, docs/spec/fusion.md §8.7) saw and did, as `--explain`
//! shows it: a part of the response, so routing reads the response's entities and the
//! response holds this without either module importing the other.

use serde::Serialize;

/// What routing saw and did (`--explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutingExplain {
    /// Each datasource's evidence, largest first (at most three).
    pub datasources: Vec<DatasourceEvidence>,
    /// The datasource the entities were searched under, if one led clearly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed: Option<String>,
    /// Otherwise the two datasources with the most evidence, each searched on its own and
    /// their entities merged by score (empty when fewer than two have any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<String>,
    /// Why, in words.
    pub why: String,
}

impl RoutingExplain {
    /// The weight of each split datasource's scores: its evidence over the first's (a routed
    /// answer's one list weighs 1).
    pub(crate) fn split_weights(&self) -> Vec<f64> {
        if self.split.is_empty() {
            return vec![1.0];
        }
        let mass = |name: &str| {
            self.datasources
                .iter()
                .find(|d| d.name == name)
                .map_or(0.0, |d| d.mass)
        };
        let first = self.split.first().map_or(0.0, |n| mass(n));
        self.split
            .iter()
            .map(|n| if first > 0.0 { mass(n) / first } else { 1.0 })
            .collect()
    }
}

/// One datasource's evidence: the summed scores of its entities among the first ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasourceEvidence {
    /// The datasource.
    pub name: String,
    /// Its mass.
    pub mass: f64,
}
