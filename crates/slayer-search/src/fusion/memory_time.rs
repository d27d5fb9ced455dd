//! The time rules of the memory side (docs/spec/fusion.md §8.10): when a question names a time,
//! asks when, or wants the latest or the earliest, the first [`TIME_WINDOW`] fused memories
//! are re-scored by how well each fits ([`TimeCues::fit`]): score × (1 + weight × fit), the
//! rest of the order kept. A memory without an event time or a stated time loses nothing; it
//! is only passed by those that fit. Pure: the event times and texts come from the caller.

use std::collections::HashMap;

use slayer_common::canonical::memory_id_of;
use time::Date;

use crate::fusion::fuse::{Contribution, Fused};
use crate::time_cues::{event_day, TimeCues};

/// How many of the fused memories the time rules read, whatever the cap, so a smaller cap
/// gives a prefix of a larger one (up to this many). Filling the memory side this deep is what
/// a time cue costs: served at 100,000 memories, about +2.7 ms a question at 20, +4.3 at 30 and
/// +5.5 at 50, for LoCoMo dev recall@10 0.738, 0.741 and 0.741 (docs/quality/locomo.md).
pub(crate) const TIME_WINDOW: usize = 20;

/// The channel name of a time fit's share of a fused score; its `raw_score` is the fit.
pub(crate) const TIME: &str = "time";

/// `fused` (the head of the memory side's order) re-scored by the question's time cues and
/// re-sorted, equal scores keeping their order. `event_times` holds the event time of the
/// memories that have one (by id), `texts` their doc texts (by `memory:<id>` key; read only
/// when the question asks when).
pub(crate) fn arrange(
    mut fused: Vec<Fused>,
    cues: &TimeCues,
    weight: f64,
    event_times: &HashMap<String, String>,
    texts: &HashMap<String, String>,
) -> Vec<Fused> {
    let day_of = |f: &Fused| -> Option<Date> {
        let id = memory_id_of(&f.key)?;
        event_day(event_times.get(id)?)
    };
    let days: Vec<Option<Date>> = fused.iter().map(day_of).collect();
    let oldest = days.iter().flatten().min().copied();
    let newest = days.iter().flatten().max().copied();
    let newness = |day: Option<Date>| -> Option<f64> {
        let (day, oldest, newest) = (day?, oldest?, newest?);
        let span = (newest - oldest).whole_days();
        (span > 0).then(|| (day - oldest).whole_days() as f64 / span as f64)
    };
    for (place, (f, day)) in fused.iter_mut().zip(&days).enumerate() {
        let text = texts.get(&f.key).map(String::as_str).unwrap_or("");
        let fit = cues.fit(*day, text, newness(*day));
        if fit <= 0.0 {
            continue;
        }
        let gained = f.score.abs() * weight * fit;
        f.contributions.push(Contribution {
            channel: TIME,
            rank: place + 1,
            raw_score: Some(fit),
            contribution: gained,
        });
        f.score += gained;
    }
    // A stable sort: equal scores keep the fused order.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn fused(id: &str, score: f64) -> Fused {
        Fused {
            key: format!("memory:{id}"),
            score,
            contributions: vec![],
        }
    }

    fn order(list: &[Fused]) -> Vec<&str> {
        list.iter().map(|f| f.key.as_str()).collect()
    }

    #[test]
    fn a_memory_of_the_named_month_passes_a_closer_word_match() {
        let cues = TimeCues::of("What did Maria cook in May 2023?", date!(2024 - 01 - 01));
        let times: HashMap<String, String> = [
            ("a".to_owned(), "2023-02-01".to_owned()),
            ("b".to_owned(), "2023-05-20T10:00:00Z".to_owned()),
        ]
        .into();
        let out = arrange(
            vec![fused("a", 1.0), fused("b", 0.8), fused("c", 0.7)],
            &cues,
            0.5,
            &times,
            &HashMap::new(),
        );
        assert_eq!(order(&out), ["memory:b", "memory:a", "memory:c"]);
        assert!((out[0].score - 1.2).abs() < 1e-12, "{}", out[0].score);
        assert_eq!(out[0].contributions[0].channel, TIME);
        assert_eq!(out[0].contributions[0].raw_score, Some(1.0));
    }

    #[test]
    fn a_when_question_favours_a_memory_that_states_a_time() {
        let cues = TimeCues::of(
            "When did Caroline go to the support group?",
            date!(2024 - 01 - 01),
        );
        let texts: HashMap<String, String> = [
            (
                "memory:a".to_owned(),
                "Caroline: the support group was great".to_owned(),
            ),
            (
                "memory:b".to_owned(),
                "Caroline: I went to a support group yesterday".to_owned(),
            ),
        ]
        .into();
        let out = arrange(
            vec![fused("a", 1.0), fused("b", 0.9)],
            &cues,
            0.5,
            &HashMap::new(),
            &texts,
        );
        assert_eq!(order(&out), ["memory:b", "memory:a"]);
    }

    #[test]
    fn no_cue_and_no_time_change_nothing() {
        let cues = TimeCues::of("What does Caroline paint?", date!(2024 - 01 - 01));
        let before = vec![fused("a", 1.0), fused("b", 1.0), fused("c", 0.5)];
        let out = arrange(before.clone(), &cues, 0.5, &HashMap::new(), &HashMap::new());
        assert_eq!(out, before);
    }

    #[test]
    fn the_latest_is_wanted_first_when_asked() {
        let cues = TimeCues::of("Where does Tim live now?", date!(2024 - 01 - 01));
        let times: HashMap<String, String> = [
            ("old".to_owned(), "2021-03".to_owned()),
            ("new".to_owned(), "2023-09".to_owned()),
        ]
        .into();
        let out = arrange(
            vec![fused("old", 1.0), fused("new", 0.9)],
            &cues,
            0.5,
            &times,
            &HashMap::new(),
        );
        assert_eq!(order(&out), ["memory:new", "memory:old"]);
    }
}
