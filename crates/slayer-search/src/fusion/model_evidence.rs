//! Model-level evidence (docs/spec/fusion.md §8.6): a model is what its columns say it is.
//!
//! A question about a table rarely repeats the table's name; it names what the table's columns
//! hold. So after the three channels are fused, the models are ranked by how well their own doc
//! and their best leaves placed, and an evidence ranking (channel `evidence`) is fused in: the
//! entities the caller named, in input order (they are certain), then the first few models of
//! that derived ranking. The fused list's first entries are then
//! reordered by the new scores; everything past them keeps its place. The leaves of a model
//! that takes part draw on it a little (`leaf_weight`): a column of the right table is likelier
//! the right column.

use crate::fusion::fuse::{rebury, Contribution, Fused, BURIED, K};
use crate::fusion::named::{named_in, words_of};
use crate::inputs::bare_name;
use crate::tuning::ModelEvidence;
use crate::SearchError;
use slayer_common::canonical::model_of;

/// The channel name the evidence ranking carries in `--explain`.
pub(crate) const CHANNEL: &str = "evidence";

/// The channel of a key column's evidence in `--explain`.
pub(crate) const KEY_CHANNEL: &str = "join";

/// The channel of a leaf the question names in `--explain`.
pub(crate) const QUESTION_CHANNEL: &str = "question";

/// The leaves of the window, of models taking part, whose names the question holds as whole
/// words ([`named_in`]), each with its 0-based place among them (fused order). A name several
/// models share names one thing: only its first leaf in fused order counts.
fn question_named(
    window: &[Fused],
    taking_part: &[(String, Option<f64>)],
    ev: &ModelEvidence,
    question: Option<&str>,
) -> Vec<(String, usize)> {
    let Some(question) = question.filter(|_| ev.question_weight > 0.0) else {
        return Vec::new();
    };
    let leaves: Vec<(&str, &str)> = window
        .iter()
        .filter(|f| !f.key.starts_with("memory:"))
        .filter_map(|f| {
            let model = model_of(&f.key)?;
            taking_part
                .iter()
                .any(|(m, _)| m == model)
                .then(|| (&f.key[model.len() + 1..], f.key.as_str()))
        })
        .collect();
    let mut named: Vec<&str> = named_in(question, leaves);
    // Back in fused order: the window's.
    named.sort_by_key(|key| window.iter().position(|f| f.key == *key));
    let mut names: Vec<String> = Vec::new();
    named.retain(|key| {
        let name = model_of(key).map_or(String::new(), |m| words_of(&key[m.len() + 1..]));
        let first = !names.contains(&name);
        if first {
            names.push(name);
        }
        first
    });
    named
        .into_iter()
        .enumerate()
        .map(|(place, key)| (key.to_owned(), place))
        .collect()
}

/// A key column connecting two models that take part.
struct ConnectingKey {
    key: String,
    /// The 0-based evidence place of the later of the two models (at least 1).
    place: usize,
}

/// The key columns connecting each two models that take part and share a datasource, with
/// the place of the later of the two (so the best-placed pair's keys weigh most): the columns
/// a join between them would use. A key of several pairs is its first pair's.
fn connecting_keys(
    taking_part: &[(String, Option<f64>)],
    ev: &ModelEvidence,
    connecting: impl Fn(&str, &str) -> Vec<String>,
) -> Vec<ConnectingKey> {
    let mut keys: Vec<ConnectingKey> = Vec::new();
    if ev.key_weight <= 0.0 {
        return keys;
    }
    let models: Vec<(usize, &str)> = taking_part
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| k.contains('.') && model_of(k).is_none())
        .map(|(i, (k, _))| (i, k.as_str()))
        .collect();
    let datasource = slayer_common::canonical::datasource_of;
    for (x, (_, a)) in models.iter().enumerate() {
        for (j, b) in &models[x + 1..] {
            if datasource(a) != datasource(b) {
                continue;
            }
            for key in connecting(a, b) {
                if !keys.iter().any(|k| k.key == key) {
                    keys.push(ConnectingKey { key, place: *j });
                }
            }
        }
    }
    keys
}

/// Whether a lowercased bare name is this id, or its tail of whole segments (`orders.amount`,
/// `amount`), ignoring case.
fn names(key: &str, name: &str) -> bool {
    let key = key.to_lowercase();
    key == name
        || key
            .strip_suffix(name)
            .is_some_and(|head| head.ends_with('.'))
}

/// The channel of the named refs, which take part first.
const NAMED: &str = "named";

/// Whether an id is a model's `<ds>.<model>`.
pub(crate) fn is_model(key: &str) -> bool {
    !key.starts_with("memory:") && key.matches('.').count() == 1
}

/// A fused entry's contributions summed: the reported score is a raw channel score when one
/// channel took part, and evidence must add like with like.
fn contribution_sum(f: &Fused) -> f64 {
    f.contributions.iter().map(|c| c.contribution).sum()
}

/// The derived ranking: every model with a doc or a leaf in `window`, by its own score plus
/// its best `leaves` leaf scores, best first; ties keep the order of first appearance.
pub(crate) fn derived(window: &[Fused], leaves: usize) -> Vec<(String, f64)> {
    let mut order: Vec<&str> = Vec::new();
    let mut own: rustc_hash::FxHashMap<&str, f64> = Default::default();
    let mut leaf_scores: rustc_hash::FxHashMap<&str, Vec<f64>> = Default::default();
    for f in window {
        let (model, is_leaf) = match model_of(&f.key) {
            Some(model) if !f.key.starts_with("memory:") => (model, true),
            _ if is_model(&f.key) => (f.key.as_str(), false),
            _ => continue,
        };
        if !own.contains_key(model) && !leaf_scores.contains_key(model) {
            order.push(model);
        }
        if is_leaf {
            leaf_scores
                .entry(model)
                .or_default()
                .push(contribution_sum(f));
        } else {
            own.insert(model, contribution_sum(f));
        }
    }
    let mut ranked: Vec<(String, f64)> = order
        .into_iter()
        .map(|model| {
            // Window entries come best first, so a model's leaves are already in order.
            let best: f64 = leaf_scores
                .get(model)
                .map(|s| s.iter().take(leaves).sum())
                .unwrap_or(0.0);
            (
                model.to_owned(),
                own.get(model).copied().unwrap_or(0.0) + best,
            )
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

/// Applies the evidence to the fused list's first `ev.window` entries: the named entities of
/// the window, then the derived ranking's first `ev.models` models, gain an `evidence`
/// contribution (their leaves a `leaf_weight` one), and the window is re-sorted (ties keep
/// their fused order). A taking-part model that the window does not hold is brought in with its
/// exact fused entry from `exact` (one that no channel ranked enters with the evidence alone).
/// Entries past the window keep their order after it.
pub(crate) fn apply(
    fused: Vec<Fused>,
    ev: &ModelEvidence,
    question: Option<&str>,
    exact: impl FnOnce(&[&str]) -> Result<Vec<Fused>, SearchError>,
    connecting: impl Fn(&str, &str) -> Vec<String>,
) -> Result<Vec<Fused>, SearchError> {
    if !ev.is_on() || fused.is_empty() {
        return Ok(fused);
    }
    let mut fused = fused;
    let rest = fused.split_off(ev.window.min(fused.len()));
    let mut window = fused;
    let asked = question.and_then(bare_name);
    let named = window
        .iter()
        .filter(|f| {
            f.contributions.iter().any(|c| c.channel == NAMED)
                || asked.as_deref().is_some_and(|name| names(&f.key, name))
        })
        .map(|f| (f.key.clone(), None));
    let models = derived(&window, ev.leaves)
        .into_iter()
        .take(ev.models)
        .map(|(m, mass)| (m, Some(mass)));
    let mut taking_part: Vec<(String, Option<f64>)> = Vec::new();
    for (key, mass) in named.chain(models) {
        if !taking_part.iter().any(|(k, _)| *k == key) {
            taking_part.push((key, mass));
        }
    }
    if taking_part.is_empty() {
        window.extend(rest);
        return Ok(window);
    }
    let keys = connecting_keys(&taking_part, ev, connecting);
    let question_named = question_named(&window, &taking_part, ev, question);
    let mut missing: Vec<&str> = Vec::new();
    for key in taking_part
        .iter()
        .map(|(m, _)| m)
        .chain(keys.iter().map(|k| &k.key))
    {
        if !missing.contains(&key.as_str()) && !window.iter().any(|f| f.key == *key) {
            missing.push(key);
        }
    }
    let mut rest = rest;
    if !missing.is_empty() {
        rest.retain(|f| !missing.contains(&f.key.as_str()));
        let mut found = exact(&missing)?;
        for m in &missing {
            if !found.iter().any(|f| f.key == *m) {
                found.push(Fused {
                    key: (*m).to_owned(),
                    score: 0.0,
                    contributions: Vec::new(),
                });
            }
        }
        window.extend(found);
    }
    for f in window.iter_mut() {
        // Scores become RRF sums throughout, so that evidence and channels add up.
        f.score = contribution_sum(f);
        // A pair's keys weigh by its place: the first two models' the most, each later pair
        // less, as the likelihood that the question needs both of its models falls.
        let key = keys
            .iter()
            .find(|k| k.key == f.key)
            .map(|k| (k.place, ev.key_weight / ((K + 1.0) * k.place as f64)));
        let named = question_named
            .iter()
            .find(|(k, _)| *k == f.key)
            .map(|(_, place)| (*place, ev.question_weight / (K + (place + 1) as f64)));
        for (found, channel) in [(key, KEY_CHANNEL), (named, QUESTION_CHANNEL)] {
            if let Some((place, contribution)) = found {
                f.score += contribution;
                f.contributions.push(Contribution {
                    channel,
                    rank: place + 1,
                    raw_score: None,
                    contribution,
                });
                rebury(f);
            }
        }
        let place = |key: &str| taking_part.iter().position(|(t, _)| t == key);
        // An entity taking part itself weighs `model_weight`; a leaf of a model taking part,
        // `leaf_weight`.
        let (weight, rank) = match place(&f.key) {
            Some(rank) => (ev.model_weight, rank),
            None => match model_of(&f.key).and_then(place) {
                Some(rank) => (ev.leaf_weight, rank),
                None => continue,
            },
        };
        if weight <= 0.0 {
            continue;
        }
        let contribution = weight / (K + (rank + 1) as f64);
        f.score += contribution;
        f.contributions.push(Contribution {
            channel: CHANNEL,
            rank: rank + 1,
            raw_score: taking_part[rank].1,
            contribution,
        });
        // A soft negative takes its fraction of the evidence too.
        rebury(f);
    }
    cap_keys_below_the_models(&mut window, &taking_part, &keys);
    // A stable sort: equal scores keep the fused order.
    window.sort_by(|a, b| b.score.total_cmp(&a.score));
    for f in rest.iter_mut() {
        f.score = contribution_sum(f);
    }
    window.extend(rest);
    Ok(window)
}

/// The models taking part come first, then the keys that join them: what a key gains by the
/// join never lifts it above a model taking part (a key is evidence only for a join of two of
/// them). Its `join` contribution is cut to what keeps it below the lowest (never under 0; a
/// key the channels alone place higher stays there).
fn cap_keys_below_the_models(
    window: &mut [Fused],
    taking_part: &[(String, Option<f64>)],
    keys: &[ConnectingKey],
) {
    let lowest = window
        .iter()
        .filter(|f| is_model(&f.key) && taking_part.iter().any(|(t, _)| *t == f.key))
        .map(|f| f.score)
        .min_by(f64::total_cmp);
    let Some(cap) = lowest else {
        return;
    };
    for f in window.iter_mut() {
        if keys.iter().any(|k| k.key == f.key) {
            cap_join(f, cap);
        }
    }
}

/// Cuts a `join` contribution so that the score stays below `cap` (see
/// [`cap_keys_below_the_models`]).
fn cap_join(f: &mut Fused, cap: f64) {
    let Some(at) = f
        .contributions
        .iter()
        .position(|c| c.channel == KEY_CHANNEL)
    else {
        return;
    };
    let target = cap.next_down();
    // The score before a soft negative's share: burying only lowers a positive score.
    let others: f64 = f
        .contributions
        .iter()
        .filter(|c| c.channel != BURIED)
        .map(|c| c.contribution)
        .sum();
    if others <= target {
        return;
    }
    let join = f.contributions[at].contribution;
    let cut = (others - target).min(join);
    f.contributions[at].contribution = join - cut;
    f.score = others - cut;
    // A soft negative's share, taken again of the lowered sum (nothing without one).
    rebury(f);
    if cut < join {
        f.score = f.score.min(target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, rank: usize) -> Fused {
        let rrf = 1.0 / (K + rank as f64);
        Fused {
            key: key.into(),
            score: rrf,
            contributions: vec![Contribution {
                channel: "fulltext",
                rank,
                raw_score: Some(10.0 / rank as f64),
                contribution: rrf,
            }],
        }
    }

    fn list(keys: &[&str]) -> Vec<Fused> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| entry(k, i + 1))
            .collect()
    }

    fn keys(fused: &[Fused]) -> Vec<&str> {
        fused.iter().map(|f| f.key.as_str()).collect()
    }

    fn no_exact(_: &[&str]) -> Result<Vec<Fused>, SearchError> {
        Ok(Vec::new())
    }

    fn no_keys(_: &str, _: &str) -> Vec<String> {
        Vec::new()
    }

    #[test]
    fn ids_parse_by_segments() {
        assert_eq!(model_of("db.orders.amount"), Some("db.orders"));
        assert_eq!(model_of("db.orders"), None);
        assert!(is_model("db.orders"));
        assert!(!is_model("db"));
        assert!(!is_model("db.orders.amount"));
        assert!(!is_model("memory:a.b"));
    }

    #[test]
    fn a_model_ranks_by_its_own_place_and_its_best_leaves() {
        let window = list(&["db.o.a", "db.o.b", "db.c", "db.c.x", "db.o.z", "db.o"]);
        let d = derived(&window, 2);
        let o = 1.0 / 61.0 + 1.0 / 62.0 + 1.0 / 66.0;
        let c = 1.0 / 63.0 + 1.0 / 64.0;
        assert_eq!(d, vec![("db.o".to_owned(), o), ("db.c".to_owned(), c)]);
    }

    #[test]
    fn the_models_of_the_best_columns_rise_above_them() {
        let fused = list(&["db.o.a", "db.o.b", "db.c.x", "db", "db.o", "db.c", "db.p"]);
        let ev = ModelEvidence {
            models: 2,
            ..ModelEvidence::default()
        };
        let out = apply(fused, &ev, None, no_exact, no_keys).unwrap();
        assert_eq!(
            keys(&out),
            ["db.o", "db.c", "db.o.a", "db.o.b", "db.c.x", "db", "db.p"]
        );
        let o = &out[0];
        assert_eq!(o.contributions.last().unwrap().channel, CHANNEL);
        assert!((o.score - (1.0 / 65.0 + 2.0 / 61.0)).abs() < 1e-15);
    }

    #[test]
    fn a_model_outside_the_window_comes_in_with_its_exact_entry() {
        let mut fused = list(&["db.o.a", "db.o.b", "db.c.x"]);
        fused.push(entry("db.o", 40));
        let ev = ModelEvidence {
            window: 3,
            models: 1,
            ..ModelEvidence::default()
        };
        let out = apply(
            fused,
            &ev,
            None,
            |keys| {
                assert_eq!(keys, ["db.o"]);
                Ok(vec![entry("db.o", 40)])
            },
            no_keys,
        )
        .unwrap();
        assert_eq!(keys(&out), ["db.o", "db.o.a", "db.o.b", "db.c.x"]);
        assert_eq!(out[0].contributions.len(), 2);
    }

    /// Two models taking part bring in the keys that connect them, the later model's place
    /// setting the weight; a column already in the window gains the key evidence too.
    #[test]
    fn keys_connecting_two_models_taking_part_gain_evidence() {
        let fused = list(&["db.o.a", "db.o", "db.c.name", "db.c", "db.o.cust_id"]);
        let ev = ModelEvidence {
            leaf_weight: 0.0,
            ..ModelEvidence::default()
        };
        let out = apply(fused, &ev, None, no_exact, |a, b| {
            assert_eq!((a, b), ("db.o", "db.c"));
            vec!["db.o.cust_id".into(), "db.c.cust_id".into()]
        })
        .unwrap();
        for key in ["db.o.cust_id", "db.c.cust_id"] {
            let f = out.iter().find(|f| f.key == key).unwrap();
            let join = f.contributions.iter().find(|c| c.channel == KEY_CHANNEL);
            let join = join.unwrap_or_else(|| panic!("{f:?}"));
            assert_eq!(join.rank, 2);
            assert!((join.contribution - 0.75 / 61.0).abs() < 1e-15);
        }
        // Keys are off at weight 0.
        let off = ModelEvidence {
            key_weight: 0.0,
            ..ev
        };
        let out = apply(
            list(&["db.o.a", "db.o", "db.c"]),
            &off,
            None,
            no_exact,
            |_, _| panic!("not asked when off"),
        )
        .unwrap();
        assert!(out
            .iter()
            .all(|f| f.contributions.iter().all(|c| c.channel != KEY_CHANNEL)));
    }

    /// The first two models' keys weigh `key_weight / 61`, a pair whose later model is third
    /// half that; a key found by two pairs keeps its first pair's weight.
    #[test]
    fn a_later_pair_s_keys_weigh_less() {
        let fused = list(&["db.a", "db.b", "db.c", "db.a.x", "db.b.y", "db.c.z"]);
        let ev = ModelEvidence {
            leaf_weight: 0.0,
            ..ModelEvidence::default()
        };
        let out = apply(fused, &ev, None, no_exact, |a, b| match (a, b) {
            ("db.a", "db.b") => vec!["db.a.x".into(), "db.b.y".into()],
            ("db.a", "db.c") => vec!["db.a.x".into(), "db.c.z".into()],
            _ => Vec::new(),
        })
        .unwrap();
        let join = |key: &str| {
            let f = out.iter().find(|f| f.key == key).unwrap();
            let c = f.contributions.iter().find(|c| c.channel == KEY_CHANNEL);
            c.map(|c| (c.rank, c.contribution)).unwrap()
        };
        assert_eq!(join("db.a.x"), (2, 0.75 / 61.0));
        assert_eq!(join("db.b.y"), (2, 0.75 / 61.0));
        assert_eq!(join("db.c.z"), (3, 0.75 / 122.0));
    }

    /// What the join adds never lifts a key above a model taking part; the channels alone
    /// may place it higher.
    #[test]
    fn keys_stay_below_the_models_taking_part() {
        // `db.b` and `db.c` come in last: their evidence alone puts them just above the keys'
        // channels; `db.b` takes part without being joined.
        let fused = list(&["db.a.k", "db.c.k", "db.a", "db.b.m", "db.c", "db.b"]);
        let ev = ModelEvidence {
            leaf_weight: 0.0,
            key_weight: 5.0,
            models: 3,
            ..ModelEvidence::default()
        };
        let connecting = |a: &str, b: &str| match (a, b) {
            ("db.a", "db.c") | ("db.c", "db.a") => vec!["db.a.k".into(), "db.c.k".into()],
            _ => Vec::new(),
        };
        let out = apply(fused.clone(), &ev, None, no_exact, connecting).unwrap();
        assert_eq!(keys(&out)[..3], ["db.a", "db.c", "db.b"]);
        let lowest = out[2].score;
        for key in ["db.a.k", "db.c.k"] {
            let f = out.iter().find(|f| f.key == key).unwrap();
            assert!(f.score < lowest, "{f:?}");
            // The explanation still adds up to the score.
            let sum: f64 = f.contributions.iter().map(|x| x.contribution).sum();
            assert!((sum - f.score).abs() < 1e-12, "{f:?}");
            let join = f.contributions.iter().find(|x| x.channel == KEY_CHANNEL);
            assert!(join.unwrap().contribution > 0.0);
        }
        // Without the cap's need (a small weight), the join adds in full.
        let small = ModelEvidence {
            key_weight: 0.1,
            ..ev
        };
        let out = apply(fused, &small, None, no_exact, connecting).unwrap();
        let f = out.iter().find(|f| f.key == "db.a.k").unwrap();
        let join = f.contributions.iter().find(|x| x.channel == KEY_CHANNEL);
        assert_eq!(join.unwrap().contribution, 0.1 / 61.0);
    }

    /// A name two models share names one thing: only its first leaf in fused order gains.
    #[test]
    fn a_name_shared_by_two_models_counts_for_its_first_leaf() {
        let fused = list(&["db.o", "db.p", "db.p.name", "db.o.name", "db.o.year"]);
        let ev = ModelEvidence {
            models: 2,
            ..ModelEvidence::default()
        };
        let out = apply(
            fused,
            &ev,
            Some("Name and year of each?"),
            no_exact,
            no_keys,
        )
        .unwrap();
        let named = |key: &str| {
            let f = out.iter().find(|f| f.key == key).unwrap();
            f.contributions
                .iter()
                .find(|c| c.channel == QUESTION_CHANNEL)
                .map(|c| c.rank)
        };
        assert_eq!(named("db.p.name"), Some(1));
        assert_eq!(named("db.o.name"), None);
        assert_eq!(named("db.o.year"), Some(2));
    }

    /// A leaf of a model taking part whose name the question holds gains evidence, by its
    /// place among such leaves; a longer name takes the words of a shorter one, and the leaves
    /// of a model not taking part gain nothing.
    #[test]
    fn leaves_the_question_names_gain_evidence() {
        let fused = list(&[
            "db.o.a",
            "db.o",
            "db.o.name",
            "db.o.county_name",
            "db.p.zip",
            "db.o.zip",
        ]);
        let ev = ModelEvidence {
            models: 1,
            question_weight: 0.5,
            ..ModelEvidence::default()
        };
        let question = Some("zip and County Name of each?");
        let out = apply(fused, &ev, question, no_exact, no_keys).unwrap();
        let named = |key: &str| {
            let f = out.iter().find(|f| f.key == key).unwrap();
            f.contributions
                .iter()
                .find(|c| c.channel == QUESTION_CHANNEL)
                .map(|c| (c.rank, c.contribution))
        };
        assert_eq!(named("db.o.county_name"), Some((1, 0.5 / 61.0)));
        assert_eq!(named("db.o.zip"), Some((2, 0.5 / 62.0)));
        assert_eq!(named("db.o.name"), None, "county name took its word");
        assert_eq!(named("db.p.zip"), None, "db.p takes no part");
        // Off at weight 0.
        let off = ModelEvidence {
            question_weight: 0.0,
            ..ev
        };
        let out = apply(
            list(&["db.o", "db.o.zip"]),
            &off,
            question,
            no_exact,
            no_keys,
        )
        .unwrap();
        assert!(out.iter().all(|f| f
            .contributions
            .iter()
            .all(|c| c.channel != QUESTION_CHANNEL)));
    }

    #[test]
    fn named_entities_take_part_first_then_the_derived_models() {
        let mut fused = list(&["db.c.x", "db.o.a", "db.o.b", "db.o", "db.c"]);
        fused[0].contributions[0].channel = NAMED;
        let ev = ModelEvidence {
            models: 1,
            ..ModelEvidence::default()
        };
        let out = apply(fused, &ev, None, no_exact, no_keys).unwrap();
        assert_eq!(keys(&out), ["db.c.x", "db.o", "db.o.a", "db.o.b", "db.c"]);
        let evidence = out[0].contributions.last().unwrap();
        assert_eq!((evidence.channel, evidence.rank), (CHANNEL, 1));
        assert_eq!(evidence.raw_score, None);
        // The model ranks second in the evidence; its leaves draw on it with leaf_weight.
        assert_eq!(out[1].contributions.last().unwrap().rank, 2);
        let leaf = out[2].contributions.last().unwrap();
        assert!((leaf.contribution - 0.2 / 62.0).abs() < 1e-15);
    }

    #[test]
    fn a_question_that_is_an_entity_s_name_puts_that_entity_first() {
        let fused = list(&["db.o.a", "db.o.b", "db.c.x", "db.o", "db.c"]);
        let ev = ModelEvidence::default();
        for question in ["c.X", " `X`? ", "db.c.x"] {
            let out = apply(fused.clone(), &ev, Some(question), no_exact, no_keys).unwrap();
            assert_eq!(keys(&out)[0], "db.c.x", "{question}");
        }
        // A sentence, or a name that is only a character suffix, is not an exact name.
        for question in ["c x", "x y", ".x", "b.x"] {
            let out = apply(fused.clone(), &ev, Some(question), no_exact, no_keys).unwrap();
            assert_eq!(keys(&out)[0], "db.o", "{question}");
        }
        assert!(names("db.orders.amount", "orders.amount"));
        assert!(!names("db.orders.amount", "rders.amount"));
    }

    #[test]
    fn off_changes_nothing() {
        let fused = list(&["db.o.a", "db.o"]);
        let out = apply(fused.clone(), &ModelEvidence::OFF, None, no_exact, no_keys).unwrap();
        assert_eq!(out, fused);
    }
}
