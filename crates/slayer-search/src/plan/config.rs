//! The planner's configuration (docs/spec/planner.md §15.7): a `[semantic_search]`
//! table in `slayer.toml` beside the store, or the file `--plan-config` names. Every key has
//! the seed's default; a key the planner does not know is an error, so a typo never silently
//! falls back to a default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::plan::http_rerank::RerankApi;
use crate::plan::terms::Exception;

/// The file, whole: only the planner's table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    semantic_search: PlanConfig,
    #[serde(default)]
    memory_tiers: crate::scoping::TierConfig,
    /// Read (and checked) by [`slayer_common::limits::Limits::load`]; accepted here.
    #[serde(default)]
    #[allow(dead_code)]
    limits: slayer_common::limits::Limits,
}

/// Everything the planner can be told.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanConfig {
    /// Candidates taken from pass A (anchors + phrases) and pass B (synonyms).
    pub budgets: Budgets,
    /// At most this many candidates per side reach the reranker.
    pub max_candidates: usize,
    /// A synonym is kept when its document frequency lies in this band times the anchors'.
    pub df_ratio_band: [f64; 2],
    /// Synonyms kept after gating.
    pub max_synonyms: usize,
    /// Shortest and longest term, in characters (a phrase may be twice the longest).
    pub term_length: [usize; 2],
    /// Generic words that never make a term (English stopwords are always added).
    pub stoplist: Vec<String>,
    /// How far apart a phrase's words may be.
    pub phrase_slop: u32,
    /// Pseudo-relevance feedback, the offline expansion.
    pub prf: Prf,
    /// Hard and soft negatives applied to every planned search.
    pub negatives: NegativesConfig,
    /// How candidates are rescored.
    pub reranker: Reranker,
    /// The file's `[memory_tiers]` table: how memory tiers weigh (docs/spec/search.md §9.11). Not
    /// the planner's, but read from the same file.
    #[serde(skip)]
    pub memory_tiers: crate::scoping::TierConfig,
}

/// Pass budgets (seed: N₁:N₂ = 140:60).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    /// Pass A.
    pub anchors: usize,
    /// Pass B.
    pub synonyms: usize,
    /// Pass D: the dense channel's best docs that the lexical passes missed, taken when the
    /// local reranker runs (it loads the model anyway); 0 turns it off.
    pub dense: usize,
}

/// RM3-style feedback from the top pass-A docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Prf {
    /// Feedback docs read.
    pub docs: usize,
    /// Terms proposed (before gating).
    pub terms: usize,
}

/// The negatives every planned search applies, besides the plan's own.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NegativesConfig {
    /// Regexes on each name or path segment: a match drops the candidate.
    pub hard_patterns: Vec<String>,
    /// Terms that bury a candidate.
    pub soft_terms: Vec<String>,
    /// Phrases that protect a negative's match.
    pub exceptions: Vec<Exception>,
    /// Penalty per distinct soft term matched, before the cap.
    pub soft_penalty_per_term: f64,
    /// The most one candidate is penalised (the blend's `negatives` weight multiplies it).
    pub soft_penalty_cap: f64,
}

/// Which reranker scores the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RerankProvider {
    /// The installed embedding model: the question against each candidate's stored embedding.
    Local,
    /// An HTTP rerank endpoint (Cohere / Jina / TEI shape).
    Http,
    /// No reranker: the merged retrieval order.
    None,
}

/// The reranker and the final blend.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Reranker {
    /// `local`, `http` or `none`.
    pub provider: RerankProvider,
    /// The endpoint for `http` (the full URL, e.g. `http://localhost:8080/rerank`).
    pub url: Option<String>,
    /// The model name sent to the endpoint.
    pub model: Option<String>,
    /// Request shape: `cohere` (also Jina) or `tei`.
    pub api: RerankApi,
    /// The environment variable holding the endpoint's key (never logged).
    pub api_key_env: String,
    /// Seconds per request.
    pub timeout_s: f64,
    /// Retries of a request that failed transiently.
    pub retries: u32,
    /// `final = rerank·normalize(rerank) + anchors·normalize(anchor hits) − negatives·penalty`.
    pub blend: Blend,
}

/// The final blend's weights.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Blend {
    /// The reranker's normalised score.
    pub rerank: f64,
    /// Anchor hits in the candidate's name, path and description, normalised.
    pub anchors: f64,
    /// The soft-negative penalty.
    pub negatives: f64,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            budgets: Budgets::default(),
            max_candidates: 200,
            df_ratio_band: [0.3, 3.0],
            max_synonyms: 12,
            term_length: [2, 24],
            stoplist: [
                "data", "dataset", "table", "report", "field", "column", "business", "team",
            ]
            .map(String::from)
            .to_vec(),
            phrase_slop: 2,
            prf: Prf::default(),
            negatives: NegativesConfig::default(),
            reranker: Reranker::default(),
            memory_tiers: Default::default(),
        }
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            anchors: 140,
            synonyms: 60,
            dense: 60,
        }
    }
}

impl Default for Prf {
    fn default() -> Self {
        Prf {
            docs: 10,
            terms: 10,
        }
    }
}

impl Default for NegativesConfig {
    fn default() -> Self {
        let exception = |negative: &str, allow: &[&str]| Exception {
            negative: negative.to_owned(),
            allow: allow.iter().map(|a| a.to_string()).collect(),
        };
        NegativesConfig {
            hard_patterns: vec![
                "(^|[_-])(tmp|temp|scratch|sandbox|bak|legacy|staging)([_-]|$)".into(),
            ],
            soft_terms: ["dev", "test", "sample"].map(String::from).to_vec(),
            exceptions: vec![
                exception(
                    "test",
                    &[
                        "ab test",
                        "a/b test",
                        "t-test",
                        "hypothesis test",
                        "test_id",
                    ],
                ),
                exception("sample", &["sample size", "sample_rate"]),
            ],
            soft_penalty_per_term: 0.5,
            soft_penalty_cap: 1.0,
        }
    }
}

impl Default for Reranker {
    fn default() -> Self {
        Reranker {
            provider: RerankProvider::Local,
            url: None,
            model: None,
            api: RerankApi::Cohere,
            api_key_env: slayer_common::env::RERANK_API_KEY.into(),
            timeout_s: 10.0,
            retries: 2,
            blend: Blend::default(),
        }
    }
}

impl Default for Blend {
    fn default() -> Self {
        Blend {
            rerank: 0.85,
            anchors: 0.10,
            negatives: 0.05,
        }
    }
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The named file cannot be read.
    #[error("cannot read the planner configuration {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or holds a key or value the planner does not take.
    #[error("bad planner configuration {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the key and line).
        message: String,
    },
}

impl PlanConfig {
    /// The configuration in force: `explicit` (`--plan-config`) when given, it must exist;
    /// otherwise `slayer.toml` beside the store if there is one; otherwise the defaults.
    pub fn load(explicit: Option<&Path>, store: &Path) -> Result<PlanConfig, ConfigError> {
        let path = match explicit {
            Some(p) => p.to_owned(),
            None => {
                let beside = match slayer_common::store::Location::parse(store) {
                    // A store on a server has no folder: its hosts read the one they run in.
                    Ok(slayer_common::store::Location::Server(_)) => PathBuf::from("slayer.toml"),
                    _ => store
                        .parent()
                        .unwrap_or_else(|| Path::new("."))
                        .join("slayer.toml"),
                };
                if !beside.is_file() {
                    return Ok(PlanConfig::default());
                }
                beside
            }
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        PlanConfig::parse(&text).map_err(|message| ConfigError::Invalid { path, message })
    }

    /// Parses a configuration file's text and checks its values. The error is the sentence
    /// naming the setting at fault: the message is the value ([`ConfigError::Invalid`] adds
    /// the file).
    pub fn parse(text: &str) -> Result<PlanConfig, String> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| e.to_string().trim().to_owned())?;
        let mut config = file.semantic_search;
        config.check()?;
        file.memory_tiers.check()?;
        config.memory_tiers = file.memory_tiers;
        Ok(config)
    }

    /// Every value within its range; the message is the value, as for [`PlanConfig::parse`].
    fn check(&self) -> Result<(), String> {
        let [low, high] = self.df_ratio_band;
        if !(low >= 0.0 && high >= low) {
            return Err(format!(
                "semantic_search.df_ratio_band must be [low, high] with 0 <= low <= high, not [{low}, {high}]"
            ));
        }
        let [shortest, longest] = self.term_length;
        if shortest == 0 || longest < shortest {
            return Err(format!(
                "semantic_search.term_length must be [shortest, longest] with 1 <= shortest <= longest, not [{shortest}, {longest}]"
            ));
        }
        for pattern in &self.negatives.hard_patterns {
            regex::Regex::new(pattern).map_err(|e| {
                format!("semantic_search.negatives.hard_patterns: {pattern:?} is not a regex: {e}")
            })?;
        }
        let b = self.reranker.blend;
        for (name, w) in [
            ("rerank", b.rerank),
            ("anchors", b.anchors),
            ("negatives", b.negatives),
        ] {
            if !(w.is_finite() && w >= 0.0) {
                return Err(format!(
                    "semantic_search.reranker.blend.{name} must be a number >= 0"
                ));
            }
        }
        if self.reranker.provider == RerankProvider::Http && self.reranker.url.is_none() {
            return Err(
                "semantic_search.reranker.provider = \"http\" needs semantic_search.reranker.url"
                    .into(),
            );
        }
        if !(self.reranker.timeout_s > 0.0 && self.reranker.timeout_s.is_finite()) {
            return Err(
                "semantic_search.reranker.timeout_s must be a positive number of seconds".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_the_seeds_defaults() {
        let c = PlanConfig::parse("").unwrap();
        assert_eq!(c, PlanConfig::default());
        assert_eq!(c.budgets.anchors, 140);
        assert_eq!(c.budgets.synonyms, 60);
        assert_eq!(c.df_ratio_band, [0.3, 3.0]);
        assert_eq!(c.max_synonyms, 12);
        assert_eq!(c.reranker.blend.rerank, 0.85);
    }

    #[test]
    fn the_seeds_block_reads_as_toml() {
        let c = PlanConfig::parse(
            r#"
[semantic_search]
budgets = { anchors = 100, synonyms = 40 }
df_ratio_band = [0.5, 2.0]
max_synonyms = 8
stoplist = ["data", "table"]

[semantic_search.negatives]
hard_patterns = ["(^|_)tmp(_|$)"]
soft_terms = ["dev"]
exceptions = [{ negative = "dev", allow = ["device"] }]

[semantic_search.reranker]
provider = "none"
blend = { rerank = 0.8, anchors = 0.15, negatives = 0.05 }
"#,
        )
        .unwrap();
        assert_eq!(
            c.budgets,
            Budgets {
                anchors: 100,
                synonyms: 40,
                dense: 60
            }
        );
        assert_eq!(c.negatives.soft_terms, ["dev"]);
        assert_eq!(c.reranker.provider, RerankProvider::None);
        assert_eq!(c.reranker.blend.anchors, 0.15);
        assert_eq!(c.max_candidates, 200, "keys left out keep their defaults");
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        for (text, key) in [
            ("[semantic_search]\nbudget = { anchors = 1 }", "budget"),
            ("[semantic_search.reranker]\nprovidr = \"none\"", "providr"),
            ("[datahub]\nhost = \"x\"", "datahub"),
            ("[semantic_search.negatives]\nhard = []", "hard"),
        ] {
            let err = PlanConfig::parse(text).unwrap_err();
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    #[test]
    fn bad_values_are_errors() {
        for text in [
            "[semantic_search]\ndf_ratio_band = [3.0, 0.3]",
            "[semantic_search]\nterm_length = [0, 5]",
            "[semantic_search.negatives]\nhard_patterns = [\"(unclosed\"]",
            "[semantic_search.reranker]\nprovider = \"http\"",
            "[semantic_search.reranker]\nprovider = \"cohere\"",
            "[semantic_search.reranker]\ntimeout_s = 0",
        ] {
            assert!(PlanConfig::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn the_file_beside_the_store_is_read_and_an_explicit_one_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("slayer.db");
        assert_eq!(
            PlanConfig::load(None, &store).unwrap(),
            PlanConfig::default()
        );
        std::fs::write(
            dir.path().join("slayer.toml"),
            "[semantic_search]\nmax_synonyms = 3\n",
        )
        .unwrap();
        assert_eq!(PlanConfig::load(None, &store).unwrap().max_synonyms, 3);
        let missing = dir.path().join("nope.toml");
        assert!(matches!(
            PlanConfig::load(Some(&missing), &store),
            Err(ConfigError::Read { .. })
        ));
    }
}
