//! Shaping and the final blend (docs/spec/planner.md §15.6). Each candidate becomes
//! the seed's compact block (title, kind, datasource, path, description, top columns with
//! short descriptions, tags; a memory's text and tags) for a reranker that reads text; the
//! reranker's score, the anchor hits in high-signal fields and the soft-negative penalty blend
//! as `rerank·normalize(rerank) + anchors·normalize(hits) − negatives·penalty`.

use rustc_hash::FxHashSet;

use crate::plan::config::Blend;
use crate::plan::gate::Gated;
use crate::plan::http::truncate;
use crate::plan::passes::{Candidate, Pass};
use crate::plan::words::IndexWords;

/// Columns listed in a model's block.
const TOP_COLUMNS: usize = 12;
/// Characters of a description (a column's: a quarter of it).
const SHORT: usize = 200;
/// Characters of a memory's text.
const MEMORY_TEXT: usize = 600;

fn line_value<'t>(text: &'t str, label: &str) -> Option<&'t str> {
    text.lines()
        .find_map(|l| l.strip_prefix(label).and_then(|r| r.strip_prefix(": ")))
        .filter(|v| !v.is_empty())
}

/// The seed's block for one candidate. `column_description` gives a model's column's
/// description (from its own doc), where there is one.
pub(crate) fn shape(
    c: &Candidate,
    column_description: &mut dyn FnMut(&str) -> Option<String>,
) -> String {
    if c.kind == "memory" {
        let (body, tags) = match c.text.rsplit_once("\nTagged entities: ") {
            Some((body, tags)) => (body, Some(tags)),
            None => (c.text.as_str(), None),
        };
        let mut block = format!(
            "TITLE: {}  TYPE: memory\nTEXT: {}",
            c.id,
            truncate(body, MEMORY_TEXT)
        );
        if let Some(tags) = tags {
            block.push_str(&format!("\nTAGS: {tags}"));
        }
        return block;
    }
    let (datasource, name) =
        c.id.split_once('.')
            .unwrap_or((c.id.as_str(), c.id.as_str()));
    let title = name.rsplit('.').next().unwrap_or(name);
    let mut block = format!(
        "TITLE: {title}  TYPE: {}  DATASOURCE: {datasource}\nPATH: {datasource}/{}",
        c.kind,
        name.replace('.', "/")
    );
    if let Some(desc) = line_value(&c.text, "Description").or_else(|| line_value(&c.text, "Label"))
    {
        block.push_str(&format!("\nDESC: {}", truncate(desc, SHORT)));
    }
    if let Some(kind_line) = line_value(&c.text, "Type") {
        block.push_str(&format!("\nTYPE OF VALUES: {kind_line}"));
    }
    if let Some(columns) = line_value(&c.text, "Columns") {
        let shown: Vec<String> = columns
            .split(", ")
            .filter_map(|item| item.strip_suffix(" (column)"))
            .take(TOP_COLUMNS)
            .map(|col| match column_description(col) {
                Some(d) => format!("{col} - {}", truncate(&d, SHORT / 4)),
                None => col.to_owned(),
            })
            .collect();
        block.push_str(&format!("\nCOLUMNS: {}", shown.join("; ")));
    }
    for label in ["Measures", "Aggregations", "Sample values", "Formula"] {
        if let Some(v) = line_value(&c.text, label) {
            block.push_str(&format!(
                "\n{}: {}",
                label.to_uppercase(),
                truncate(v, SHORT)
            ));
        }
    }
    block
}

/// How many of the plan's anchors and phrases a candidate holds in its high-signal fields:
/// an entity's id, title line, description and label; a memory's text.
pub(crate) fn anchor_hits(c: &Candidate, gated: &Gated, words: &mut IndexWords) -> usize {
    let high = if c.kind == "memory" {
        c.text.clone()
    } else {
        let mut high = c.id.clone();
        for label in ["Description", "Label"] {
            if let Some(v) = line_value(&c.text, label) {
                high.push('\n');
                high.push_str(v);
            }
        }
        high
    };
    let tokens: FxHashSet<String> = words.terms(&high).into_iter().collect();
    gated
        .anchors
        .iter()
        .chain(&gated.phrases)
        .filter(|t| t.tokens.iter().all(|tok| tokens.contains(tok)))
        .count()
}

/// The retrieval's own judgement, for want of a reranker: each pass's BM25 score over that
/// pass's best, pass-B candidates scaled to sit below every pass-A one (the synonyms' pool is
/// de-boosted by its budget, never promoted by its scores), pass-D ones 0.
pub(crate) fn retrieval_scores(candidates: &[&Candidate]) -> Vec<f64> {
    let best = |pass| {
        candidates
            .iter()
            .filter(|c| c.pass == pass)
            .map(|c| f64::from(c.score))
            .fold(0.0, f64::max)
    };
    let (best_a, best_b) = (best(Pass::A), best(Pass::B));
    let floor_a = candidates
        .iter()
        .filter(|c| c.pass == Pass::A)
        .map(|c| f64::from(c.score) / best_a)
        .fold(1.0, f64::min);
    candidates
        .iter()
        .map(|c| {
            let s = f64::from(c.score);
            match c.pass {
                Pass::A if best_a > 0.0 => s / best_a,
                Pass::B if best_b > 0.0 => floor_a * s / best_b,
                // Pass D: the lexical retrieval did not find it at all.
                _ => 0.0,
            }
        })
        .collect()
}

/// The local reranker's score: the mean of the min–max normalised cosines and the retrieval
/// scores.
pub(crate) fn with_retrieval(cosines: &[f64], retrieval: &[f64]) -> Vec<f64> {
    normalize(cosines)
        .iter()
        .zip(retrieval)
        .map(|(c, r)| (c + r) / 2.0)
        .collect()
}

/// Min–max normalisation to [0, 1]; all equal → all 1 (nothing to tell them apart, and none
/// should lose its weight).
pub(crate) fn normalize(values: &[f64]) -> Vec<f64> {
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    values
        .iter()
        .map(|&v| {
            if max > min {
                (v - min) / (max - min)
            } else {
                1.0
            }
        })
        .collect()
}

/// The final scores: `rerank·normalize(rerank) + anchors·hits/max hits − negatives·penalty`.
pub(crate) fn blend(
    rerank: &[f64],
    anchor_hits: &[usize],
    penalties: &[f64],
    weights: Blend,
) -> Vec<f64> {
    let rerank = normalize(rerank);
    let most = anchor_hits.iter().copied().max().unwrap_or(0);
    rerank
        .iter()
        .zip(anchor_hits)
        .zip(penalties)
        .map(|((r, &hits), p)| {
            let hits = if most == 0 {
                0.0
            } else {
                hits as f64 / most as f64
            };
            weights.rerank * r + weights.anchors * hits - weights.negatives * p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::passes::test_candidate as candidate;

    #[test]
    fn blend_arithmetic() {
        let w = Blend::default();
        let scores = blend(&[2.0, 1.0, 0.0], &[0, 2, 1], &[0.0, 0.0, 1.0], w);
        // 0.85·1 + 0.10·0 − 0; 0.85·0.5 + 0.10·1; 0 + 0.10·0.5 − 0.05·1.
        let want = [0.85, 0.525, 0.0];
        for (got, want) in scores.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{scores:?}");
        }
        let flat = blend(&[0.3, 0.3], &[0, 0], &[0.0, 0.5], w);
        assert!(
            (flat[0] - 0.85).abs() < 1e-12 && (flat[1] - 0.825).abs() < 1e-12,
            "{flat:?}"
        );
    }

    #[test]
    fn retrieval_scores_put_pass_b_below_pass_a() {
        let mut a1 = candidate("x.a1", "model", "");
        a1.score = 8.0;
        let mut a2 = candidate("x.a2", "model", "");
        a2.score = 2.0;
        let mut b1 = candidate("x.b1", "model", "");
        (b1.pass, b1.score) = (Pass::B, 30.0);
        let mut b2 = candidate("x.b2", "model", "");
        (b2.pass, b2.score) = (Pass::B, 15.0);
        let scores = retrieval_scores(&[&a1, &a2, &b1, &b2]);
        assert_eq!(scores, [1.0, 0.25, 0.25, 0.125]);
        let local = with_retrieval(&[0.1, 0.5, 0.3, 0.3], &scores);
        assert_eq!(local, [0.5, 0.625, 0.375, 0.3125]);
    }

    #[test]
    fn a_model_is_shaped_as_the_seeds_block() {
        let c = candidate(
            "shop.customers",
            "model",
            "Model: shop.customers\nDescription: One row per customer.\nsql_table: customers\nColumns: id (column), email (column), phone (column)\nMeasures: ltv (measure)",
        );
        let block = shape(&c, &mut |col| {
            (col == "email").then(|| "Where receipts go.".to_owned())
        });
        assert_eq!(
            block,
            "TITLE: customers  TYPE: model  DATASOURCE: shop\nPATH: shop/customers\nDESC: One row per customer.\nCOLUMNS: id; email - Where receipts go.; phone\nMEASURES: ltv (measure)"
        );
        let m = candidate(
            "memory:7",
            "memory",
            "Refunds are negative.\nTagged entities: shop.orders",
        );
        assert_eq!(
            shape(&m, &mut |_| None),
            "TITLE: memory:7  TYPE: memory\nTEXT: Refunds are negative.\nTAGS: shop.orders"
        );
    }

    #[test]
    fn anchor_hits_read_names_and_descriptions_only() {
        use crate::plan::gate::{gate, Proposed, Role, Source};
        let mut words = IndexWords::standalone();
        let proposals: Vec<Proposed> = ["email", "pii", "phone number"]
            .iter()
            .map(|t| Proposed {
                text: t.to_string(),
                role: if t.contains(' ') {
                    Role::Phrase
                } else {
                    Role::Anchor
                },
                source: Source::Caller,
            })
            .collect();
        let gated = gate(&proposals, &Default::default(), &mut words, &mut |_| 1);
        let c = candidate(
            "crm.contacts.email",
            "column",
            "Column: crm.contacts.email\nDescription: PII: the contact's address\nSample values: [\"phone number\"]",
        );
        assert_eq!(
            anchor_hits(&c, &gated, &mut words),
            2,
            "email (name), pii (description)"
        );
    }
}
