//! Answer first (docs/spec/fusion.md §8.9): the first places of the entity list go to what the
//! question asks for. Agents read the first few entities, so after model-level evidence has
//! ordered the list, its head is arranged by the question's intent ([`intent`]):
//!
//! - a metric question leads with the best-matching named measure, then the next two measures
//!   that match the question at least as well as the model it lives on, then that model, then
//!   the other next measures;
//! - any other question (but one about joins) keeps the models taking part first and fills
//!   the rest of the head with the best leaves that are not there only as connecting keys: a
//!   key's `join` evidence is for a question that needs two tables, and places 4–5 are where
//!   the columns that hold the answer belong;
//! - a join question keeps the order the join evidence gives.
//!
//! Only the head moves; every entry past it keeps its order. An entry the head lifts above one
//! that scored more gains an `answer` contribution of just what keeps the scores in order, so
//! the list stays sorted by score (routing merges lists by score) and `--explain` says why.

use crate::fusion::fuse::{Contribution, Fused};
use crate::fusion::model_evidence::{KEY_CHANNEL, QUESTION_CHANNEL};
use crate::intent::{
    asked_aggregations, asked_units, asks_ratio, classify, computes, counts_in, is_ratio, Intent,
    IntentKind, Kind,
};
use crate::SearchError;
use slayer_common::canonical::model_of;

/// How many of the list's first entries are read for the measures and models (the evidence's
/// window, fixed so that a smaller cap still gives a prefix).
pub(crate) const WINDOW: usize = 100;

/// How many next-best measures a metric question's head holds beside its measure and model.
const NEXT_MEASURES: usize = 2;

/// The channel of the lift a head entry gains in `--explain`.
pub(crate) const CHANNEL: &str = "answer";

/// What a measure gains when its formula computes what the question asks ("lowest" and
/// `min(…)`): half a channel's best match, enough to settle near ties between sibling measures.
const AGGREGATION_MATCH: f64 = 0.5;

/// What a measure gains when its formula's columns count its figure in the units the question
/// names ("cost" and `sum(purchase_cost)`, "units" and `sum(quantity)`): as much as an
/// aggregation named.
const UNITS_MATCH: f64 = 0.5;

/// What a ratio measure (a rate, a share, an average: its formula divides at the top) loses
/// when the question asks for none and does not name it: "revenue lost from customers who
/// cancelled" asks for an amount, not the churn rate, though both are about churned revenue.
/// As much as an aggregation named gains.
const RATIO_UNASKED: f64 = 0.5;

/// The channels that say how well an entry itself matches the question (not what its model
/// or a join lends it).
const OWN: [&str; 4] = ["named", "fulltext", "dense", "question"];

/// How well an entry itself matches the question, on one scale across channels: each channel's
/// raw score over its best in `best` (text BM25 and cosine say *how much* better a match is,
/// which rank alone throws away), dense counted twice (a metric question is a paraphrase more
/// often than it repeats a name), a caller-named entity 1. A leaf whose name the question says
/// (the `question` evidence) adds nothing here: the text channel has already weighed those
/// words in its name field, and counting them twice let a short name the question only
/// mentions ("revenue" in "recurring revenue we lost") pass the measures its other words
/// describe. A measure whose formula computes the aggregation the question asks for adds
/// [`AGGREGATION_MATCH`].
fn own_match(f: &Fused, best: &Best) -> f64 {
    let mut sum = text_match(f, best);
    for c in &f.contributions {
        sum += match (c.channel, c.raw_score) {
            ("dense", Some(raw)) if best.dense > 0.0 => 2.0 * raw / best.dense,
            ("named", _) => 1.0,
            _ => 0.0,
        };
    }
    sum
}

/// The words a count's name may add to what it counts (`count`, `n_rows`). Not `total` or
/// `sum`: `order_total` on `orders` is an amount, not the orders' own figure.
const AGGREGATE_NAME_WORDS: [&str; 10] = [
    "count", "cnt", "number", "num", "n", "records", "record", "rows", "row", "of",
];

/// A leaf's model id and its own name (`ds.orders.order_count` → `ds.orders`, `order_count`).
fn model_and_leaf(leaf_id: &str) -> Option<(&str, &str)> {
    let model_id = model_of(leaf_id)?;
    Some((model_id, &leaf_id[model_id.len() + 1..]))
}

/// Whether a measure's name says nothing but its model's name and aggregation words (`count`
/// on `StripeCustomers`, `sales_count` on `sales`): it is that model's figure, so the question
/// names it where it names the model (Cube gives every cube a `count`).
fn named_by_its_model(measure_id: &str) -> bool {
    let Some((model_id, leaf)) = model_and_leaf(measure_id) else {
        return false;
    };
    let model = model_id.rsplit('.').next().unwrap_or_default();
    let stem = |w: &str| w.strip_suffix('s').unwrap_or(w).to_owned();
    let model_words: Vec<String> = slayer_index::render::words(model)
        .split(' ')
        .map(stem)
        .collect();
    slayer_index::render::words(leaf)
        .split(' ')
        .filter(|w| !AGGREGATE_NAME_WORDS.contains(w))
        .all(|w| model_words.contains(&stem(w)))
}

/// Whether a measure's name says it computes one of `asked`, read with the question's own cue
/// words ([`asked_aggregations`] over the name in words): `engagement_rate` is a rate and
/// `avg_cost_per_session` an average even where the formula does not show it (a rate column
/// summed, `sum(engagement_rate)`; a metric named as another). The name is how the project
/// says what the figure is; the formula, how it is computed.
fn names_computed(measure_id: &str, asked: &[&str]) -> bool {
    let Some((_, leaf)) = model_and_leaf(measure_id).filter(|_| !asked.is_empty()) else {
        return false;
    };
    let named = asked_aggregations(&slayer_index::render::words(leaf));
    asked.iter().any(|a| named.contains(a))
}

/// The text channel's match of an entry: its BM25 over the best among the entries read.
fn text_match(f: &Fused, best: &Best) -> f64 {
    f.contributions
        .iter()
        .find_map(|c| match (c.channel, c.raw_score) {
            ("fulltext", Some(raw)) if best.text > 0.0 => Some(raw / best.text),
            _ => None,
        })
        .unwrap_or(0.0)
}

/// The best raw score of each scored channel among the entries read.
#[derive(Debug, Default, Clone, Copy)]
struct Best {
    text: f64,
    dense: f64,
}

impl Best {
    fn of(entries: &[Fused]) -> Best {
        let mut best = Best::default();
        for c in entries.iter().flat_map(|f| &f.contributions) {
            match (c.channel, c.raw_score) {
                ("fulltext", Some(raw)) => best.text = best.text.max(raw),
                ("dense", Some(raw)) => best.dense = best.dense.max(raw),
                _ => {}
            }
        }
        best
    }
}

/// Whether an entry is there as a connecting key: without its `join` evidence it would not
/// hold its place.
fn join_part(f: &Fused) -> f64 {
    f.contributions
        .iter()
        .filter(|c| c.channel == KEY_CHANNEL)
        .map(|c| c.contribution)
        .sum()
}

/// Whether the caller named the entry (a `named` ref) or the question names it exactly (an
/// `evidence` entry with no model mass, docs/spec/fusion.md §8.6).
fn is_named(f: &Fused) -> bool {
    f.contributions.iter().any(|c| {
        c.channel == "named"
            || (c.channel == crate::fusion::model_evidence::CHANNEL && c.raw_score.is_none())
    })
}

/// Whether the caller or the question names the entry: a ref, an exact name, or a leaf whose
/// name the question says (the `question` evidence).
fn names_it(f: &Fused) -> bool {
    is_named(f)
        || f.contributions
            .iter()
            .any(|c| c.channel == QUESTION_CHANNEL)
}

/// Whether any channel that matches the question itself ranked the entry.
fn matched(f: &Fused) -> bool {
    f.contributions.iter().any(|c| OWN.contains(&c.channel))
}

/// Each measure among `read` that the question's own channels ranked, with how well it matches
/// ([`own_match`], plus [`AGGREGATION_MATCH`] when its formula computes what the question asks,
/// less [`RATIO_UNASKED`] for a ratio the question neither asks for nor names), best first (a
/// stable sort: the first in order on a tie). Formulas are read in one read.
fn measure_matches(
    read: &[Fused],
    best: &Best,
    question: &str,
    kind_of: impl Fn(&str) -> Kind,
    formulas: impl FnOnce(&[&str]) -> Result<Vec<String>, SearchError>,
) -> Result<Vec<(usize, f64)>, SearchError> {
    let at_measures: Vec<usize> = (0..read.len())
        .filter(|&at| matched(&read[at]) && kind_of(&read[at].key) == Kind::Measure)
        .collect();
    let asked = asked_aggregations(question);
    let units = asked_units(question);
    let wants_ratio = asks_ratio(&asked);
    let matched: Vec<f64> = match at_measures.is_empty() {
        true => Vec::new(),
        false => {
            let ids: Vec<&str> = at_measures
                .iter()
                .map(|&at| read[at].key.as_str())
                .collect();
            formulas(&ids)?
                .iter()
                .zip(&at_measures)
                .map(|(formula, &at)| {
                    let computed =
                        computes(formula, &asked) || names_computed(&read[at].key, &asked);
                    let agg = computed as u8 as f64 * AGGREGATION_MATCH;
                    let unasked = !wants_ratio && is_ratio(formula) && !names_it(&read[at]);
                    agg + counts_in(formula, &units) as u8 as f64 * UNITS_MATCH
                        - unasked as u8 as f64 * RATIO_UNASKED
                })
                .collect()
        }
    };
    // A measure named by its model matches the words as well as its model does.
    let through_model = |f: &Fused| -> f64 {
        let model = model_of(&f.key).filter(|_| named_by_its_model(&f.key));
        let model_text = model
            .and_then(|m| read.iter().find(|e| e.key == m))
            .map_or(0.0, |m| text_match(m, best));
        (model_text - text_match(f, best)).max(0.0)
    };
    let mut measures: Vec<(usize, f64)> = at_measures
        .into_iter()
        .zip(matched)
        .map(|(at, matched)| {
            let f = &read[at];
            (at, own_match(f, best) + through_model(f) + matched)
        })
        .collect();
    measures.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(measures)
}

/// The head, as places of `read`: what the caller named, then what the intent asks for (a
/// metric question's measure, the next measures that match at least `model_match`, its model,
/// the other next measures), then the list by its scores without the join evidence (the models
/// taking part and the best leaves), up to `head`. Also the measure's model when the window
/// lacks it, with the place in the head it takes.
fn head_places(
    read: &[Fused],
    head: usize,
    metric: bool,
    measures: &[(usize, f64)],
    model_match: f64,
) -> (Vec<usize>, Option<(String, usize)>) {
    let mut wanted: Vec<usize> = Vec::with_capacity(head);
    let push = |at: usize, wanted: &mut Vec<usize>| {
        if !wanted.contains(&at) {
            wanted.push(at);
        }
    };
    // What the caller named, or the question names exactly, stays first (§8.6: the exact
    // name wins outright).
    for at in (0..read.len()).filter(|&at| is_named(&read[at])).take(head) {
        push(at, &mut wanted);
    }
    let mut outside = None;
    if let Some(&(at, _)) = measures.first().filter(|_| metric) {
        push(at, &mut wanted);
        // The next-best measures are the candidates an agent weighs next; those that match
        // the question at least as well as the model does come before it (§8.9: a measure
        // that matches better than its model outranks it).
        let next = &measures[1..measures.len().min(1 + NEXT_MEASURES)];
        let (before, after): (Vec<_>, Vec<_>) = next.iter().partition(|&&(_, m)| m >= model_match);
        for &(i, _) in &before {
            push(i, &mut wanted);
        }
        let model = model_of(&read[at].key).unwrap_or_default();
        match read.iter().position(|f| f.key == model) {
            Some(m) => push(m, &mut wanted),
            None => outside = Some((model.to_owned(), wanted.len())),
        }
        for &(i, _) in &after {
            push(i, &mut wanted);
        }
    }
    let mut by_own: Vec<usize> = (0..read.len()).collect();
    by_own.sort_by(|&a, &b| {
        let sa = read[a].score - join_part(&read[a]);
        let sb = read[b].score - join_part(&read[b]);
        sb.total_cmp(&sa)
    });
    for at in by_own {
        if wanted.len() >= head {
            break;
        }
        push(at, &mut wanted);
    }
    (wanted, outside)
}

/// Moves the entries at `places` to the front, in that order, the others keeping theirs; each
/// head entry, from the last, is lifted just above what follows it (an `answer` contribution of
/// the difference), so the list stays sorted by score.
fn to_front(ordered: Vec<Fused>, places: &[usize]) -> Vec<Fused> {
    let mut slots: Vec<Option<Fused>> = ordered.into_iter().map(Some).collect();
    let mut head: Vec<Fused> = places.iter().filter_map(|&at| slots[at].take()).collect();
    let rest: Vec<Fused> = slots.into_iter().flatten().collect();
    let mut floor = rest.first().map(|f| f.score);
    for (place, f) in head.iter_mut().enumerate().rev() {
        if let Some(below) = floor.filter(|below| f.score <= *below) {
            let lifted = below.next_up();
            f.contributions.push(Contribution {
                channel: CHANNEL,
                rank: place + 1,
                raw_score: None,
                contribution: lifted - f.score,
            });
            f.score = lifted;
        }
        floor = Some(f.score);
    }
    head.extend(rest);
    head
}

/// Arranges the first `head` places of `ordered` (the evidence's order, best first) for what
/// `question` asks; `window` entries are read for the measures and the models; `formulas`
/// reads the formulas of measures by id (an unknown one is empty), `exact` the fused entries of
/// keys outside the window. Returns the list and the intent chosen (`None` when nothing was
/// arranged: no question, or a head of 0).
pub(crate) fn arrange(
    mut ordered: Vec<Fused>,
    question: Option<&str>,
    head: usize,
    window: usize,
    kind_of: impl Fn(&str) -> Kind,
    formulas: impl FnOnce(&[&str]) -> Result<Vec<String>, SearchError>,
    exact: impl FnOnce(&[&str]) -> Result<Vec<Fused>, SearchError>,
) -> Result<(Vec<Fused>, Option<Intent>), SearchError> {
    let Some(question) = question.filter(|_| head > 0 && !ordered.is_empty()) else {
        return Ok((ordered, None));
    };
    let read_len = window.max(head).min(ordered.len());
    let read = &ordered[..read_len];
    let best = Best::of(read);
    let measures = measure_matches(read, &best, question, kind_of, formulas)?;
    // A measure that matches the question at least as well as its own model makes the
    // question a metric question even without a metric word.
    let model_match = measures.first().map_or(0.0, |&(at, _)| {
        let model = model_of(&read[at].key).unwrap_or_default();
        read.iter()
            .find(|f| f.key == model)
            .map_or(0.0, |f| own_match(f, &best))
    });
    let leads = measures
        .first()
        .filter(|&&(_, m)| m > 0.0 && m >= model_match)
        .map(|&(at, _)| read[at].key.as_str());
    let intent = classify(question, leads);
    if intent.kind == IntentKind::Join {
        return Ok((ordered, Some(intent)));
    }
    let metric = intent.kind == IntentKind::Metric;
    let (mut places, outside) = head_places(read, head, metric, &measures, model_match);
    // A model outside the window joins it with its exact fused entry, at the place the head
    // keeps for it (so the head does not depend on how deep the list was read); one the head
    // has no room for is not read and nothing moves.
    if let Some((model, place)) = outside.filter(|&(_, place)| place < head) {
        if let Some(entry) = exact(&[model.as_str()])?.into_iter().next() {
            ordered.retain(|f| f.key != entry.key);
            let end = read_len.min(ordered.len());
            ordered.insert(end, entry);
            places.insert(place.min(places.len()), end);
        }
    }
    places.truncate(head);
    if places.iter().enumerate().all(|(place, at)| place == *at) {
        return Ok((ordered, Some(intent)));
    }
    Ok((to_front(ordered, &places), Some(intent)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, parts: &[(&'static str, usize, Option<f64>, f64)]) -> Fused {
        let contributions: Vec<Contribution> = parts
            .iter()
            .map(|&(channel, rank, raw_score, contribution)| Contribution {
                channel,
                rank,
                raw_score,
                contribution,
            })
            .collect();
        Fused {
            key: key.into(),
            score: contributions.iter().map(|c| c.contribution).sum(),
            contributions,
        }
    }

    fn kind(key: &str) -> Kind {
        match key {
            k if k.ends_with("_m") => Kind::Measure,
            k if k.matches('.').count() == 1 => Kind::Model,
            _ => Kind::Other,
        }
    }

    fn formulas(ids: &[&str]) -> Result<Vec<String>, SearchError> {
        Ok(ids.iter().map(|_| "count(*)".to_owned()).collect())
    }

    fn no_exact(_: &[&str]) -> Result<Vec<Fused>, SearchError> {
        Ok(Vec::new())
    }

    fn keys(fused: &[Fused]) -> Vec<&str> {
        fused.iter().map(|f| f.key.as_str()).collect()
    }

    /// Two models on top by evidence, a connecting key, two columns, two measures.
    fn list() -> Vec<Fused> {
        vec![
            entry(
                "db.orders",
                &[
                    ("fulltext", 1, Some(9.0), 0.0164),
                    ("evidence", 1, Some(0.05), 0.0328),
                ],
            ),
            entry("db.customers", &[("evidence", 2, Some(0.04), 0.0323)]),
            entry(
                "db.orders.customer_id",
                &[
                    ("fulltext", 5, Some(3.0), 0.0154),
                    ("join", 1, None, 0.0122),
                ],
            ),
            entry(
                "db.orders.large_m",
                &[
                    ("fulltext", 3, Some(5.0), 0.0159),
                    ("dense", 1, Some(0.6), 0.0082),
                ],
            ),
            entry("db.orders.status", &[("fulltext", 2, Some(6.0), 0.0161)]),
            entry("db.orders.count_m", &[("fulltext", 4, Some(4.0), 0.0156)]),
            entry("db.orders.amount", &[("dense", 2, Some(0.5), 0.0081)]),
        ]
    }

    #[test]
    fn a_metric_question_leads_with_its_measure_then_its_model() {
        let (out, intent) = arrange(
            list(),
            Some("how many large orders"),
            5,
            100,
            kind,
            formulas,
            no_exact,
        )
        .unwrap();
        assert_eq!(intent.unwrap().kind, IntentKind::Metric);
        assert_eq!(
            keys(&out)[..5],
            [
                "db.orders.large_m",
                "db.orders",
                "db.orders.count_m",
                "db.customers",
                "db.orders.status"
            ]
        );
        // Scores stay in order, and the lifted entries say so.
        assert!(out.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(out[0].contributions.iter().any(|c| c.channel == CHANNEL));
        assert_eq!(out.len(), 7);
    }

    #[test]
    fn a_next_measure_that_matches_better_than_the_model_comes_before_it() {
        // `count_m` matches the words better than `db.orders` does (6 against 2), `amount_m`
        // (1, and a sum where the question asks for a count) does not: the agent weighs the
        // two near candidates before the model.
        let list = vec![
            entry(
                "db.orders",
                &[
                    ("fulltext", 3, Some(2.0), 0.0159),
                    ("evidence", 1, Some(0.05), 0.0328),
                ],
            ),
            entry("db.orders.large_m", &[("fulltext", 1, Some(9.0), 0.0164)]),
            entry("db.orders.count_m", &[("fulltext", 2, Some(6.0), 0.0161)]),
            entry("db.orders.status", &[("fulltext", 4, Some(1.5), 0.0156)]),
            entry("db.orders.amount_m", &[("fulltext", 5, Some(1.0), 0.0154)]),
        ];
        let (out, _) = arrange(
            list,
            Some("how many large orders"),
            4,
            100,
            kind,
            |ids: &[&str]| {
                Ok(ids
                    .iter()
                    .map(|id| match id.contains("amount") {
                        true => "sum(amount)".to_owned(),
                        false => "count(*)".to_owned(),
                    })
                    .collect())
            },
            no_exact,
        )
        .unwrap();
        assert_eq!(
            keys(&out)[..4],
            [
                "db.orders.large_m",
                "db.orders.count_m",
                "db.orders",
                "db.orders.amount_m"
            ]
        );
        assert!(out.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn a_measure_named_by_its_model_is_that_model_s_figure() {
        assert!(named_by_its_model("stripe.StripeCustomers.count"));
        assert!(named_by_its_model("sales.sales.sales_count"));
        assert!(named_by_its_model("shop.orders.n_order_records"));
        assert!(!named_by_its_model("shop.orders.order_total"));
        assert!(!named_by_its_model(
            "stripe.StripeCustomers.activeCustomers"
        ));
        assert!(!named_by_its_model("shop.orders.large_orders"));
        assert!(!named_by_its_model("shop.orders"));
        // Where it is: the model's words lend it their match.
        let list = vec![
            entry("db.customers", &[("fulltext", 1, Some(7.0), 0.0164)]),
            entry(
                "db.subs.active_customers",
                &[("fulltext", 2, Some(5.0), 0.0161)],
            ),
            entry("db.customers.count", &[("fulltext", 3, Some(1.5), 0.0159)]),
        ];
        let (out, _) = arrange(
            list,
            Some("how many customers"),
            3,
            100,
            kind_any_leaf_a_measure,
            formulas,
            no_exact,
        )
        .unwrap();
        assert_eq!(out[0].key, "db.customers.count");
    }

    #[test]
    fn a_name_the_question_only_mentions_does_not_count_twice() {
        // "how much recurring revenue did we lose": `revenue` is named by the question and
        // scores a little more on text (a short name); `churn_arr` is what its other words
        // describe, and the dense channel says so. The name's words are in the text score
        // already.
        let list = vec![
            entry(
                "db.fin.revenue",
                &[
                    ("fulltext", 1, Some(6.4), 0.0164),
                    ("dense", 2, Some(0.30), 0.0161),
                    ("question", 1, None, 0.0164),
                ],
            ),
            entry(
                "db.mrr.churn_arr",
                &[
                    ("fulltext", 2, Some(6.0), 0.0161),
                    ("dense", 1, Some(0.40), 0.0164),
                ],
            ),
        ];
        let (out, _) = arrange(
            list,
            Some("how much recurring revenue did we lose"),
            2,
            100,
            kind_any_leaf_a_measure,
            |ids: &[&str]| Ok(ids.iter().map(|_| "sum(x)".to_owned()).collect()),
            no_exact,
        )
        .unwrap();
        assert_eq!(out[0].key, "db.mrr.churn_arr");
    }

    fn kind_any_leaf_a_measure(key: &str) -> Kind {
        match key.matches('.').count() {
            1 => Kind::Model,
            _ => Kind::Measure,
        }
    }

    #[test]
    fn a_ratio_leads_only_where_the_question_asks_for_one_or_names_it() {
        // `churn_rate_m` matches the words a little better than `churned_m`, but it is a rate.
        let list = |named: bool| {
            let mut rate = vec![("fulltext", 1, Some(6.0), 0.0164)];
            if named {
                rate.push(("question", 1, None, 0.0164));
            }
            vec![
                entry("db.subs.churn_rate_m", &rate),
                entry("db.subs.churned_m", &[("fulltext", 2, Some(5.5), 0.0161)]),
                entry("db.subs", &[("fulltext", 3, Some(2.0), 0.0159)]),
            ]
        };
        let formulas = |ids: &[&str]| -> Result<Vec<String>, SearchError> {
            Ok(ids
                .iter()
                .map(|id| match id.contains("rate") {
                    true => "sum(churned) / sum(mrr)".to_owned(),
                    false => "sum(churned)".to_owned(),
                })
                .collect())
        };
        let first = |question: &str, named: bool| {
            let (out, _) = arrange(
                list(named),
                Some(question),
                3,
                100,
                kind,
                formulas,
                no_exact,
            )
            .unwrap();
            out[0].key.clone()
        };
        assert_eq!(first("revenue lost to churn", false), "db.subs.churned_m");
        assert_eq!(
            first("churn rate of revenue", false),
            "db.subs.churn_rate_m"
        );
        assert_eq!(first("revenue lost to churn", true), "db.subs.churn_rate_m");
    }

    #[test]
    fn a_measure_s_name_says_what_it_computes_where_its_formula_does_not() {
        // Both sum a column; the name says which one is a rate.
        let list = vec![
            entry(
                "db.web.engaged_sessions_m",
                &[("fulltext", 1, Some(6.0), 0.0164)],
            ),
            entry(
                "db.web.engagement_rate_m",
                &[("fulltext", 2, Some(5.5), 0.0161)],
            ),
            entry("db.web", &[("fulltext", 3, Some(2.0), 0.0159)]),
        ];
        let formulas = |ids: &[&str]| -> Result<Vec<String>, SearchError> {
            Ok(ids
                .iter()
                .map(|id| format!("sum({})", id.rsplit('.').next().unwrap()))
                .collect())
        };
        let first = |question: &str| {
            let (out, _) = arrange(
                list.clone(),
                Some(question),
                3,
                100,
                kind,
                formulas,
                no_exact,
            )
            .unwrap();
            out[0].key.clone()
        };
        assert_eq!(
            first("share of sessions that were engaged"),
            "db.web.engagement_rate_m"
        );
        assert_eq!(
            first("sessions that were engaged"),
            "db.web.engaged_sessions_m"
        );
        assert!(names_computed("db.m.avg_cost_per_session", &["avg"]));
        assert!(names_computed("db.m.number_of_orders", &["count"]));
        assert!(!names_computed("db.m.orders", &["count"]));
        assert!(!names_computed("orders", &["count"]));
    }

    #[test]
    fn a_lookup_puts_columns_before_connecting_keys() {
        let no_measures = |k: &str| match kind(k) {
            Kind::Measure => Kind::Other,
            other => other,
        };
        let (out, intent) = arrange(
            list(),
            Some("order status"),
            4,
            100,
            no_measures,
            formulas,
            no_exact,
        )
        .unwrap();
        assert_eq!(intent.unwrap().kind, IntentKind::Lookup);
        // The key's own match is below `status`; only its join evidence lifted it.
        assert_eq!(
            keys(&out)[..5],
            [
                "db.orders",
                "db.customers",
                "db.orders.large_m",
                "db.orders.status",
                "db.orders.customer_id"
            ]
        );
        assert!(out.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(out[3].contributions.iter().any(|c| c.channel == CHANNEL));
    }

    #[test]
    fn what_the_caller_named_stays_first() {
        let mut named = list();
        named[4].contributions.push(Contribution {
            channel: "named",
            rank: 1,
            raw_score: None,
            contribution: 1.0 / 61.0,
        });
        named[4].score += 1.0 / 61.0;
        named.sort_by(|a, b| b.score.total_cmp(&a.score));
        let (out, _) = arrange(
            named,
            Some("how many large orders"),
            5,
            100,
            kind,
            formulas,
            no_exact,
        )
        .unwrap();
        assert_eq!(
            keys(&out)[..4],
            [
                "db.orders.status",
                "db.orders.large_m",
                "db.orders",
                "db.orders.count_m"
            ]
        );
    }

    #[test]
    fn a_model_the_head_has_no_room_for_is_not_moved() {
        // Two caller-named entries fill a head of 2; the measure's model lies past the window
        // of 3. It is not read, and the list keeps its order (and stays sorted by score).
        let named = |key: &str, score: f64| entry(key, &[("named", 1, None, score)]);
        let list = vec![
            named("db.a", 0.05),
            named("db.b", 0.04),
            entry("db.orders.large_m", &[("fulltext", 1, Some(9.0), 0.03)]),
            entry("db.c.x", &[("fulltext", 2, Some(5.0), 0.02)]),
            entry("db.c.y", &[("fulltext", 3, Some(4.0), 0.015)]),
            entry("db.orders", &[("fulltext", 4, Some(1.0), 0.01)]),
        ];
        let (out, _) = arrange(
            list.clone(),
            Some("how many large orders"),
            2,
            3,
            kind,
            formulas,
            |_: &[&str]| -> Result<Vec<Fused>, SearchError> {
                panic!("a model the head has no room for is read")
            },
        )
        .unwrap();
        assert_eq!(keys(&out), keys(&list));
        assert!(out.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn a_join_question_keeps_the_evidence_order() {
        let (out, intent) = arrange(
            list(),
            Some("how do orders join customers"),
            5,
            100,
            kind,
            formulas,
            no_exact,
        )
        .unwrap();
        assert_eq!(intent.unwrap().kind, IntentKind::Join);
        assert_eq!(keys(&out), keys(&list()));
    }

    #[test]
    fn a_head_of_zero_or_no_question_changes_nothing() {
        assert_eq!(
            arrange(list(), Some("orders"), 0, 100, kind, formulas, no_exact)
                .unwrap()
                .1,
            None
        );
        assert_eq!(
            keys(
                &arrange(list(), None, 5, 100, kind, formulas, no_exact)
                    .unwrap()
                    .0
            ),
            keys(&list())
        );
    }
}
