//! The memory records: a memory, its tier and its standing, and the timestamps they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::is_false;

/// Checks a stored timestamp such as `created_at`: ISO 8601 / RFC 3339, as the original writes
/// it (`2026-01-31T12:00:00.000000Z`), with or without a fraction and offset (a space may
/// stand for the `T`). Recency ordering compares these texts, so nothing else is stored.
pub fn check_timestamp(value: &str) -> Result<(), BadTimestamp> {
    use time::format_description::well_known::Iso8601;
    let normalized = match value.as_bytes().get(10) {
        Some(b' ') => format!("{}T{}", &value[..10], &value[11..]),
        _ => value.to_owned(),
    };
    let parsed = time::OffsetDateTime::parse(&normalized, &Iso8601::DEFAULT)
        .map(|_| ())
        .or_else(|_| time::PrimitiveDateTime::parse(&normalized, &Iso8601::DEFAULT).map(|_| ()));
    match parsed {
        Ok(()) if value.len() >= 19 => Ok(()),
        _ => Err(BadTimestamp(value.to_owned())),
    }
}

/// Checks an event time (docs/spec/memory.md §4.6): a year (`2023`), a month (`2023-05`), a
/// day (`2023-05-08`) or a timestamp as [`check_timestamp`] takes it. Time rules compare these
/// texts as they are, so a coarser time sorts first among the times it covers.
pub fn check_event_time(value: &str) -> Result<(), BadEventTime> {
    let bad = || BadEventTime(value.to_owned());
    if !value.is_ascii() {
        return Err(bad());
    }
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    match value.len() {
        4 if digits(value, 4) => Ok(()),
        7 | 10 => {
            let (year, rest) = value.split_at(4);
            let month = rest.get(1..3).ok_or_else(bad)?;
            let month_ok = digits(year, 4)
                && rest.starts_with('-')
                && digits(month, 2)
                && (1..=12).contains(&month.parse::<u8>().unwrap_or(0));
            if !month_ok {
                return Err(bad());
            }
            if value.len() == 7 {
                return Ok(());
            }
            let day = &value[8..];
            let date = format!("{value}T00:00:00");
            if value.as_bytes()[7] == b'-' && digits(day, 2) && check_timestamp(&date).is_ok() {
                Ok(())
            } else {
                Err(bad())
            }
        }
        _ => check_timestamp(value).map_err(|_| bad()),
    }
}

/// An event time that is not a year, a month, a day or an ISO 8601 timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not an event time; write a year (2023), a month (2023-05), a day (2023-05-08) or a \
     timestamp (2023-05-08T13:56:00Z)"
)]
pub struct BadEventTime(pub String);

/// When the thing a memory records happened, and the conversation it was saved from: apart
/// from `created_at` (when it was saved), so a note saved today about a move in May sorts by
/// May (docs/spec/memory.md §4.6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occasion {
    /// The event's time: a year, month, day or timestamp ([`check_event_time`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<String>,
    /// The session (conversation) it was saved from; search can return a hit's neighbours
    /// from the same session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Occasion {
    /// Checks the values a writer gave: `(field, message)` on the first bad one.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if let Some(t) = &self.event_time {
            check_event_time(t).map_err(|e| ("event_time", e.to_string()))?;
        }
        check_name("session", self.session.as_deref())
    }
}

/// A writer-chosen name (a project, an agent, a session): non-blank, no control characters.
fn check_name(field: &'static str, value: Option<&str>) -> Result<(), (&'static str, String)> {
    match value {
        Some(v) if v.trim().is_empty() || v.chars().any(char::is_control) => Err((
            field,
            format!("{field} must be a non-blank name without control characters; got {v:?}"),
        )),
        _ => Ok(()),
    }
}

/// A stored timestamp that is not ISO 8601.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an ISO 8601 timestamp; write it as 2026-01-31T12:00:00Z")]
pub struct BadTimestamp(pub String);

/// A tier name that names no tier; the message lists the names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tier '{name}'; expected one of {}", Tier::ALL.map(Tier::name).join(", "))]
pub struct UnknownTier {
    /// The name asked for.
    pub name: String,
}

/// An agent memory: a learning, optionally with an example query, tagged with canonical entities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Schema version of the original (4).
    #[serde(default = "memory_version")]
    pub version: i64,
    /// Memory id; see [`crate::canonical::check_memory_id`].
    pub id: String,
    /// The note itself.
    pub learning: String,
    /// One-line summary, at most 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Canonical entity tags, in stored order.
    #[serde(default)]
    pub entities: Vec<String>,
    /// The attached SlayerQuery, for example-query memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<Value>,
    /// UTC creation time, RFC 3339 with `Z`.
    pub created_at: String,
    /// Its tier, trust and owner; every field is left out of the JSON at its default, so a
    /// memory written before tiers existed exports as it always did.
    #[serde(flatten)]
    pub standing: Standing,
    /// When what it records happened and which conversation it came from; left out of the
    /// JSON when unset, so a memory written before them exports as it always did.
    #[serde(flatten)]
    pub occasion: Occasion,
}

impl Memory {
    /// A memory with this id and these tags, learning `x`, nothing else of note: the fixture
    /// every crate's store tests write.
    pub fn placeholder(id: &str, tags: &[&str]) -> Memory {
        Memory {
            version: 4,
            id: id.into(),
            learning: "x".into(),
            description: None,
            entities: tags.iter().map(|t| t.to_string()).collect(),
            query: None,
            created_at: "t".into(),
            standing: Default::default(),
            occasion: Default::default(),
        }
    }
}

fn memory_version() -> i64 {
    4
}

/// The kinds of memory an agent's consolidation writes (docs/spec/search.md §9.11), from raw to
/// dense. `lesson` is a learning an agent wrote, and every memory saved without a tier.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// A raw observation of a session.
    Observation,
    /// A learning an agent wrote (the default tier).
    #[default]
    Lesson,
    /// A semantic fact.
    Semantic,
    /// A procedural skill.
    Procedural,
    /// A densified, high-confidence cluster of memories.
    Crystal,
    /// An insight derived from a cluster.
    Insight,
    /// One facet of an entity.
    Facet,
}

impl Tier {
    /// Every tier, in this order (also the order of tie-breaks between tiers).
    pub const ALL: [Tier; 7] = [
        Tier::Observation,
        Tier::Lesson,
        Tier::Semantic,
        Tier::Procedural,
        Tier::Crystal,
        Tier::Insight,
        Tier::Facet,
    ];

    /// The tier's name, as written in records and flags.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Observation => "observation",
            Tier::Lesson => "lesson",
            Tier::Semantic => "semantic",
            Tier::Procedural => "procedural",
            Tier::Crystal => "crystal",
            Tier::Insight => "insight",
            Tier::Facet => "facet",
        }
    }

    /// The prefix of the ids the store hands out to this tier (`sem` → `sem_12`); lessons
    /// get plain numbers.
    pub fn id_prefix(self) -> Option<&'static str> {
        match self {
            Tier::Observation => Some("obs"),
            Tier::Lesson => None,
            Tier::Semantic => Some("sem"),
            Tier::Procedural => Some("proc"),
            Tier::Crystal => Some("crys"),
            Tier::Insight => Some("ins"),
            Tier::Facet => Some("fac"),
        }
    }

    /// A tier by name; the error lists the names.
    pub fn parse(name: &str) -> Result<Tier, UnknownTier> {
        Tier::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| UnknownTier {
                name: name.to_owned(),
            })
    }

    /// The tier an allocated id's prefix names (`sem_12` → semantic), if any.
    pub fn of_allocated_id(id: &str) -> Option<Tier> {
        let (prefix, number) = id.split_once('_')?;
        let digits = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
        Tier::ALL
            .into_iter()
            .find(|t| digits && t.id_prefix() == Some(prefix))
    }

    fn is_lesson(&self) -> bool {
        *self == Tier::Lesson
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a memory stands: its tier, how far it is trusted (`confidence`, set by its writer)
/// and how fresh it is (`strength`, decayed by its writer), whose it is (`project`, `agent`),
/// whether its writer withdrew it (`deleted`, a soft delete: the memory is kept, and
/// exported, but never searched) and whether it awaits a person's approval (`proposed`: kept,
/// listed and exported, never searched until `slayer-memory approve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// The tier (default `lesson`).
    #[serde(default, skip_serializing_if = "Tier::is_lesson")]
    pub tier: Tier,
    /// 0–1 (default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub confidence: f64,
    /// 0–1 (default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub strength: f64,
    /// The project it belongs to; none: every project's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The agent it belongs to; none: every agent's (of its project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Soft-deleted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deleted: bool,
    /// Awaiting review: saved by an agent while the store requires review (or saved with
    /// `--propose`); search treats it as absent until it is approved.
    #[serde(default, skip_serializing_if = "is_false")]
    pub proposed: bool,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl Default for Standing {
    fn default() -> Self {
        Standing {
            tier: Tier::Lesson,
            confidence: 1.0,
            strength: 1.0,
            project: None,
            agent: None,
            deleted: false,
            proposed: false,
        }
    }
}

impl Standing {
    /// Checks the values a writer gave: `(field, message)` on the first bad one.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        for (field, value) in [("confidence", self.confidence), ("strength", self.strength)] {
            if !(0.0..=1.0).contains(&value) {
                return Err((
                    field,
                    format!("{field} must be a number from 0 to 1; got {value}"),
                ));
            }
        }
        check_name("project", self.project.as_deref())?;
        check_name("agent", self.agent.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposed_is_left_out_of_the_json_unless_set() {
        let plain = Memory::placeholder("1", &["db"]);
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("proposed"), "{json}");
        let mut proposed = plain.clone();
        proposed.standing.proposed = true;
        let json = serde_json::to_string(&proposed).unwrap();
        assert!(json.ends_with(r#","proposed":true}"#), "{json}");
        let back: Memory = serde_json::from_str(&json).unwrap();
        assert_eq!(back, proposed);
        let old: Memory =
            serde_json::from_str(r#"{"id":"1","learning":"x","created_at":"t","deleted":true}"#)
                .unwrap();
        assert!(old.standing.deleted && !old.standing.proposed);
    }

    #[test]
    fn an_occasion_is_left_out_of_the_json_unless_set_and_read_back_when_set() {
        let plain = Memory::placeholder("1", &["db"]);
        let json = serde_json::to_string(&plain).unwrap();
        assert!(
            !json.contains("event_time") && !json.contains("session"),
            "{json}"
        );
        let mut dated = plain.clone();
        dated.occasion.event_time = Some("2023-05".into());
        dated.occasion.session = Some("chat-7".into());
        let json = serde_json::to_string(&dated).unwrap();
        assert!(
            json.ends_with(r#","event_time":"2023-05","session":"chat-7"}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Memory>(&json).unwrap(), dated);
    }

    #[test]
    fn event_times_are_a_year_a_month_a_day_or_a_timestamp() {
        for ok in [
            "2023",
            "2023-05",
            "2023-05-08",
            "2023-05-08T13:56:00Z",
            "2023-05-08 13:56:00",
        ] {
            assert_eq!(check_event_time(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "23",
            "May 2023",
            "2023-13",
            "2023-5",
            "2023-02-30",
            "2023/05/08",
            "2023-05-08T",
        ] {
            let e = check_event_time(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("'{bad}' is not an event time; write a year")),
                "{e}"
            );
        }
        let bad_session = Occasion {
            event_time: None,
            session: Some(" ".into()),
        };
        assert_eq!(bad_session.check().unwrap_err().0, "session");
    }

    #[test]
    fn timestamps_are_iso_8601_as_the_original_writes_them() {
        for ok in [
            "2026-01-31T12:00:00.000000Z",
            "2026-01-31T12:00:00Z",
            "2026-01-31T12:00:00+02:00",
            "2026-01-31T12:00:00",
            "2026-01-31 12:00:00.5",
        ] {
            assert_eq!(check_timestamp(ok), Ok(()), "{ok}");
        }
        for bad in [
            "not a date",
            "",
            "2026-13-01T00:00:00Z",
            "2026-01-31",
            "12:00:00",
            "2026-01-31T25:00:00Z",
        ] {
            let e = check_timestamp(bad).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("'{bad}' is not an ISO 8601 timestamp; write it as 2026-01-31T12:00:00Z")
            );
        }
    }
}
