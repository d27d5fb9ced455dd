//! What a question asks for (docs/spec/fusion.md §8.9): a metric, which data exists, how tables
//! join, or the columns that hold an answer. The answer-first arrangement reads it to decide what
//! leads the entity list, and `--explain` shows it with the words that decided it.

use crate::fusion::named::words_of;

/// The kind of answer a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntentKind {
    /// An aggregate or named metric ("how many", "total", "average", "rate", "growth"): the
    /// best-matching named measure leads, its model next.
    Metric,
    /// Which data exists ("which tables hold …", "do we have …"): tables lead, then their
    /// columns.
    Catalog,
    /// How tables join ("join", "relationship", "foreign key"): the connecting keys keep the
    /// place the join evidence gives them.
    Join,
    /// Anything else: the tables and the columns that hold the answer.
    Lookup,
}

/// What an entity is, as the arrangement needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A named measure.
    Measure,
    /// A model.
    Model,
    /// A column, an aggregation, a datasource, or anything else.
    Other,
}

/// The intent the search chose, with why (shown by `--explain`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Intent {
    /// The kind chosen.
    pub kind: IntentKind,
    /// The words of the question (or the match) that decided it.
    pub why: String,
}

/// Phrases of a question about joining tables (whole words, lowercase).
const JOIN_CUES: &[&str] = &[
    "join",
    "joins",
    "joining",
    "relationship",
    "relationships",
    "relate",
    "foreign key",
    "foreign keys",
    "primary key",
    "primary keys",
    "join key",
    "join keys",
];

/// Phrases of a question about which data exists.
const CATALOG_CUES: &[&str] = &[
    "table",
    "tables",
    "dataset",
    "datasets",
    "data source",
    "data sources",
    "datasource",
    "datasources",
    "schema",
    "what data",
    "which data",
    "what kind of data",
    "where can i find",
    "where do i find",
    "what columns",
    "which columns",
    "what fields",
    "which fields",
];

/// Phrases of an aggregate or metric question.
const METRIC_CUES: &[&str] = &[
    "how many",
    "how much",
    "number of",
    "count",
    "counts",
    "total",
    "totals",
    "sum",
    "average",
    "averages",
    "avg",
    "mean",
    "median",
    "rate",
    "rates",
    "ratio",
    "ratios",
    "share",
    "percent",
    "percentage",
    "percentages",
    "pct",
    "proportion",
    "fraction",
    "growth",
    "grow",
    "grew",
    "trend",
    "trends",
    "kpi",
    "kpis",
    "metric",
    "metrics",
    "measure",
    "per",
    "month over month",
    "year over year",
    "week over week",
    "mom",
    "yoy",
    "wow",
    "cumulative",
    "running total",
    "distinct",
    "maximum",
    "minimum",
    "max",
    "min",
    "p50",
    "p90",
    "p95",
    "p99",
    "percentile",
    "margin",
    "conversion",
    "churn",
    "retention",
    // A figure broken down ("revenue by month", "orders for each store") is an aggregate.
    "by",
    "each",
    // The nouns of what a measure adds up: a question naming one asks for a figure.
    "revenue",
    "revenues",
    "sales",
    "spend",
    "spending",
    "cost",
    "costs",
    "expenses",
    "profit",
    "income",
    "earnings",
    "volume",
    "amount",
    "dollars",
    "quantity",
    "units",
];

/// The aggregations a question's words ask for, each with its words: what a measure's formula
/// computes (`min(…)`, a ratio `a / b`) is matched against them, so "lowest stringency" prefers
/// `min(stringency_index)` to `max(stringency_index)`.
const AGGREGATION_CUES: &[(&str, &[&str])] = &[
    ("count", &["how many", "number of", "count", "counts"]),
    ("count_distinct", &["unique", "distinct", "different"]),
    ("sum", &["total", "totals", "sum", "how much", "overall"]),
    ("avg", &["average", "averages", "avg", "mean", "typical"]),
    (
        "min",
        &["lowest", "minimum", "min", "smallest", "least", "fewest"],
    ),
    (
        "max",
        &["highest", "maximum", "max", "peak", "largest", "biggest"],
    ),
    ("median", &["median", "middle", "p50"]),
    (
        "percentile",
        &["percentile", "p90", "p95", "p99", "quantile"],
    ),
    (
        "ratio",
        &[
            "share",
            "percent",
            "percentage",
            "rate",
            "ratio",
            "proportion",
            "fraction",
            "per",
        ],
    ),
    (
        "cumsum",
        &["cumulative", "running total", "to date", "so far"],
    ),
    (
        "time_shift",
        &[
            "growth",
            "month over month",
            "year over year",
            "week over week",
            "mom",
            "yoy",
        ],
    ),
];

/// The aggregations the question asks for ([`AGGREGATION_CUES`]), as a formula names them.
/// Longer cues are read first and take their words: "running total" asks for a running total,
/// not also for a total.
pub fn asked_aggregations(question: &str) -> Vec<&'static str> {
    let mut words = words_of(question);
    let mut cues: Vec<(&'static str, &'static str)> = AGGREGATION_CUES
        .iter()
        .flat_map(|(agg, cues)| cues.iter().map(move |c| (*agg, *c)))
        .collect();
    cues.sort_by_key(|(_, c)| std::cmp::Reverse(c.len()));
    let mut asked = Vec::new();
    for (agg, c) in cues {
        let phrase = format!(" {c} ");
        if words.contains(&phrase) {
            words = words.replace(&phrase, " | ");
            asked.push(agg);
        }
    }
    AGGREGATION_CUES
        .iter()
        .map(|(agg, _)| *agg)
        .filter(|agg| asked.contains(agg))
        .collect()
}

/// What a figure is counted in, as a question's words name it and a formula's column words
/// show it: money (`sum(product_price)`, `sum(amount_usd)`) or units of goods
/// (`sum(quantity)`, `sum(shipment_qty)`). A count (`count(*)`) is neither.
const FIGURE_UNITS: &[(&str, &[&str], &[&str])] = &[
    (
        "money",
        &[
            "dollar", "dollars", "usd", "cost", "costs", "spend", "spent", "price", "prices",
            "amount", "amounts", "paid", "value",
        ],
        &[
            "amount", "price", "revenue", "cost", "usd", "spend", "paid", "fee", "fees", "value",
        ],
    ),
    (
        "units",
        &["units", "quantity", "quantities", "qty", "pieces"],
        &["qty", "quantity", "units", "pieces"],
    ),
];

/// The units the question asks its figure in ([`FIGURE_UNITS`]).
pub fn asked_units(question: &str) -> Vec<&'static str> {
    let words = words_of(question);
    FIGURE_UNITS
        .iter()
        .filter(|(_, cues, _)| cue(&words, cues).is_some())
        .map(|(unit, _, _)| *unit)
        .collect()
}

/// Whether a formula's column words count its figure in one of `asked` ([`FIGURE_UNITS`]).
pub fn counts_in(formula: &str, asked: &[&str]) -> bool {
    let words: Vec<String> = formula
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    FIGURE_UNITS
        .iter()
        .filter(|(unit, _, _)| asked.contains(unit))
        .any(|(_, _, columns)| words.iter().any(|w| columns.contains(&w.as_str())))
}

/// Aggregations that change what they wrap (a running total, a change over a period): asked,
/// only a formula that makes one computes what the question asks.
const MODIFIERS: [&str; 2] = ["cumsum", "time_shift"];

/// What a formula computes at its outermost level: `ratio` when it divides there (`sum(a) /
/// count(b)` is a ratio, not a count), else the functions it calls there (`count_distinct`,
/// `max`), lowercase. `cumsum` and `time_shift` count wherever they are: they make a running
/// total or a period-over-period change of whatever they wrap.
fn shape(formula: &str) -> Vec<String> {
    let formula = formula.to_lowercase();
    let mut depth = 0usize;
    let mut name = String::new();
    let mut outer: Vec<String> = Vec::new();
    let mut divides = false;
    let mut anywhere: Vec<String> = Vec::new();
    for c in formula.chars() {
        if c.is_alphanumeric() || c == '_' {
            name.push(c);
            continue;
        }
        if c == '(' && !name.is_empty() {
            if depth == 0 {
                outer.push(name.clone());
            }
            if name == "cumsum" || name == "time_shift" {
                anywhere.push(name.clone());
            }
        }
        if !c.is_whitespace() {
            name.clear();
        }
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '/' if depth == 0 => divides = true,
            _ => {}
        }
    }
    let mut out = if divides {
        vec!["ratio".to_owned()]
    } else {
        outer
    };
    out.extend(anywhere);
    out
}

/// Whether a measure's formula computes one of `asked` ([`shape`]): a count asked is any
/// count (`count`, `count_distinct`); an average, an `avg` or a ratio (a sum over a count).
pub fn computes(formula: &str, asked: &[&str]) -> bool {
    let shape = shape(formula);
    let has = |f: &str| shape.iter().any(|s| s == f);
    let modifiers: Vec<&str> = asked
        .iter()
        .copied()
        .filter(|a| MODIFIERS.contains(a))
        .collect();
    if !modifiers.is_empty() {
        return modifiers.iter().any(|m| has(m));
    }
    asked.iter().any(|agg| match *agg {
        "count" => has("count") || has("count_distinct"),
        "avg" => has("avg") || has("ratio"),
        agg => has(agg),
    })
}

/// Whether a formula divides at its outermost level ([`shape`]): a rate, a share or an average
/// of one figure over another.
pub fn is_ratio(formula: &str) -> bool {
    shape(formula).iter().any(|s| s == "ratio")
}

/// Whether the aggregations a question asks for ([`asked_aggregations`]) are answered by a
/// ratio: a share or rate, an average, or a change over a period.
pub fn asks_ratio(asked: &[&str]) -> bool {
    asked
        .iter()
        .any(|a| matches!(*a, "ratio" | "avg" | "time_shift"))
}

/// The first cue of `cues` the question holds as whole words.
fn cue<'c>(words: &str, cues: &[&'c str]) -> Option<&'c str> {
    cues.iter()
        .find(|c| words.contains(&format!(" {c} ")))
        .copied()
}

/// Classifies a question by its words alone: a join cue wins, then a catalog cue, then a
/// metric cue; none is a lookup. `measure_leads` says whether a measure matched the question
/// better than its own model did: a metric question even without a cue word ("cost per
/// thousand impressions" names CPM).
pub fn classify(question: &str, measure_leads: Option<&str>) -> Intent {
    let words = words_of(question);
    if let Some(c) = cue(&words, JOIN_CUES) {
        return Intent {
            kind: IntentKind::Join,
            why: format!("the question says \"{c}\""),
        };
    }
    if let Some(c) = cue(&words, CATALOG_CUES) {
        return Intent {
            kind: IntentKind::Catalog,
            why: format!("the question says \"{c}\""),
        };
    }
    let aggregation = AGGREGATION_CUES
        .iter()
        .find_map(|(_, cues)| cue(&words, cues));
    if let Some(c) = cue(&words, METRIC_CUES).or(aggregation) {
        return Intent {
            kind: IntentKind::Metric,
            why: format!("the question says \"{c}\""),
        };
    }
    if let Some(measure) = measure_leads {
        return Intent {
            kind: IntentKind::Metric,
            why: format!("the measure {measure} matches the question better than its model"),
        };
    }
    Intent {
        kind: IntentKind::Lookup,
        why: "no metric, catalog or join words".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(q: &str) -> IntentKind {
        classify(q, None).kind
    }

    #[test]
    fn cues_are_whole_words_and_joins_win() {
        assert_eq!(kind("how many large orders"), IntentKind::Metric);
        assert_eq!(kind("Month-over-month revenue growth?"), IntentKind::Metric);
        assert_eq!(kind("cost per thousand impressions"), IntentKind::Metric);
        // A figure's noun, or its breakdown, asks for a figure too.
        assert_eq!(kind("procurement cost by supplier"), IntentKind::Metric);
        assert_eq!(kind("store revenue last year"), IntentKind::Metric);
        assert_eq!(kind("orders for each store"), IntentKind::Metric);
        assert_eq!(kind("lowest lockdown strictness"), IntentKind::Metric);
        assert_eq!(
            kind("which tables hold customer emails"),
            IntentKind::Catalog
        );
        assert_eq!(kind("how do orders join to customers"), IntentKind::Join);
        assert_eq!(kind("which orders join customers"), IntentKind::Join);
        // Ordinary words that only sound like joins or catalogs.
        assert_eq!(
            kind("how many customers joined last quarter"),
            IntentKind::Metric
        );
        assert_eq!(kind("how many customers do we have"), IntentKind::Metric);
        // `summary` is not `sum`, `permit` not `per`.
        assert_eq!(kind("summary of the permit holders"), IntentKind::Lookup);
        assert_eq!(kind("customer emails"), IntentKind::Lookup);
    }

    #[test]
    fn aggregations_are_read_from_words_and_formulas() {
        assert_eq!(asked_aggregations("lowest lockdown strictness"), ["min"]);
        assert_eq!(asked_aggregations("share of sales from food"), ["ratio"]);
        assert!(computes("min(stringency_index)", &["min"]));
        assert!(!computes("max(stringency_index)", &["min"]));
        // A count asked is any count; a distinct count only a distinct one.
        assert!(computes("count_distinct(customer_id)", &["count"]));
        assert!(!computes("count(*)", &["count_distinct"]));
        assert!(computes(
            "COUNT_DISTINCT (customer_id)",
            &["count_distinct"]
        ));
        assert!(!computes("admin(x)", &["min"]));
        assert!(computes("revenue / orders", &["ratio"]));
        // What the formula computes is its outermost shape: a sum over a count is a ratio (an
        // average), not a count; a division inside a call is not a ratio.
        assert!(!computes(
            "sum(sales_amount) / count_distinct(sales_id)",
            &["count"]
        ));
        assert!(computes(
            "sum(sales_amount) / count_distinct(sales_id)",
            &["avg"]
        ));
        assert!(!computes("sum(a / b)", &["ratio"]));
        assert!(is_ratio("-100 * (churned) / NULLIF(mrr, 0)"));
        assert!(!is_ratio("sum(a / b)"));
        assert!(asks_ratio(&asked_aggregations("average order value")));
        assert!(!asks_ratio(&asked_aggregations("total revenue lost")));
        assert!(computes("sum(a / b)", &["sum"]));
        // A running total or a change over time, wherever it sits.
        assert!(computes(
            "(revenue - time_shift(revenue, -1, 'month')) * 100 / time_shift(revenue, -1, 'month')",
            &["time_shift"]
        ));
        assert!(computes("cumsum(revenue)", &["cumsum"]));
        // A running total asked is a running total: not also a total, nor any count.
        assert_eq!(
            asked_aggregations("running total number of transactions to date"),
            ["count", "cumsum"]
        );
        assert_eq!(asked_aggregations("running total of revenue"), ["cumsum"]);
        assert!(!computes("sum(product_price)", &["cumsum"]));
        assert!(!computes("count(transaction_id)", &["count", "cumsum"]));
        assert!(computes("cumsum(transactions)", &["count", "cumsum"]));
        assert_eq!(asked_aggregations("total revenue"), ["sum"]);
    }

    #[test]
    fn units_are_read_from_words_and_column_names() {
        assert_eq!(asked_units("procurement cost by supplier"), ["money"]);
        assert_eq!(asked_units("shipping volume in units"), ["units"]);
        assert!(asked_units("how many orders").is_empty());
        assert!(counts_in("sum(product_price)", &["money"]));
        assert!(counts_in("SUM(shipment_qty)", &["units"]));
        assert!(!counts_in("count(*)", &["money", "units"]));
        assert!(!counts_in("sum(shipment_qty)", &["money"]));
        // Whole words of the column names: `priced_at` is not a price.
        assert!(!counts_in("max(priced_at)", &["money"]));
    }

    #[test]
    fn a_measure_that_leads_makes_a_metric_question() {
        let i = classify(
            "what we pay for a thousand impressions",
            Some("ads.campaigns.cpm"),
        );
        assert_eq!(i.kind, IntentKind::Metric);
        assert!(i.why.contains("ads.campaigns.cpm"), "{}", i.why);
    }
}
