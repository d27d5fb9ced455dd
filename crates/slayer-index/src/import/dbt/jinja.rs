//! The little Jinja a dbt semantic layer holds: `{% docs %}` blocks and `{{ doc('x') }}` in
//! descriptions, and `{{ Dimension('entity__dim') }}`, `{{ TimeDimension(…) }}` and
//! `{{ Entity(…) }}` in metric filters, which become column references a SLayer filter can
//! hold. Anything else stays as text, and the caller is told.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::convert::Built;

static DOCS_BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)\{%-?\s*docs\s+([A-Za-z_][\w]*)\s*-?%\}(.*?)\{%-?\s*enddocs\s*-?%\}")
        .expect("valid regex")
});
static DOC_CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\{\{\s*doc\(\s*['"]([A-Za-z_][\w]*)['"]\s*\)\s*\}\}"#).expect("valid regex")
});
static JINJA: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\{\{(.*?)\}\}").expect("valid regex"));
static CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^(Dimension|TimeDimension|Entity)\(\s*['"]([\w]+)['"]\s*(?:,\s*['"]?(\w+)['"]?\s*)?\)\s*(?:\.(grain|date_part)\(\s*['"](\w+)['"]\s*\))?$"#,
    )
    .expect("valid regex")
});

/// The `{% docs name %}…{% enddocs %}` blocks of a `.md` file.
pub fn doc_blocks(text: &str) -> Vec<(String, String)> {
    DOCS_BLOCK
        .captures_iter(text)
        .map(|c| (c[1].to_owned(), c[2].trim().to_owned()))
        .collect()
}

/// `text` with each `{{ doc('name') }}` replaced by its block; the names not found.
pub fn with_docs(text: &str, docs: &HashMap<String, String>) -> (String, Vec<String>) {
    let mut missing = Vec::new();
    let out = DOC_CALL
        .replace_all(text, |c: &regex::Captures| match docs.get(&c[1]) {
            Some(body) => body.clone(),
            None => {
                missing.push(c[1].to_owned());
                c[0].to_owned()
            }
        })
        .into_owned();
    (out, missing)
}

/// What a filter's entity references resolve against.
pub struct FilterScope<'a> {
    /// The model the filter will sit on.
    pub model: &'a str,
    /// Entity names this model owns (primary, unique, natural) or refers to (foreign), with
    /// whether it owns them.
    pub own_entities: &'a HashMap<String, bool>,
    /// For each entity, the model that owns it and the column it reads there.
    pub owners: &'a HashMap<String, (String, String)>,
    /// The model's default time dimension, for `metric_time`.
    pub time_dimension: Option<&'a str>,
    /// Whether a model (by name) has a column (a dimension, a key).
    pub has_column: &'a dyn Fn(&str, &str) -> bool,
    /// The models that carry an entity as their primary, unique or natural one.
    pub carriers: &'a dyn Fn(&str) -> Vec<String>,
    /// The models this one joins directly.
    pub joined: &'a [String],
}

/// A dbt filter as a SQL predicate over this model's columns and its joined models'
/// (`customers.region`); what could not be translated is kept as written and described.
pub fn translate_filter(filter: &str, scope: &FilterScope) -> (String, Vec<String>) {
    let mut losses = Vec::new();
    let out = JINJA
        .replace_all(filter, |c: &regex::Captures| {
            let inner = c[1].trim();
            match translate_call(inner, scope) {
                Ok(text) => text,
                Err(why) => {
                    losses.push(why.to_string());
                    c[0].to_owned()
                }
            }
        })
        .trim()
        .to_owned();
    (out, losses)
}

/// `filter` translated for model `model` of `built`: its entities, columns and joins.
pub fn translate_on(built: &Built, model: usize, filter: &str) -> (String, Vec<String>) {
    let has_column = |m: &str, c: &str| {
        built
            .by_name
            .get(m)
            .is_some_and(|&i| built.models[i].columns.iter().any(|x| x.name == c))
    };
    let carriers = |entity: &str| {
        built
            .entities
            .iter()
            .enumerate()
            .filter(|(_, own)| own.get(entity) == Some(&true))
            .map(|(i, _)| built.models[i].name.clone())
            .collect()
    };
    let no_joins = Vec::new();
    let scope = FilterScope {
        model: &built.models[model].name,
        own_entities: &built.entities[model],
        owners: &built.owners,
        time_dimension: built.models[model].default_time_dimension.as_deref(),
        has_column: &has_column,
        carriers: &carriers,
        joined: built.joined.get(model).unwrap_or(&no_joins),
    };
    translate_filter(filter, &scope)
}

/// Why a Jinja call of a filter is kept as text.
#[derive(Debug, thiserror::Error)]
enum Untranslated {
    #[error("the Jinja '{{{{ {0} }}}}' cannot be evaluated offline; the filter keeps it as text")]
    NotACall(String),
    #[error("'metric_time' in '{{{{ {call} }}}}' needs the model's agg_time_dimension, which model '{model}' does not set; kept as text")]
    NoTimeDimension { call: String, model: String },
    #[error("'{0}' names no dimension")]
    NoDimension(String),
    #[error("'{reference}': no model carrying the entity '{entity}' has a dimension '{column}'; kept as text")]
    Missing {
        reference: String,
        entity: String,
        column: String,
    },
    #[error("'{reference}': model '{model}' has no dimension '{column}'; kept as text")]
    NotHere {
        reference: String,
        model: String,
        column: String,
    },
    #[error("'{reference}' is reached from model '{model}' only through more than one join (to '{owner}'); kept as text")]
    TooFar {
        reference: String,
        model: String,
        owner: String,
    },
    #[error("'{reference}': no semantic model has the entity '{entity}'; kept as text")]
    NoEntity { reference: String, entity: String },
}

fn translate_call(call: &str, scope: &FilterScope) -> Result<String, Untranslated> {
    let Some(c) = CALL.captures(call) else {
        return Err(Untranslated::NotACall(call.to_owned()));
    };
    let (function, reference) = (&c[1], &c[2]);
    if reference == "metric_time" {
        return scope.time_dimension.map(str::to_owned).ok_or_else(|| {
            Untranslated::NoTimeDimension {
                call: call.to_owned(),
                model: scope.model.to_owned(),
            }
        });
    }
    if function == "Entity" {
        return Ok(match scope.owners.get(reference) {
            Some((owner, column)) if owner == scope.model => column.clone(),
            Some((owner, column)) => format!("{owner}.{column}"),
            None => reference.to_owned(),
        });
    }
    let mut parts: Vec<&str> = reference.split("__").collect();
    let Some(column) = parts.pop() else {
        return Err(Untranslated::NoDimension(reference.to_owned()));
    };
    let here = scope.model;
    let Some(entity) = parts.pop() else {
        // A dimension without an entity path names a column of this model.
        if (scope.has_column)(here, column) {
            return Ok(column.to_owned());
        }
        return Err(Untranslated::NotHere {
            reference: reference.to_owned(),
            model: here.to_owned(),
            column: column.to_owned(),
        });
    };
    let missing = || Untranslated::Missing {
        reference: reference.to_owned(),
        entity: entity.to_owned(),
        column: column.to_owned(),
    };
    // Models sharing the entity (dbt's shared primary entities) may own the dimension: the
    // path goes to the one that has it.
    let peer_with_column = |except: &str| {
        (scope.carriers)(entity)
            .into_iter()
            .find(|m| m != except && (scope.has_column)(m, column))
    };
    let owned_here = scope.own_entities.get(entity) == Some(&true)
        || scope.owners.get(entity).is_some_and(|(o, _)| o == here);
    if owned_here {
        if (scope.has_column)(here, column) {
            return Ok(column.to_owned());
        }
        return match peer_with_column(here) {
            Some(peer) if scope.joined.contains(&peer) => Ok(format!("{peer}.{column}")),
            Some(peer) => Err(Untranslated::TooFar {
                reference: reference.to_owned(),
                model: here.to_owned(),
                owner: peer,
            }),
            None => Err(missing()),
        };
    }
    match (scope.own_entities.get(entity), scope.owners.get(entity)) {
        (Some(false), Some((owner, _))) => {
            if (scope.has_column)(owner, column) {
                return Ok(format!("{owner}.{column}"));
            }
            match peer_with_column(owner) {
                Some(peer) => Err(Untranslated::TooFar {
                    reference: reference.to_owned(),
                    model: here.to_owned(),
                    owner: peer,
                }),
                None => Err(missing()),
            }
        }
        (_, Some((owner, _))) => Err(Untranslated::TooFar {
            reference: reference.to_owned(),
            model: here.to_owned(),
            owner: owner.clone(),
        }),
        (_, None) => Err(Untranslated::NoEntity {
            reference: reference.to_owned(),
            entity: entity.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_blocks_fill_descriptions() {
        let md = "{% docs orders %}\nOne row per order.\n{% enddocs %}\n\n{%- docs x -%} X {%- enddocs -%}";
        let docs: HashMap<_, _> = doc_blocks(md).into_iter().collect();
        assert_eq!(docs["orders"], "One row per order.");
        assert_eq!(docs["x"], "X");
        let (text, missing) = with_docs("{{ doc('orders') }} See {{doc(\"nope\")}}.", &docs);
        assert_eq!(text, "One row per order. See {{doc(\"nope\")}}.");
        assert_eq!(missing, ["nope"]);
    }

    #[test]
    fn filters_become_column_references() {
        let own: HashMap<String, bool> = [
            ("order_id".to_owned(), true),
            ("customer".to_owned(), false),
        ]
        .into();
        let owners: HashMap<String, (String, String)> = [
            (
                "order_id".to_owned(),
                ("orders".to_owned(), "order_id".to_owned()),
            ),
            (
                "customer".to_owned(),
                ("customers".to_owned(), "customer_id".to_owned()),
            ),
            (
                "location".to_owned(),
                ("locations".to_owned(), "location_id".to_owned()),
            ),
        ]
        .into();
        let columns = |m: &str, c: &str| match m {
            "orders" => ["is_food_order", "order_id"].contains(&c),
            "customers" => ["region", "first_ordered_at", "customer_id"].contains(&c),
            "order_flags" => c == "is_returned",
            _ => false,
        };
        let carriers = |e: &str| match e {
            "order_id" => vec!["orders".to_owned(), "order_flags".to_owned()],
            _ => vec![],
        };
        let joined = ["customers".to_owned(), "order_flags".to_owned()];
        let scope = FilterScope {
            model: "orders",
            own_entities: &own,
            owners: &owners,
            time_dimension: Some("ordered_at"),
            has_column: &columns,
            carriers: &carriers,
            joined: &joined,
        };
        let t = |f: &str| translate_filter(f, &scope);
        assert_eq!(
            t("{{ Dimension('order_id__is_food_order') }} = true\n"),
            ("is_food_order = true".to_owned(), vec![])
        );
        assert_eq!(
            t("{{ Dimension('customer__region') }} = 'EU' and {{ TimeDimension('metric_time', 'day') }} > '2020-01-01'").0,
            "customers.region = 'EU' and ordered_at > '2020-01-01'"
        );
        assert_eq!(
            t("{{ Entity('customer') }} is not null").0,
            "customers.customer_id is not null"
        );
        assert_eq!(
            t("{{ Dimension('customer__first_ordered_at').grain('month') }} > '2024-01'").0,
            "customers.first_ordered_at > '2024-01'"
        );
        let (text, losses) = t("{{ Metric('revenue', group_by=['customer']) }} > 10");
        assert_eq!(text, "{{ Metric('revenue', group_by=['customer']) }} > 10");
        assert_eq!(losses.len(), 1);
        let (_, losses) = t("{{ Dimension('location__name') }} = 'x'");
        assert!(losses[0].contains("more than one join"), "{losses:?}");
        // A dimension of a model sharing the primary entity: that model's path.
        assert_eq!(
            t("{{ Dimension('order_id__is_returned') }} = 1").0,
            "order_flags.is_returned = 1"
        );
        let (text, losses) = t("{{ Dimension('order_id__nowhere') }} = 1");
        assert_eq!(text, "{{ Dimension('order_id__nowhere') }} = 1");
        assert!(
            losses[0].contains("has a dimension 'nowhere'"),
            "{losses:?}"
        );
        let (_, losses) = t("{{ Dimension('customer__nope') }} = 1");
        assert!(losses[0].contains("'nope'"), "{losses:?}");
    }
}
