//! dbt metrics as named measures (docs/spec/importers.md §17.3). Every metric becomes a measure of
//! the model an agent asking about it would open: the model of its measure (simple, cumulative),
//! of its numerator (ratio), of its base (conversion), or the model most of its inputs live on
//! (derived; the first input's on a tie). A latest-spec metric declared on a model stays there.
//! Inputs on the same model are named; a simple input on another model is aggregated over a
//! dotted path through the join (`sum(orders.order_cost)`), and anything else is written as
//! `<model>.<metric>` and reported as lossy.

use std::collections::HashMap;

use serde_json::json;

use super::convert::{Built, MeasureHome};
use super::formula::{and, literal, most_common, substitute};
use super::jinja::translate_on;
use super::spec::{Conversion, Cumulative, Input, Metric, MetricKind};
use crate::import::{column, count_and_grain, measure, window_arg, Fate, Tally};

/// Why a metric cannot be imported (it is skipped, with this as the reason).
#[derive(Debug, Clone, thiserror::Error)]
enum Unresolved {
    /// A metric among its own inputs.
    #[error("metric '{name}' refers to itself through {through}")]
    Cycle { name: String, through: String },
    /// An input names no metric of the project.
    #[error("no metric '{0}'")]
    NoMetric(String),
    /// An input names no measure of the project.
    #[error("no semantic model has the measure '{0}'")]
    NoMeasure(String),
    /// What the spec reader found wrong with the metric itself.
    #[error("{0}")]
    Invalid(String),
}

/// A metric's formula on its model; `single` set when it is one aggregation of one column.
struct Formula {
    model: usize,
    formula: String,
    single: Option<MeasureHome>,
}

/// A resolved metric: its model and the formula that computes it there.
#[derive(Debug, Clone)]
struct Resolved {
    model: usize,
    /// How another formula on the same model names it.
    name: String,
    /// Set when it is one aggregation of one column (a simple metric without a filter).
    single: Option<MeasureHome>,
}

struct Resolver<'a> {
    metrics: HashMap<&'a str, &'a Metric>,
    built: &'a mut Built,
    done: HashMap<String, Result<Resolved, Unresolved>>,
    visiting: Vec<String>,
    problems: HashMap<String, Vec<(Fate, String)>>,
    leaves: HashMap<(usize, String, String), String>,
}

/// Where each imported metric went: its model and the measure's name there.
pub type Placed = HashMap<String, (usize, String)>;

/// Adds every metric to its model as a named measure and records each in `tally` (a metric a
/// measure's `create_metric` made as a `created_metric`).
pub fn add(metrics: &[Metric], built: &mut Built, tally: &mut Tally) -> Placed {
    let mut r = Resolver {
        metrics: metrics.iter().map(|m| (m.name.as_str(), m)).collect(),
        built,
        done: HashMap::new(),
        visiting: Vec::new(),
        problems: HashMap::new(),
        leaves: HashMap::new(),
    };
    for m in metrics {
        for loss in &m.lossy {
            r.note(&m.name, Fate::Lossy, loss.clone());
        }
    }
    for m in metrics {
        let _ = r.resolve(&m.name);
    }
    for m in metrics {
        let object = format!("metric '{}'", m.name);
        let mut problems = r.problems.remove(&m.name).unwrap_or_default();
        if let Some(Err(why)) = r.done.get(&m.name) {
            problems.push((Fate::Skipped, why.to_string()));
        }
        let kind = if m.created {
            "created_metric"
        } else {
            "metric"
        };
        tally.object(kind, &object, &m.at, problems);
    }
    r.done
        .into_iter()
        .filter_map(|(name, done)| done.ok().map(|d| (name, (d.model, d.name))))
        .collect()
}

impl<'a> Resolver<'a> {
    fn note(&mut self, metric: &str, fate: Fate, message: String) {
        self.problems
            .entry(metric.to_owned())
            .or_default()
            .push((fate, message));
    }

    fn resolve(&mut self, name: &str) -> Result<Resolved, Unresolved> {
        if let Some(done) = self.done.get(name) {
            return done.clone();
        }
        if self.visiting.iter().any(|v| v == name) {
            return Err(Unresolved::Cycle {
                name: name.to_owned(),
                through: self.visiting.join(" → "),
            });
        }
        let Some(metric) = self.metrics.get(name).copied() else {
            return Err(Unresolved::NoMetric(name.to_owned()));
        };
        self.visiting.push(name.to_owned());
        let result = self.build(metric);
        self.visiting.pop();
        self.done.insert(name.to_owned(), result.clone());
        result
    }

    /// A metric input, resolved; a skipped input makes this metric say which one and why.
    fn resolve_input(&mut self, name: &str) -> Result<Resolved, Unresolved> {
        self.resolve(name).map_err(|e| match e {
            Unresolved::Invalid(why) => {
                Unresolved::Invalid(format!("its input metric '{name}' is skipped ({why})"))
            }
            other => other,
        })
    }

    /// A measure input's home.
    fn measure(&self, input: &Input) -> Result<MeasureHome, Unresolved> {
        self.built
            .measures
            .get(&input.name)
            .cloned()
            .ok_or_else(|| Unresolved::NoMeasure(input.name.clone()))
    }

    /// An input's home model: a measure's, or a metric's once resolved.
    fn input_model(&mut self, input: &Input, is_metric: bool) -> Result<usize, Unresolved> {
        if is_metric {
            Ok(self.resolve_input(&input.name)?.model)
        } else {
            Ok(self.measure(input)?.model)
        }
    }

    /// The model a metric goes on: the one it is `declared` on, else its main input's.
    fn home_model(
        &mut self,
        declared: Option<usize>,
        input: &Input,
        is_metric: bool,
    ) -> Result<usize, Unresolved> {
        match declared {
            Some(d) => Ok(d),
            None => self.input_model(input, is_metric),
        }
    }

    fn build(&mut self, m: &'a Metric) -> Result<Resolved, Unresolved> {
        let declared = m
            .declared_on
            .as_ref()
            .and_then(|d| self.built.by_name.get(d).copied());
        let Formula {
            model,
            formula,
            single,
        } = match &m.kind {
            MetricKind::Invalid(why) => return Err(Unresolved::Invalid(why.clone())),
            MetricKind::Simple { measure: input } => self.simple(m, declared, input)?,
            MetricKind::Ratio {
                numerator,
                denominator,
            } => {
                let model = self.home_model(declared, numerator, true)?;
                let num = self.operand(m, model, numerator, m.filter.as_deref())?;
                let den = self.operand(m, model, denominator, m.filter.as_deref())?;
                Formula {
                    model,
                    formula: format!("{num} / nullif({den}, 0)"),
                    single: None,
                }
            }
            MetricKind::Derived { expr, inputs } => self.derived(m, declared, expr, inputs)?,
            MetricKind::Cumulative(c) => self.cumulative(m, declared, c)?,
            MetricKind::Conversion(c) => self.conversion(m, declared, c)?,
        };
        let formula = match &m.fill_nulls_with {
            Some(v) if !v.is_null() => format!("coalesce({formula}, {})", literal(v)),
            _ => formula,
        };
        if m.join_to_timespine {
            self.note(&m.name, Fate::Lossy, "join_to_timespine (a row for every time bucket, empty ones included) is a query-time choice in SLayer; group by time with a date range to get it".into());
        }
        let name = self.place(m, model, formula, single.is_some());
        Ok(Resolved {
            model,
            name,
            single,
        })
    }

    /// A simple metric: its measure, filtered, or read through a join from another model.
    fn simple(
        &mut self,
        m: &Metric,
        declared: Option<usize>,
        input: &Input,
    ) -> Result<Formula, Unresolved> {
        let home = self.measure(input)?;
        let filter = and(m.filter.as_deref(), input.filter.as_deref());
        let model = declared.unwrap_or(home.model);
        // A simple metric named as its measure is that measure (always in the latest spec):
        // its formula is the aggregation, so a default (`fill_nulls_with`) wraps it in place.
        let own = input.name == m.name && (is_own_measure(m) || filter.is_none());
        let (formula, single) = match filter {
            Some(f) => (self.filtered(m, &home, &f, model), None),
            None if model == home.model && own => (home.over(&home.column), Some(home.clone())),
            None if model == home.model => (input.name.clone(), Some(home.clone())),
            None => (self.across(m, model, &home), None),
        };
        Ok(Formula {
            model,
            formula,
            single,
        })
    }

    /// A derived metric: its expression with each input's formula (time-shifted by its
    /// `offset_window`) in place of the input's name.
    fn derived(
        &mut self,
        m: &Metric,
        declared: Option<usize>,
        expr: &str,
        inputs: &[Input],
    ) -> Result<Formula, Unresolved> {
        let mut models = Vec::new();
        for i in inputs {
            models.push(self.input_model(i, true)?);
        }
        let model = declared.unwrap_or_else(|| most_common(&models));
        if m.filter.is_some() {
            self.note(
                &m.name,
                Fate::Lossy,
                "a filter on a derived metric cannot be pushed into its inputs; it is not applied"
                    .into(),
            );
        }
        let mut refs = HashMap::new();
        for i in inputs {
            let mut text = self.operand(m, model, i, None)?;
            if let Some(w) = &i.offset_window {
                match count_and_grain(w) {
                    Some((n, grain)) => text = format!("time_shift({text}, -{n}, '{grain}')"),
                    None => self.note(&m.name, Fate::Lossy, format!("offset_window '{w}' of input '{}' is not a count and a standard grain; not applied", i.name)),
                }
            }
            if let Some(g) = &i.offset_to_grain {
                self.note(&m.name, Fate::Lossy, format!("offset_to_grain '{g}' of input '{}' has no SLayer form (no shift to the start of a grain); not applied", i.name));
            }
            refs.insert(i.alias.clone().unwrap_or(i.name.clone()), text);
        }
        Ok(Formula {
            model,
            formula: substitute(expr, &refs),
            single: None,
        })
    }

    /// A cumulative metric: a running total of its input, or a windowed aggregation where the
    /// input is one plain aggregation on the same model.
    fn cumulative(
        &mut self,
        m: &Metric,
        declared: Option<usize>,
        c: &Cumulative,
    ) -> Result<Formula, Unresolved> {
        let input = &c.input;
        let model = self.home_model(declared, input, c.input_is_metric)?;
        let operand = if c.input_is_metric {
            self.operand(m, model, input, m.filter.as_deref())?
        } else {
            let home = self.measure(input)?;
            match and(m.filter.as_deref(), input.filter.as_deref()) {
                Some(f) => self.filtered(m, &home, &f, model),
                None if home.model == model => input.name.clone(),
                None => self.across(m, model, &home),
            }
        };
        if let Some(g) = &c.grain_to_date {
            self.note(&m.name, Fate::Lossy, format!("grain_to_date '{g}' (restart every {g}) has no SLayer form; imported as a running total from the start"));
        }
        if let Some(p) = c.period_agg.as_deref().filter(|p| *p != "first") {
            self.note(
                &m.name,
                Fate::Lossy,
                format!("period_agg '{p}' has no SLayer form; the running total is taken as is"),
            );
        }
        let formula = match c.window.as_deref() {
            None => format!("cumsum({operand})"),
            Some(window) => match window_arg(window) {
                Some(w) => match self.plain_aggregation(m, model, input, c.input_is_metric)? {
                    Some(h) => {
                        format!("{}({}{}, window='{w}')", h.function, h.column, h.extra_args)
                    }
                    None => {
                        self.note(&m.name, Fate::Lossy, format!("a window of '{window}' over an input that is not one plain aggregation has no SLayer form; imported as a running total"));
                        format!("cumsum({operand})")
                    }
                },
                None => {
                    self.note(&m.name, Fate::Lossy, format!("window '{window}' is not a count and a unit; imported as a running total"));
                    format!("cumsum({operand})")
                }
            },
        };
        Ok(Formula {
            model,
            formula,
            single: None,
        })
    }

    /// The one plain aggregation `input` is on `model`, when it is one and neither it nor the
    /// metric `m` filters it: what a trailing window can be put on.
    fn plain_aggregation(
        &mut self,
        m: &Metric,
        model: usize,
        input: &Input,
        input_is_metric: bool,
    ) -> Result<Option<MeasureHome>, Unresolved> {
        let home = if input_is_metric {
            self.resolve_input(&input.name)?.single
        } else {
            self.measure(input).ok()
        };
        Ok(home.filter(|h| h.model == model && input.filter.is_none() && m.filter.is_none()))
    }

    /// A conversion metric: the conversion input over the base input on the same rows (the
    /// funnel itself has no SLayer form).
    fn conversion(
        &mut self,
        m: &Metric,
        declared: Option<usize>,
        c: &Conversion,
    ) -> Result<Formula, Unresolved> {
        let Conversion {
            base,
            conversion,
            inputs_are_metrics,
            calculation,
            window,
        } = c;
        let model = self.home_model(declared, base, *inputs_are_metrics)?;
        let (b, c) = if *inputs_are_metrics {
            (
                self.operand(m, model, base, None)?,
                self.operand(m, model, conversion, None)?,
            )
        } else {
            let (hb, hc) = (self.measure(base)?, self.measure(conversion)?);
            let op = |r: &mut Self, h: &MeasureHome, i: &Input| match &i.filter {
                Some(f) => r.filtered(m, h, f, model),
                None if h.model == model => i.name.clone(),
                None => r.across(m, model, h),
            };
            (op(self, &hb, base), op(self, &hc, conversion))
        };
        let window = window
            .as_deref()
            .map(|w| format!(" within {w}"))
            .unwrap_or_default();
        self.note(&m.name, Fate::Lossy, format!("a conversion funnel (the same entity converting{window}) has no SLayer form; imported as the conversion measure over the base measure on the same rows"));
        let formula = if calculation == "conversions" {
            c
        } else {
            format!("{c} / nullif({b}, 0)")
        };
        Ok(Formula {
            model,
            formula,
            single: None,
        })
    }

    /// Puts the metric's measure on `model`; the name other formulas there use for it.
    fn place(&mut self, m: &Metric, model: usize, formula: String, single: bool) -> String {
        let target = &mut self.built.models[model];
        // A simple metric that is its own measure rewrites it: the metric keeps its name, and
        // its default (or, when it is the measure itself, its filter) goes in place.
        let unfiltered = m.filter.is_none()
            && matches!(&m.kind, MetricKind::Simple { measure } if measure.filter.is_none());
        let own = matches!(&m.kind, MetricKind::Simple { measure } if measure.name == m.name)
            && (is_own_measure(m) || unfiltered);
        if own {
            if let Some(me) = target
                .measures
                .iter_mut()
                .find(|x| x.name.as_deref() == Some(&m.name))
            {
                me.formula = formula;
                me.label = m.label.clone().or(me.label.take());
                me.description = m.description.clone().or(me.description.take());
                return m.name.clone();
            }
        }
        // A simple metric named as its own measure is that measure: it gains the metric's words.
        if single && formula == m.name {
            if let Some(me) = target
                .measures
                .iter_mut()
                .find(|x| x.name.as_deref() == Some(&m.name))
            {
                if m.label.is_some() {
                    me.label = m.label.clone();
                }
                if m.description.is_some() {
                    me.description = m.description.clone();
                }
                return m.name.clone();
            }
        }
        let taken = |n: &str| {
            target.columns.iter().any(|c| c.name == n)
                || target.measures.iter().any(|x| x.name.as_deref() == Some(n))
        };
        let mut name = m.name.clone();
        if taken(&name) {
            name = format!("{}_metric", m.name);
            while taken(&name) {
                name.push_str("_metric");
            }
            let message = format!(
                "model '{}' already has a column or measure named '{}'; imported as '{name}'",
                target.name, m.name
            );
            self.problems
                .entry(m.name.clone())
                .or_default()
                .push((Fate::Lossy, message));
        }
        let target = &mut self.built.models[model];
        let mut me = measure(&name, formula);
        me.label = m.label.clone();
        me.description = m.description.clone();
        if m.hidden {
            me.extra.insert("meta".into(), json!({"hidden": true}));
        }
        target.measures.push(me);
        name
    }

    /// How a ratio, derived or cumulative formula on `model` names `input` (a metric), with
    /// `filter` (the metric's own) and the input's filter applied when it can be.
    fn operand(
        &mut self,
        m: &Metric,
        model: usize,
        input: &Input,
        filter: Option<&str>,
    ) -> Result<String, Unresolved> {
        let resolved = self.resolve_input(&input.name)?;
        let filter = and(filter, input.filter.as_deref());
        match (&resolved.single, filter) {
            (Some(home), Some(f)) => Ok(self.filtered(m, home, &f, model)),
            (_, Some(_)) => {
                self.note(&m.name, Fate::Lossy, format!("input '{}' is not one plain aggregation, so its filter cannot be pushed into it; not applied", input.name));
                Ok(self.name_on(m, model, &resolved))
            }
            (_, None) => Ok(self.name_on(m, model, &resolved)),
        }
    }

    fn name_on(&mut self, m: &Metric, model: usize, r: &Resolved) -> String {
        if r.model == model {
            return r.name.clone();
        }
        match &r.single {
            Some(home) => self.across(m, model, home),
            None => {
                let other = self.built.models[r.model].name.clone();
                self.note(&m.name, Fate::Lossy, format!("input '{}' is a formula of model '{other}'; a SLayer formula cannot use another model's measure, so it is written as '{other}.{}'", r.name, r.name));
                format!("{other}.{}", r.name)
            }
        }
    }

    /// One aggregation of another model's column, through the join (`sum(orders.amount)`).
    fn across(&mut self, m: &Metric, model: usize, home: &MeasureHome) -> String {
        let other = self.built.models[home.model].name.clone();
        if !self.built.joined[model].contains(&other)
            && !self.built.joined[home.model].contains(&self.built.models[model].name)
        {
            let here = self.built.models[model].name.clone();
            self.note(&m.name, Fate::Lossy, format!("its input on model '{other}' is not joined to '{here}' directly; the formula names it through a path SLayer cannot follow yet"));
        }
        home.over(&format!("{other}.{}", home.column))
    }

    /// A filtered copy of a measure's column on `home`'s model (a leaf with a `filter`, as
    /// SLayer pushes metric filters down), aggregated.
    fn filtered(&mut self, m: &Metric, home: &MeasureHome, filter: &str, model: usize) -> String {
        let (predicate, losses) = translate_on(self.built, home.model, filter);
        for loss in losses {
            self.note(&m.name, Fate::Lossy, format!("filter: {loss}"));
        }
        let key = (home.model, home.sql.clone(), predicate.clone());
        let leaf = match self.leaves.get(&key) {
            Some(leaf) => leaf.clone(),
            None => {
                let target = &mut self.built.models[home.model];
                let mut name = format!("{}_filtered", m.name);
                while target.columns.iter().any(|c| c.name == name)
                    || target
                        .measures
                        .iter()
                        .any(|x| x.name.as_deref() == Some(&name))
                {
                    name.push_str("_col");
                }
                let mut c = column(&name);
                c.sql = Some(home.sql.clone());
                c.filter = Some(predicate);
                c.hidden = true;
                c.data_type = target
                    .columns
                    .iter()
                    .find(|c| c.name == home.column)
                    .map(|c| c.data_type)
                    .unwrap_or_default();
                target.columns.push(c);
                self.leaves.insert(key, name.clone());
                name
            }
        };
        if home.model == model {
            home.over(&leaf)
        } else {
            let leaf_home = MeasureHome {
                column: leaf,
                ..home.clone()
            };
            self.across(m, model, &leaf_home)
        }
    }
}

/// Whether `m` is its measure by the spec (the latest spec's model metrics, the newer simple
/// shape), not only by sharing its name.
fn is_own_measure(m: &Metric) -> bool {
    m.declared_on.is_some() || m.own_measure
}
