//! Which memories a request may see (docs/spec/search.md §9.11): its tiers, the confidence floor,
//! soft deletes and proposals awaiting review, and its project and agent. The filter applies before ranking, in every
//! channel and in BM25's statistics, exactly as the datasource filter does, so a scoped search
//! cannot return, count or be scored by a memory outside its scope.
//!
//! The rule for owners: a memory without a project belongs to every project, and one without
//! an agent to every agent (of its project). A search without `--project` (`--agent`) is not
//! restricted by project (agent).

use serde::{Deserialize, Serialize};
use slayer_common::records::{Standing, Tier};

/// Entries trusted less than this are skipped unless the request says otherwise
/// (docs/spec/search.md §9.11).
pub(crate) const DEFAULT_CONFIDENCE_FLOOR: f64 = 0.3;

/// What a request may see of the memories.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryFilter {
    /// The tiers searched.
    pub tiers: Vec<Tier>,
    /// Memories with a lower confidence are skipped.
    pub confidence_floor: f64,
    /// Only this project's memories and those of every project.
    pub project: Option<String>,
    /// Only this agent's memories and those of every agent.
    pub agent: Option<String>,
}

impl Default for MemoryFilter {
    fn default() -> Self {
        MemoryFilter {
            tiers: Tier::ALL.to_vec(),
            confidence_floor: DEFAULT_CONFIDENCE_FLOOR,
            project: None,
            agent: None,
        }
    }
}

impl MemoryFilter {
    /// Whether a memory of this standing counts for the request.
    pub fn passes(&self, s: &Standing) -> bool {
        self.owns(s) && self.tiers.contains(&s.tier) && s.confidence >= self.confidence_floor
    }

    /// Whether the request's owner may see the memory at all (not deleted, not awaiting
    /// review, its project, its agent): what `expand_ids` checks, whatever the tier or
    /// confidence.
    pub fn owns(&self, s: &Standing) -> bool {
        let mine = |wanted: &Option<String>, owner: &Option<String>| match (wanted, owner) {
            (Some(w), Some(o)) => w == o,
            _ => true,
        };
        !s.deleted && !s.proposed && mine(&self.project, &s.project) && mine(&self.agent, &s.agent)
    }

    /// Whether a plain lesson (no owner, full trust) passes: then only marked memories can
    /// fail, and the filter is a short exclusion list.
    pub fn passes_plain(&self) -> bool {
        self.passes(&Standing::default())
    }
}

/// The tier-level knobs of the ranking: `[memory_tiers]` in `slayer.toml` (docs/spec/search.md
/// §9.11). Each tier is fused on its own and brings at most `cap` candidates; a candidate's
/// score is its tier's fused score × the tier's weight (× `boost` for a confident entry of a
/// boosted tier) × its strength × its confidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TierConfig {
    /// Candidates per tier before the final merge (seed: 50).
    pub cap: usize,
    /// Weight per tier (a tier left out weighs 1).
    pub weights: std::collections::BTreeMap<Tier, f64>,
    /// The extra factor of a confident entry of a boosted tier.
    pub boost: f64,
    /// Confidence above which a boosted tier's entry gets the boost.
    pub boost_above: f64,
    /// The tiers whose confident entries are boosted (seed: crystals and facts).
    pub boosted: Vec<Tier>,
}

impl Default for TierConfig {
    fn default() -> Self {
        TierConfig {
            cap: 50,
            weights: Tier::ALL.iter().map(|t| (*t, 1.0)).collect(),
            boost: 1.2,
            boost_above: 0.85,
            boosted: vec![Tier::Crystal, Tier::Semantic],
        }
    }
}

impl TierConfig {
    /// The factor a memory's fused score is multiplied by.
    pub fn factor(&self, s: &Standing) -> f64 {
        let weight = self.weights.get(&s.tier).copied().unwrap_or(1.0);
        let boost = if self.boosted.contains(&s.tier) && s.confidence > self.boost_above {
            self.boost
        } else {
            1.0
        };
        weight * boost * s.strength * s.confidence
    }

    /// Every weight and the boost must be a number from 0 to [`crate::tuning::MAX_WEIGHT`],
    /// `boost_above` a confidence (0 to 1), and the cap at least 1. The message is the value:
    /// the sentence naming the setting, which the configuration's error carries.
    pub fn check(&self) -> Result<(), String> {
        if self.cap == 0 {
            return Err("memory_tiers.cap must be at least 1".into());
        }
        let max = crate::tuning::MAX_WEIGHT;
        let numbers = self
            .weights
            .iter()
            .map(|(t, w)| (format!("weights.{t}"), *w, max))
            .chain([
                ("boost".to_owned(), self.boost, max),
                ("boost_above".to_owned(), self.boost_above, 1.0),
            ]);
        for (name, value, max) in numbers {
            if !(0.0..=max).contains(&value) {
                return Err(format!(
                    "memory_tiers.{name} must be a number from 0 to {max}, not {value}"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(project: Option<&str>, agent: Option<&str>) -> Standing {
        Standing {
            project: project.map(str::to_owned),
            agent: agent.map(str::to_owned),
            ..Standing::default()
        }
    }

    #[test]
    fn an_unowned_memory_is_everyone_s_and_an_owned_one_only_its_owner_s() {
        let scoped = MemoryFilter {
            project: Some("p".into()),
            agent: Some("a".into()),
            ..MemoryFilter::default()
        };
        assert!(scoped.passes(&standing(None, None)));
        assert!(scoped.passes(&standing(Some("p"), None)));
        assert!(scoped.passes(&standing(Some("p"), Some("a"))));
        assert!(scoped.passes(&standing(None, Some("a"))));
        assert!(!scoped.passes(&standing(Some("q"), None)));
        assert!(!scoped.passes(&standing(Some("p"), Some("b"))));
        assert!(!scoped.passes(&standing(None, Some("b"))));
        // Unscoped, every owner's memory counts.
        assert!(MemoryFilter::default().passes(&standing(Some("q"), Some("b"))));
    }

    #[test]
    fn the_floor_the_tiers_soft_deletes_and_proposals_filter() {
        let f = MemoryFilter::default();
        let low = Standing {
            confidence: 0.29,
            ..Standing::default()
        };
        assert!(!f.passes(&low));
        assert!(f.passes(&Standing {
            confidence: 0.3,
            ..Standing::default()
        }));
        let deleted = Standing {
            deleted: true,
            ..Standing::default()
        };
        assert!(!f.passes(&deleted) && !f.owns(&deleted));
        // A proposal awaiting review is absent for every request, whoever's it is.
        let proposed = Standing {
            proposed: true,
            ..standing(Some("p"), Some("a"))
        };
        let owner = MemoryFilter {
            project: Some("p".into()),
            agent: Some("a".into()),
            ..MemoryFilter::default()
        };
        assert!(!f.passes(&proposed) && !owner.owns(&proposed) && !owner.passes(&proposed));
        let lessons = MemoryFilter {
            tiers: vec![Tier::Lesson],
            ..MemoryFilter::default()
        };
        let fact = Standing {
            tier: Tier::Semantic,
            ..Standing::default()
        };
        assert!(!lessons.passes(&fact) && lessons.owns(&fact) && lessons.passes_plain());
    }

    #[test]
    fn the_factor_weighs_tier_boost_strength_and_confidence() {
        let c = TierConfig::default();
        let fact = |confidence| Standing {
            tier: Tier::Semantic,
            confidence,
            strength: 0.5,
            ..Standing::default()
        };
        assert!((c.factor(&fact(0.9)) - 1.2 * 0.5 * 0.9).abs() < 1e-12);
        assert!((c.factor(&fact(0.8)) - 0.5 * 0.8).abs() < 1e-12);
        assert_eq!(c.factor(&Standing::default()), 1.0);
        assert!(TierConfig {
            cap: 0,
            ..TierConfig::default()
        }
        .check()
        .is_err());
    }
}
