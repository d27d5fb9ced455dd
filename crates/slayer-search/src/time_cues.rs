//! What a question says about time, and how well a memory fits it (docs/spec/fusion.md
//! §8.10): the periods it names ("in May 2023", "on 3 May, 2023", "last year", "before
//! August 2023", "between August 11 and August 15 2023"), whether it asks when something
//! happened ("when …", "what year …", "how long ago …"), and whether it wants the latest or
//! the earliest of what matches ("most recent", "currently", "first"). Pure: the memories'
//! event times and texts come from the caller.

use time::{Date, Duration, Month};

/// A memory told up to this long after a named period still tells of it: people say "last
/// week" or "in May" after the fact.
const TOLD_AFTER: Duration = Duration::days(31);

/// What counts toward a memory's fit, each from 0 to 1.
const PERIOD_FIT: f64 = 1.0;
const TOLD_AFTER_FIT: f64 = 0.5;
const STATES_A_TIME_FIT: f64 = 1.0;
const ORDER_FIT: f64 = 0.5;

/// A stretch of time a question names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Period {
    /// Days from `start` up to `end`, not including it.
    Range {
        /// The first day.
        start: Date,
        /// The day after the last.
        end: Date,
    },
    /// A month of any year ("in May", the year not said).
    Month(Month),
}

impl Period {
    fn of_day(day: Date) -> Period {
        Period::Range {
            start: day,
            end: day.next_day().unwrap_or(day),
        }
    }

    fn of_month(year: i32, month: Month) -> Option<Period> {
        let start = Date::from_calendar_date(year, month, 1).ok()?;
        let end = match month {
            Month::December => Date::from_calendar_date(year + 1, Month::January, 1).ok()?,
            m => Date::from_calendar_date(year, m.next(), 1).ok()?,
        };
        Some(Period::Range { start, end })
    }

    fn of_year(year: i32) -> Option<Period> {
        Some(Period::Range {
            start: Date::from_calendar_date(year, Month::January, 1).ok()?,
            end: Date::from_calendar_date(year + 1, Month::January, 1).ok()?,
        })
    }

    fn bounds(self) -> Option<(Date, Date)> {
        match self {
            Period::Range { start, end } => Some((start, end)),
            Period::Month(_) => None,
        }
    }

    /// 1 when `day` falls in the period, [`TOLD_AFTER_FIT`] when it falls within
    /// [`TOLD_AFTER`] after its end, else 0.
    fn fit(self, day: Date) -> f64 {
        match self {
            Period::Range { start, end } if day >= start && day < end => PERIOD_FIT,
            Period::Range { start, end }
                if day >= start && day < end.checked_add(TOLD_AFTER).unwrap_or(Date::MAX) =>
            {
                TOLD_AFTER_FIT
            }
            Period::Range { .. } => 0.0,
            Period::Month(m) if day.month() == m => PERIOD_FIT,
            Period::Month(m) if day.checked_sub(TOLD_AFTER).is_some_and(|d| d.month() == m) => {
                TOLD_AFTER_FIT
            }
            Period::Month(_) => 0.0,
        }
    }
}

/// Which end of the matching memories a question wants first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// "most recent", "latest", "currently", "still", "as of …".
    Latest,
    /// "first", "earliest", "initially", "originally".
    Earliest,
}

/// What a question says about time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TimeCues {
    /// It asks when (or how long ago) something happened.
    pub asks_when: bool,
    /// The periods it names.
    pub periods: Vec<Period>,
    /// The end of the matches it wants first.
    pub order: Option<Order>,
}

impl TimeCues {
    /// The cues of `question`, relative times read against `today`.
    pub(crate) fn of(question: &str, today: Date) -> TimeCues {
        let words = words(question);
        let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
        TimeCues {
            asks_when: is_question(question, &lower) && asks_when(&lower),
            periods: periods(&words, &lower, today),
            order: order(&lower),
        }
    }

    /// Whether the question says nothing about time.
    pub(crate) fn is_empty(&self) -> bool {
        !self.asks_when && self.periods.is_empty() && self.order.is_none()
    }

    /// How well a memory fits, 0 to 1: its event time in a named period, its text stating a
    /// time when the question asks when, and `newness` (0 the oldest of the candidates, 1
    /// the newest) toward the end the question wants.
    pub(crate) fn fit(&self, event_day: Option<Date>, text: &str, newness: Option<f64>) -> f64 {
        let mut fit = 0.0;
        if let Some(day) = event_day {
            fit += self.periods.iter().map(|p| p.fit(day)).fold(0.0, f64::max);
        }
        if self.asks_when && states_a_time(text) {
            fit += STATES_A_TIME_FIT;
        }
        match (self.order, newness) {
            (Some(Order::Latest), Some(n)) => fit += ORDER_FIT * n,
            (Some(Order::Earliest), Some(n)) => fit += ORDER_FIT * (1.0 - n),
            _ => {}
        }
        fit.min(1.0)
    }
}

/// The day an event time names (its first day for a year or a month): `2023` → 2023-01-01.
pub(crate) fn event_day(event_time: &str) -> Option<Date> {
    let number = |range: std::ops::Range<usize>| event_time.get(range)?.parse::<u32>().ok();
    let year = number(0..4)? as i32;
    let month = number(5..7).unwrap_or(1);
    let day = number(8..10).unwrap_or(1);
    Date::from_calendar_date(year, Month::try_from(month as u8).ok()?, day as u8).ok()
}

/// The words of a text: runs of letters, digits and apostrophes, with their case.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether the text asks: it ends with a question mark or opens with a question word. A claim
/// ("… is faster when inoculated early") says "when" without asking it.
fn is_question(text: &str, lower: &[&str]) -> bool {
    text.trim_end().ends_with('?')
        || matches!(
            lower.first().copied(),
            Some("when" | "what" | "which" | "how" | "since")
        )
}

fn asks_when(lower: &[&str]) -> bool {
    let at = |i: usize| lower.get(i).copied().unwrap_or("");
    lower.iter().enumerate().any(|(i, w)| match *w {
        "when" => true,
        "what" | "which" => matches!(at(i + 1), "year" | "month" | "date" | "day" | "time"),
        "how" => at(i + 1) == "long" || (at(i + 1) == "many" && is_unit(at(i + 2))),
        "since" => at(i + 1) == "when",
        _ => false,
    })
}

fn order(lower: &[&str]) -> Option<Order> {
    let at = |i: usize| lower.get(i).copied().unwrap_or("");
    for (i, w) in lower.iter().enumerate() {
        let found = match *w {
            "latest" | "recently" | "currently" | "current" | "nowadays" | "still" => {
                Some(Order::Latest)
            }
            "most" if matches!(at(i + 1), "recent" | "recently") => Some(Order::Latest),
            "as" if at(i + 1) == "of" => Some(Order::Latest),
            "now" if i > 0 => Some(Order::Latest),
            "first" | "earliest" | "initially" | "originally" => Some(Order::Earliest),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

fn is_unit(w: &str) -> bool {
    matches!(
        w,
        "day" | "days" | "week" | "weeks" | "month" | "months" | "year" | "years" | "hours"
    )
}

fn month_of(
    word: &str,
    lower: &str,
    next_is_number: bool,
    after_preposition: bool,
) -> Option<Month> {
    let month = match lower {
        "january" | "jan" => Month::January,
        "february" | "feb" => Month::February,
        "march" | "mar" => Month::March,
        "april" | "apr" => Month::April,
        "may" => Month::May,
        "june" | "jun" => Month::June,
        "july" | "jul" => Month::July,
        "august" | "aug" => Month::August,
        "september" | "sep" | "sept" => Month::September,
        "october" | "oct" => Month::October,
        "november" | "nov" => Month::November,
        "december" | "dec" => Month::December,
        _ => return None,
    };
    // "may", "march" and the short forms are ordinary words too: a month only when written
    // with a capital and beside a number or after "in", "of", "since", …
    let plain_word = matches!(lower, "may" | "march") || lower.len() <= 4;
    let capital = word.starts_with(|c: char| c.is_uppercase());
    if plain_word && !(capital && (next_is_number || after_preposition)) {
        return None;
    }
    Some(month)
}

fn year_of(w: &str) -> Option<i32> {
    let y: i32 = w.parse().ok()?;
    (w.len() == 4 && (1900..=2099).contains(&y)).then_some(y)
}

fn day_of(w: &str) -> Option<u8> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[digits.len()..];
    let ordinal = suffix.is_empty() || matches!(suffix, "st" | "nd" | "rd" | "th");
    let d: u8 = digits.parse().ok()?;
    (ordinal && (1..=31).contains(&d)).then_some(d)
}

/// One date or month a question names, at `i`: the period and how many words it took.
fn date_at(words: &[&str], lower: &[&str], i: usize) -> Option<(Period, usize)> {
    let at = |j: usize| lower.get(j).copied().unwrap_or("");
    let after_preposition = i > 0
        && matches!(
            at(i - 1),
            "in" | "on" | "of" | "since" | "before" | "after" | "during" | "until" | "by" | "and"
        );
    let numeric = |j: usize| at(j).starts_with(|c: char| c.is_ascii_digit());
    // "May 3, 2023", "May 2023", "May 3", "May".
    if let Some(m) = month_of(words[i], lower[i], numeric(i + 1), after_preposition) {
        if let Some(d) = day_of(at(i + 1)) {
            if let Some(y) = year_of(at(i + 2)) {
                let day = Date::from_calendar_date(y, m, d).ok()?;
                return Some((Period::of_day(day), 3));
            }
        }
        if let Some(y) = year_of(at(i + 1)) {
            return Some((Period::of_month(y, m)?, 2));
        }
        return Some((Period::Month(m), 1));
    }
    // "3 May, 2023", "3 May 2023".
    if let Some(d) = day_of(lower[i]) {
        let next_is_number = numeric(i + 2);
        if let Some(m) = month_of(words.get(i + 1)?, at(i + 1), next_is_number, true) {
            if let Some(y) = year_of(at(i + 2)) {
                let day = Date::from_calendar_date(y, m, d).ok()?;
                return Some((Period::of_day(day), 3));
            }
            return Some((Period::Month(m), 2));
        }
    }
    // "in 2022".
    if let Some(y) = year_of(lower[i]) {
        return Some((Period::of_year(y)?, 1));
    }
    None
}

/// A relative time at `i` ("yesterday", "last year", "3 weeks ago") against `today`.
fn relative_at(lower: &[&str], i: usize, today: Date) -> Option<(Period, usize)> {
    let at = |j: usize| lower.get(j).copied().unwrap_or("");
    let span = |start: Date, end: Date| Period::Range { start, end };
    // A day so far back that the calendar lacks it ("99999999 years ago") names no period.
    let back = |days: i64| today.checked_sub(Duration::days(days.min(i64::from(i32::MAX))));
    match (at(i), at(i + 1)) {
        ("yesterday", _) => Some((Period::of_day(today.previous_day()?), 1)),
        ("today", _) | ("tonight", _) => Some((Period::of_day(today), 1)),
        ("last" | "past", "week" | "weekend") => Some((span(back(7)?, today), 2)),
        ("last" | "past", "month") => Some((span(back(31)?, today), 2)),
        ("last", "year") => Some((Period::of_year(today.year() - 1)?, 2)),
        ("this", "year") => Some((Period::of_year(today.year())?, 2)),
        ("this", "month") => Some((Period::of_month(today.year(), today.month())?, 2)),
        ("past", "year") => Some((span(back(365)?, today), 2)),
        (n, unit) if at(i + 2) == "ago" && is_unit(unit) => {
            let n: i64 = match n {
                "a" | "an" | "one" => 1,
                "two" => 2,
                "three" => 3,
                "four" => 4,
                "five" => 5,
                other => other.parse().ok()?,
            };
            let days = match unit.trim_end_matches('s') {
                "day" => n,
                "week" => 7 * n,
                "month" => 31 * n,
                "year" => 365 * n,
                _ => return None,
            };
            let day = back(days)?;
            // As precise as its unit: "3 years ago" is that year give or take.
            let half = Duration::days((days / 6).max(1));
            let start = day.checked_sub(half)?;
            Some((span(start, day.checked_add(half)?), 3))
        }
        _ => None,
    }
}

fn periods(words: &[&str], lower: &[&str], today: Date) -> Vec<Period> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < lower.len() {
        let Some((period, used)) =
            date_at(words, lower, i).or_else(|| relative_at(lower, i, today))
        else {
            i += 1;
            continue;
        };
        let before = if i > 0 { lower[i - 1] } else { "" };
        let early = Date::MIN;
        let late = Date::MAX;
        let widened = match (before, period.bounds()) {
            ("before" | "until", Some((start, _))) => Period::Range {
                start: early,
                end: start,
            },
            ("after" | "since", Some((_, end))) => Period::Range {
                start: end,
                end: late,
            },
            ("of", Some((_, end))) if i >= 2 && lower[i - 2] == "as" => {
                Period::Range { start: early, end }
            }
            _ => period,
        };
        // "between A and B": one stretch from A's start to B's end.
        let between = before == "and" && i >= 2 && found.last().is_some() && {
            let mut j = i - 1;
            while j > 0 && lower[j] != "between" {
                j -= 1;
            }
            lower[j] == "between"
        };
        match (
            between,
            found.last().copied().and_then(Period::bounds),
            widened.bounds(),
        ) {
            (true, Some((start, _)), Some((_, end))) => {
                found.pop();
                found.push(Period::Range { start, end });
            }
            _ => found.push(widened),
        }
        i += used;
    }
    found
}

/// Whether a memory's text states a time: a date, a month, a year, a weekday or words such
/// as "yesterday", "last week", "two years ago", "since".
pub(crate) fn states_a_time(text: &str) -> bool {
    let words = words(text);
    words.iter().enumerate().any(|(i, w)| {
        let lower = w.to_lowercase();
        let next = words
            .get(i + 1)
            .map(|n| n.to_lowercase())
            .unwrap_or_default();
        let after_preposition = i > 0
            && matches!(
                words[i - 1].to_lowercase().as_str(),
                "in" | "on" | "of" | "since" | "last" | "next" | "this" | "until" | "by"
            );
        let next_is_number = next.starts_with(|c: char| c.is_ascii_digit());
        match lower.as_str() {
            "yesterday" | "today" | "tonight" | "tomorrow" | "ago" | "recently" | "lately"
            | "weekend" | "monday" | "tuesday" | "wednesday" | "thursday" | "friday"
            | "saturday" | "sunday" | "summer" | "winter" | "spring" | "autumn" | "birthday"
            | "anniversary" => true,
            "last" | "next" | "this" | "past" | "few" | "couple" => {
                matches!(
                    next.as_str(),
                    "week"
                        | "weeks"
                        | "month"
                        | "months"
                        | "year"
                        | "years"
                        | "night"
                        | "fri"
                        | "weekend"
                        | "time"
                        | "summer"
                        | "days"
                )
            }
            "since" => true,
            _ => {
                year_of(&lower).is_some()
                    || month_of(w, &lower, next_is_number, after_preposition).is_some()
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    const TODAY: Date = date!(2024 - 01 - 10);

    fn range(start: Date, end: Date) -> Period {
        Period::Range { start, end }
    }

    #[test]
    fn named_dates_months_and_years_are_periods() {
        let cues = |q: &str| TimeCues::of(q, TODAY).periods;
        assert_eq!(
            cues("Who did Maria have dinner with on May 3, 2023?"),
            [range(date!(2023 - 05 - 03), date!(2023 - 05 - 04))]
        );
        assert_eq!(
            cues("What movie did Joanna watch on 1 May, 2022?"),
            [range(date!(2022 - 05 - 01), date!(2022 - 05 - 02))]
        );
        assert_eq!(
            cues("What did John attend in March 2023?"),
            [range(date!(2023 - 03 - 01), date!(2023 - 04 - 01))]
        );
        assert_eq!(
            cues("When did Melanie go camping in June?"),
            [Period::Month(Month::June)]
        );
        assert_eq!(
            cues("Where did Joanna travel in 2022?"),
            [range(date!(2022 - 01 - 01), date!(2023 - 01 - 01))]
        );
        assert_eq!(
            cues("Where was John between August 11 and August 15 2023?")
                .last()
                .copied()
                .and_then(Period::bounds)
                .map(|(_, end)| end),
            Some(date!(2023 - 08 - 16))
        );
        assert_eq!(
            cues("Did Andrew have a dog before August 2023?"),
            [range(Date::MIN, date!(2023 - 08 - 01))]
        );
        // Words that only look like months are not.
        assert!(cues("What may Caroline march for?").is_empty());
        assert!(cues("How much revenue did orders make?").is_empty());
    }

    #[test]
    fn times_past_the_calendar_name_no_period_and_never_panic() {
        let cues = TimeCues::of(
            "What happened 99999999999 years ago, after May 2023?",
            TODAY,
        );
        let after = cues.periods.last().copied().unwrap();
        assert_eq!(after.bounds().map(|(_, end)| end), Some(Date::MAX));
        assert_eq!(after.fit(date!(2030 - 01 - 01)), 1.0);
        assert_eq!(Period::Month(Month::December).fit(Date::MIN), 0.0);
        let at_the_edge = TimeCues::of("What was said 1 day ago?", Date::MIN);
        assert!(at_the_edge.periods.is_empty());
    }

    #[test]
    fn relative_times_read_against_today() {
        let cues = |q: &str| TimeCues::of(q, TODAY).periods;
        assert_eq!(
            cues("What did we decide last year?"),
            [range(date!(2023 - 01 - 01), date!(2024 - 01 - 01))]
        );
        assert_eq!(
            cues("What broke yesterday?"),
            [range(date!(2024 - 01 - 09), date!(2024 - 01 - 10))]
        );
        let [Period::Range { start, end }] = cues("What did she say two weeks ago?")[..] else {
            panic!("one range");
        };
        assert!(start < date!(2023 - 12 - 27) && end > date!(2023 - 12 - 27));
    }

    #[test]
    fn when_questions_and_orders_are_told() {
        let of = |q: &str| TimeCues::of(q, TODAY);
        assert!(of("When did Caroline go to the support group?").asks_when);
        assert!(of("How long has Nate had his turtles?").asks_when);
        assert!(of("Which year did Audrey adopt her dogs?").asks_when);
        assert!(!of("What did Caroline research?").asks_when);
        // A claim says "when" without asking it.
        assert!(!of("Entrainment is stronger when people see congruent cues.").asks_when);
        assert!(of("Is entrainment stronger when people see congruent cues?").asks_when);
        assert!(of("What did Caroline research?").is_empty());
        assert_eq!(of("Where does Tim live now?").order, Some(Order::Latest));
        assert_eq!(
            of("What is her most recent job?").order,
            Some(Order::Latest)
        );
        assert_eq!(
            of("When did Nate win his first tournament?").order,
            Some(Order::Earliest)
        );
        assert_eq!(of("Now, what is revenue?").order, None);
    }

    #[test]
    fn a_memory_fits_by_its_event_time_its_words_and_its_newness() {
        let june = TimeCues::of("When did Melanie go camping in June?", TODAY);
        let day = |s: &str| event_day(s);
        assert_eq!(
            june.fit(day("2023-06-27T10:00:00Z"), "We went camping.", None),
            1.0
        );
        // Told in early July of a trip in June.
        assert_eq!(june.fit(day("2023-07-03"), "We went camping.", None), 0.5);
        // The question asks when: a memory that states a time fits too (capped at 1).
        assert_eq!(
            june.fit(day("2023-03-01"), "We went camping last week.", None),
            1.0
        );
        assert_eq!(june.fit(None, "We love camping.", None), 0.0);
        let latest = TimeCues::of("Where does Tim live now?", TODAY);
        assert_eq!(latest.fit(None, "Tim lives in Berlin.", Some(1.0)), 0.5);
        assert_eq!(latest.fit(None, "Tim lives in Paris.", Some(0.0)), 0.0);
    }

    #[test]
    fn event_days_and_stated_times() {
        assert_eq!(event_day("2023"), Some(date!(2023 - 01 - 01)));
        assert_eq!(event_day("2023-05"), Some(date!(2023 - 05 - 01)));
        assert_eq!(
            event_day("2023-05-08T13:56:00Z"),
            Some(date!(2023 - 05 - 08))
        );
        assert_eq!(event_day("nonsense"), None);
        for stated in [
            "I went to a support group yesterday.",
            "Last Fri I took the kids out.",
            "We met in May 2021.",
            "I've known them for 4 years, since I moved.",
            "Two weekends ago we went camping.",
        ] {
            assert!(states_a_time(stated), "{stated}");
        }
        for plain in [
            "That sounds great!",
            "You may like it.",
            "I love painting sunsets.",
        ] {
            assert!(!states_a_time(plain), "{plain}");
        }
    }
}
