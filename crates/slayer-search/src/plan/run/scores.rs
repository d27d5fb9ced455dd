//! The scores the blend reads: pass D's candidates from the dense pool, and the reranker's
//! score of each candidate (`none`, `local` or `http`).

use super::Run;
use crate::plan::config::RerankProvider;
use crate::plan::http_rerank::{self, RerankSettings};
use crate::plan::passes::{Candidate, Pass, PassReport};
use crate::plan::rerank::{retrieval_scores, shape, with_retrieval};
use crate::SearchError;

impl Run<'_, '_, '_, '_> {
    /// Pass D: up to `budget` docs of the dense ranking that the candidates lack, appended.
    pub(super) fn pass_d(
        &self,
        ranking: &[(String, Option<f64>)],
        candidates: &mut Vec<Candidate>,
        budget: usize,
    ) -> Result<PassReport, SearchError> {
        let present: rustc_hash::FxHashSet<String> =
            candidates.iter().map(|c| c.id.clone()).collect();
        let mut taken = 0;
        for (id, cosine) in ranking {
            if taken == budget {
                break;
            }
            if present.contains(id) {
                continue;
            }
            let Some(stored) = self.sources.conn.doc(id)? else {
                continue;
            };
            candidates.push(Candidate {
                id: id.clone(),
                kind: stored.doc.doc_kind,
                text: stored.doc.text,
                pass: Pass::D,
                score: cosine.unwrap_or(0.0) as f32,
            });
            taken += 1;
        }
        Ok(PassReport {
            query: "dense top".into(),
            matched: ranking.len(),
            budget,
            taken,
            adjusted: None,
        })
    }

    /// The reranker's score of each candidate, and the reranker that gave them (`none` when
    /// the asked one failed: a warning). `none` is the retrieval's own score; `local` fuses
    /// the embedding model's cosine with it (a bi-encoder reads the question and the doc
    /// apart, so unlike the seed's cross-encoder it is no better judge than the retrieval it
    /// would override: measured in docs/quality/planner.md); `http` is the endpoint's score as is.
    pub(super) fn rerank_scores(
        &mut self,
        provider: RerankProvider,
        candidates: &[&Candidate],
    ) -> Result<(Vec<f64>, RerankProvider), SearchError> {
        let (sources, question) = (self.sources, self.ask.question);
        let warnings = &mut *self.warnings;
        let retrieval_order = || retrieval_scores(candidates);
        if candidates.is_empty() {
            return Ok((Vec::new(), provider));
        }
        match provider {
            RerankProvider::None => Ok((retrieval_order(), provider)),
            RerankProvider::Local => {
                let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
                match sources.dense.similarities(sources.conn, question, &ids)? {
                    Ok(scores) => {
                        let missing = scores.iter().filter(|s| s.is_none()).count();
                        if missing == scores.len() {
                            warnings.push(format!(
                                "planner: local rerank skipped: none of the {} candidates has an embedding row; run `slayer-embed refresh`.",
                                scores.len()
                            ));
                            return Ok((retrieval_order(), RerankProvider::None));
                        }
                        let floor = scores
                            .iter()
                            .flatten()
                            .copied()
                            .fold(f64::INFINITY, f64::min);
                        if missing > 0 {
                            warnings.push(format!(
                                "planner: {missing} of {} candidates have no embedding row and rank as the least similar; run `slayer-embed refresh`.",
                                scores.len()
                            ));
                        }
                        let cosines: Vec<f64> =
                            scores.into_iter().map(|s| s.unwrap_or(floor)).collect();
                        Ok((with_retrieval(&cosines, &retrieval_order()), provider))
                    }
                    Err(warning) => {
                        warnings.push(warning.to_string());
                        Ok((retrieval_order(), RerankProvider::None))
                    }
                }
            }
            RerankProvider::Http => {
                let r = &self.config.reranker;
                let settings = RerankSettings {
                    url: r.url.clone().unwrap_or_default(),
                    model: r.model.clone(),
                    api: r.api,
                    api_key: sources.planner.rerank_api_key.clone(),
                    timeout: std::time::Duration::from_secs_f64(r.timeout_s),
                    max_retries: r.retries,
                    backoff: std::time::Duration::from_millis(200),
                };
                let mut blocks = Vec::with_capacity(candidates.len());
                for c in candidates {
                    let mut describe = |col: &str| {
                        sources
                            .conn
                            .doc(&format!("{}.{col}", c.id))
                            .ok()
                            .flatten()
                            .and_then(|d| {
                                d.doc.text.lines().find_map(|l| {
                                    l.strip_prefix("Description: ").map(str::to_owned)
                                })
                            })
                    };
                    blocks.push(shape(c, &mut describe));
                }
                match http_rerank::rerank(&settings, question, &blocks) {
                    Ok(scores) => Ok((scores, provider)),
                    Err(warning) => {
                        warnings.push(warning.to_string());
                        Ok((retrieval_order(), RerankProvider::None))
                    }
                }
            }
        }
    }
}
