//! Everything an agent needs to use a measure, in one answer (MCP `show` of a measure;
//! docs/spec/importers.md §17.5): its model, formula, label and description, the filters its
//! formula applies (a metric filter sits on the column the formula aggregates), and every column it
//! can be grouped by, on its model and through the joins, as the dotted path a query names it by.

use slayer_common::store::StoreRead;
use std::collections::HashSet;

use serde::Serialize;
use slayer_common::store::StoreError;

/// How far joins are followed: a query rarely groups by something three joins away, and the
/// answer stays small.
pub const MAX_HOPS: usize = 3;

/// The most group-by columns a search's answer card carries (nearest first): enough to query
/// the measure, small enough for every response (MCP `show` gives them all).
pub const ANSWER_GROUP_BY: usize = 30;

/// The answer card of a search whose first entity is a measure (docs/spec/search.md §9.8): what an
/// agent needs to query it without a second call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerCard {
    /// The measure's canonical id (the first entity's).
    pub id: String,
    /// The measure, whole, its group-by columns cut to [`ANSWER_GROUP_BY`].
    #[serde(flatten)]
    pub card: MeasureCard,
    /// Whether there are more group-by columns than the card carries (MCP `show` lists them
    /// all).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub group_by_more: bool,
}

/// The answer card of `id` when it is a measure, its group-by columns cut to
/// [`ANSWER_GROUP_BY`]: the joined models are read only until there are more (a search answers
/// in milliseconds; `show` reads them all).
pub fn answer_card(conn: &dyn StoreRead, id: &str) -> Result<Option<AnswerCard>, StoreError> {
    let Some(mut card) = measure_card_upto(conn, id, ANSWER_GROUP_BY)? else {
        return Ok(None);
    };
    let group_by_more = card.group_by.len() > ANSWER_GROUP_BY;
    card.group_by.truncate(ANSWER_GROUP_BY);
    Ok(Some(AnswerCard {
        id: id.to_owned(),
        card,
        group_by_more,
    }))
}

/// A column a measure can be grouped by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupBy {
    /// As a query names it from the measure's model: `tier`, `customers.tier`.
    pub path: String,
    /// Its type.
    #[serde(rename = "type")]
    pub data_type: String,
    /// Part of its model's primary key (an entity the measure can be grouped by).
    pub key: bool,
    /// The first line of its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A measure, whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasureCard {
    /// `<ds>.<model>`.
    pub model: String,
    /// The measure's formula.
    pub formula: String,
    /// Its label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `column: predicate` for each column the formula reads that carries a filter.
    pub filters: Vec<String>,
    /// The model's default time dimension, for a metric over time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_dimension: Option<String>,
    /// Every visible column of its model and of the models its joins reach (up to
    /// [`MAX_HOPS`]), nearest first.
    pub group_by: Vec<GroupBy>,
}

/// The most group-by columns MCP `show` lists.
const SHOW_GROUP_BY: usize = 500;

/// The card of the measure `<ds>.<model>.<measure>`, or `None` when that is not a measure.
pub fn measure_card(conn: &dyn StoreRead, id: &str) -> Result<Option<MeasureCard>, StoreError> {
    measure_card_upto(conn, id, SHOW_GROUP_BY)
}

/// The card with its group-by columns read until there are more than `most` (joined models
/// farther away are not read).
fn measure_card_upto(
    conn: &dyn StoreRead,
    id: &str,
    most: usize,
) -> Result<Option<MeasureCard>, StoreError> {
    let mut parts = id.splitn(3, '.');
    let (Some(ds), Some(model_name), Some(leaf)) = (parts.next(), parts.next(), parts.next())
    else {
        return Ok(None);
    };
    let Some(model) = conn.model(ds, model_name)? else {
        return Ok(None);
    };
    let Some(measure) = model
        .measures
        .iter()
        .find(|m| m.name.as_deref() == Some(leaf))
    else {
        return Ok(None);
    };
    let words: HashSet<&str> = measure
        .formula
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let filters = model
        .columns
        .iter()
        .filter(|c| words.contains(c.name.as_str()))
        .filter_map(|c| c.filter.as_ref().map(|f| format!("{}: {f}", c.name)))
        .collect();
    let mut group_by = Vec::new();
    let mut seen = HashSet::from([model.name.clone()]);
    let mut frontier = vec![(model.clone(), String::new())];
    for _ in 0..=MAX_HOPS {
        let mut next = Vec::new();
        for (m, prefix) in frontier {
            for c in m.columns.iter().filter(|c| !c.hidden) {
                group_by.push(GroupBy {
                    path: format!("{prefix}{}", c.name),
                    data_type: c.data_type.as_str().to_owned(),
                    key: c.primary_key,
                    description: c
                        .description
                        .as_deref()
                        .and_then(|d| d.lines().next())
                        .map(str::to_owned),
                });
            }
            for j in &m.joins {
                if seen.insert(j.target_model.clone()) {
                    if let Some(target) = conn.model(ds, &j.target_model)? {
                        next.push((target, format!("{prefix}{}.", j.target_model)));
                    }
                }
            }
        }
        if next.is_empty() || group_by.len() > most {
            break;
        }
        frontier = next;
    }
    Ok(Some(MeasureCard {
        model: format!("{ds}.{}", model.name),
        formula: measure.formula.clone(),
        label: measure.label.clone(),
        description: measure.description.clone(),
        filters,
        time_dimension: model.default_time_dimension.clone(),
        group_by,
    }))
}

impl MeasureCard {
    /// The card as text, after the measure's doc.
    pub fn to_text(&self) -> String {
        let mut out = format!("Model: {}\nFormula: {}\n", self.model, self.formula);
        if !self.filters.is_empty() {
            out.push_str(&format!("Filters: {}\n", self.filters.join("; ")));
        }
        if let Some(t) = &self.time_dimension {
            out.push_str(&format!("Time dimension: {t}\n"));
        }
        let shown: Vec<String> = self
            .group_by
            .iter()
            .map(|g| {
                let mut s = g.path.clone();
                if g.key {
                    s.push_str(" (key)");
                }
                s
            })
            .collect();
        out.push_str(&format!("Group by: {}\n", shown.join(", ")));
        out
    }
}
