//! `slayer-index import dbt PATH`: a dbt project's semantic layer, offline (docs/spec/importers.md
//! §17). Reads `dbt_project.yml` (its `name`, `model-paths` and `docs-paths`), every YAML file
//! under the model paths in both the legacy spec and the latest one, `{% docs %}` blocks from `.md`
//! files, and, when `dbt docs generate` or `dbt compile` left them, `target/manifest.json`
//! (relations, column descriptions), `target/semantic_manifest.json` (each semantic model's
//! compiled relation) and `target/catalog.json` (the warehouse's column types).

mod convert;
mod formula;
mod jinja;
mod joins;
mod metrics;
mod saved;
mod spec;
mod target;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::IndexError;
use crate::import::{
    nothing_read, problem, project_files_within, reason, At, Fate, Imported, NameLines, Tally,
    UniqueNames,
};
use crate::import::{read_bounded, Syntax};
use convert::ColumnDocs;
use slayer_common::limits::Limits;
use spec::{Input, Metric, MetricKind, SavedQuery, SemanticModel};

/// A project file read whole within the limits (its size, how deep it nests).
fn read_text(path: &Path, syntax: Syntax, limits: &Limits) -> Result<String, IndexError> {
    read_bounded(path, syntax, limits).map_err(|why| problem(path, why))
}

fn yaml(path: &Path, text: &str) -> Result<Value, IndexError> {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Null)) => Ok(v),
        Ok(_) => Err(problem(path, "expected a YAML mapping at the top level")),
        Err(e) => Err(problem(path, format!("invalid YAML: {e}"))),
    }
}

/// Files under `dir` (a folder of the project `root`) with one of `extensions` (none when there
/// is no such folder); what the walk passed over is named in `tally`.
fn files_under(
    root: &Path,
    dir: &Path,
    extensions: &[&str],
    out: &mut Vec<PathBuf>,
    tally: &mut Tally,
) -> Result<(), IndexError> {
    if dir.is_dir() {
        let wanted = |name: &str| extensions.iter().any(|x| name.ends_with(x));
        let skip = ["target", "dbt_packages", "node_modules"];
        let walked = project_files_within(dir, root, &wanted, &skip)?;
        walked.warn_passed_over(tally);
        out.extend(walked.files);
    }
    Ok(())
}

fn paths_of(project: &Value, key: &str, default: &str) -> Vec<String> {
    match project.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => vec![default.to_owned()],
    }
}

/// What one dbt_metrics package metric says of the dbt model it aggregates.
struct PackageModel {
    name: String,
    timestamp: Option<String>,
    dimensions: Vec<String>,
    at: At,
}

/// Everything read from the project's files.
#[derive(Default)]
struct Read {
    semantic_models: Vec<SemanticModel>,
    metrics: Vec<Metric>,
    saved_queries: Vec<SavedQuery>,
    /// What the dbt_metrics package's metrics say of their dbt models.
    package_models: Vec<PackageModel>,
    docs: ColumnDocs,
    doc_blocks: HashMap<String, String>,
}

/// Imports the dbt project at `dir` as the datasource `datasource` (default: the project's
/// `name`).
pub fn import(
    dir: &Path,
    datasource: Option<&str>,
    limits: &Limits,
) -> Result<Imported, IndexError> {
    let project_file = dir.join("dbt_project.yml");
    if !project_file.is_file() {
        return Err(problem(
            dir,
            "not a dbt project: there is no dbt_project.yml here (import slayer, cube and ossie read the other formats)",
        ));
    }
    let project = yaml(
        &project_file,
        &read_text(&project_file, Syntax::Yaml, limits)?,
    )?;
    let project_name = project
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(name) = datasource.map(str::to_owned).or(project_name) else {
        return Err(problem(
            &project_file,
            "the project has no name; give the datasource's with --datasource",
        ));
    };
    let mut tally = Tally::default();
    let read = read_project(dir, &project, limits, &mut tally)?;
    for sm in read
        .semantic_models
        .iter()
        .filter(|sm| !sm.of_package_metrics)
    {
        tally.object(
            "semantic_model",
            &format!("semantic model '{}'", sm.name),
            &sm.at,
            vec![],
        );
    }
    let metric_names: Vec<String> = read.metrics.iter().map(|m| m.name.clone()).collect();
    let mut built = convert::build(
        &read.semantic_models,
        &name,
        &read.docs,
        &metric_names,
        &mut tally,
    );
    joins::join(&read.semantic_models, &mut built, &mut tally);
    joins::join_tested(&read.semantic_models, &read.docs, &mut built);
    let placed = metrics::add(&read.metrics, &mut built, &mut tally);
    jinja_left(&read, &mut tally);
    let memories = saved::memories(&read.saved_queries, &built, &placed, &name, &mut tally);
    let mut imported = Imported::of(
        "dbt",
        dir,
        name,
        built.models,
        tally,
        limits.description_bytes,
    );
    imported.memories = memories;
    Ok(imported)
}

/// Every YAML file under the model paths, the `{% docs %}` blocks of the `.md` files under
/// the model and docs paths, and `target/`, checked and with the doc blocks filled in. A file
/// that cannot be read is skipped and named; the project is refused only when nothing of its
/// semantic layer could be read and some file could not.
fn read_project(
    dir: &Path,
    project: &Value,
    limits: &Limits,
    tally: &mut Tally,
) -> Result<Read, IndexError> {
    let mut read = Read::default();
    let model_paths = paths_of(project, "model-paths", "models");
    let mut yaml_files = Vec::new();
    let mut md_files = Vec::new();
    for p in &model_paths {
        files_under(
            dir,
            &dir.join(p),
            &[".yml", ".yaml"],
            &mut yaml_files,
            tally,
        )?;
    }
    for p in model_paths
        .iter()
        .chain(paths_of(project, "docs-paths", "models").iter())
    {
        files_under(dir, &dir.join(p), &[".md"], &mut md_files, tally)?;
    }
    md_files.sort();
    md_files.dedup();
    let rel = |f: &Path| f.strip_prefix(dir).unwrap_or(f).to_owned();
    for md in &md_files {
        match read_text(md, Syntax::Text, limits) {
            Ok(text) => read.doc_blocks.extend(jinja::doc_blocks(&text)),
            Err(e) => tally.unreadable_file(&rel(md), reason(e)),
        }
    }
    let mut unreadable = Vec::new();
    for file in &yaml_files {
        if let Err(e) = read_file(dir, file, limits, &mut read, tally) {
            let why = reason(e);
            unreadable.push(format!("{}: {why}", rel(file).display()));
            tally.unreadable_file(&rel(file), why);
        }
    }
    if read.semantic_models.is_empty() && read.metrics.is_empty() && !unreadable.is_empty() {
        return Err(nothing_read(dir, "semantic model or metric", &unreadable));
    }
    target::read_target(dir, &mut read.docs, tally);
    package_models(&mut read);
    inline_measures(&mut read);
    created_metrics(&mut read);
    keep_first_of_each_name(&mut read, tally);
    fill_docs(&mut read);
    Ok(read)
}

/// The dbt models the dbt_metrics package's metrics aggregate, as semantic models (unless the
/// project has one of that name): the metrics' `timestamp` (the first one read is the model's
/// time) and `dimensions` are its dimensions. Their measures come from the metrics.
fn package_models(read: &mut Read) {
    for PackageModel {
        name,
        timestamp,
        dimensions,
        at,
    } in std::mem::take(&mut read.package_models)
    {
        let i = match read.semantic_models.iter().position(|sm| sm.name == name) {
            Some(i) => i,
            None => {
                read.semantic_models.push(SemanticModel {
                    name: name.clone(),
                    dbt_model: name,
                    of_package_metrics: true,
                    at,
                    ..SemanticModel::default()
                });
                read.semantic_models.len() - 1
            }
        };
        let sm = &mut read.semantic_models[i];
        if !sm.of_package_metrics {
            continue;
        }
        let here = sm.at.clone();
        let mut add = |name: &str, is_time: bool| {
            if !sm.dimensions.iter().any(|d| d.name == name) {
                sm.dimensions.push(spec::Dimension {
                    name: name.to_owned(),
                    is_time,
                    kind_text: if is_time { "time" } else { "categorical" }.into(),
                    expr: name.to_owned(),
                    granularity: None,
                    description: None,
                    label: None,
                    at: here.clone(),
                });
            }
        };
        if let Some(t) = &timestamp {
            add(t, true);
        }
        for d in &dimensions {
            add(d, false);
        }
        if sm.agg_time_dimension.is_none() {
            sm.agg_time_dimension = timestamp;
        }
    }
}

/// The newer simple metrics' own aggregations become measures of their semantic models (a
/// semantic model not in the project makes the metric invalid, named).
fn inline_measures(read: &mut Read) {
    for m in &mut read.metrics {
        let Some((model, x)) = m.inline_measure.take() else {
            continue;
        };
        match read.semantic_models.iter_mut().find(|sm| sm.name == model) {
            Some(sm) if !sm.measures.iter().any(|y| y.name == x.name) => sm.measures.push(x),
            Some(_) => {}
            None => {
                m.kind = MetricKind::Invalid(format!(
                    "its metric_aggregation_params name semantic model '{model}', which is not in the project"
                ))
            }
        }
    }
}

/// A measure's `create_metric: true` is a simple metric of its name, as MetricFlow makes it
/// (unless the project writes one of that name itself).
fn created_metrics(read: &mut Read) {
    for sm in &read.semantic_models {
        for x in sm.measures.iter().filter(|x| x.create_metric) {
            if read.metrics.iter().any(|m| m.name == x.name) {
                continue;
            }
            read.metrics.push(Metric {
                name: x.name.clone(),
                label: x.label.clone(),
                description: x.description.clone(),
                filter: None,
                fill_nulls_with: None,
                join_to_timespine: false,
                hidden: false,
                kind: MetricKind::Simple {
                    measure: Input {
                        name: x.name.clone(),
                        ..Input::default()
                    },
                },
                declared_on: None,
                created: true,
                inline_measure: None,
                own_measure: false,
                lossy: Vec::new(),
                at: x.at.clone(),
            });
        }
    }
}

/// One YAML file of the project: where it is, its text (to find objects' lines) and its value.
struct YamlFile<'a> {
    path: &'a Path,
    /// Relative to the project folder.
    rel: PathBuf,
    text: String,
    value: Value,
    /// Its `name:` lines, read once.
    names: NameLines,
}

impl YamlFile<'_> {
    /// The 1-based line of the top-level `key:` (1 when there is none).
    fn key_line(&self, key: &str) -> usize {
        self.text
            .lines()
            .position(|l| l.starts_with(&format!("{key}:")))
            .map_or(1, |i| i + 1)
    }

    fn line_in(&self, name: &str, from: usize) -> usize {
        self.names.line_of(name, from)
    }

    fn at(&self, name: &str, from: usize) -> At {
        At {
            file: self.rel.clone(),
            line: self.line_in(name, from),
        }
    }

    /// The items of the top-level `key` (one mapping counts as a list of one, but for `models`).
    fn list(&self, key: &str) -> Result<Vec<Value>, IndexError> {
        match self.value.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items.clone()),
            Some(o @ Value::Object(_)) if key != "models" => Ok(vec![o.clone()]),
            Some(_) => Err(problem(self.path, format!("'{key}' must be a list"))),
        }
    }
}

fn read_file(
    dir: &Path,
    file: &Path,
    limits: &Limits,
    read: &mut Read,
    tally: &mut Tally,
) -> Result<(), IndexError> {
    let text = read_text(file, Syntax::Yaml, limits)?;
    let value = yaml(file, &text)?;
    let f = YamlFile {
        path: file,
        rel: file.strip_prefix(dir).unwrap_or(file).to_owned(),
        names: NameLines::new(&text),
        text,
        value,
    };
    legacy_semantic_models(&f, read, tally)?;
    top_level_metrics(&f, read, tally)?;
    saved_queries(&f, read, tally)?;
    models(&f, read)
}

/// An item of the top-level `key` without a name: skipped and named.
fn unnamed(f: &YamlFile, key: &str, i: usize, tally: &mut Tally) {
    let kind = match key {
        "semantic_models" => "semantic_model",
        "saved_queries" => "saved_query",
        _ => "metric",
    };
    let at = At {
        file: f.rel.clone(),
        line: f.key_line(key),
    };
    let object = format!("{} #{} of {key}", kind.replace('_', " "), i + 1);
    tally.object(
        kind,
        &object,
        &at,
        vec![(Fate::Skipped, "it has no name".into())],
    );
}

/// The legacy spec's top-level `semantic_models:`.
fn legacy_semantic_models(
    f: &YamlFile,
    read: &mut Read,
    tally: &mut Tally,
) -> Result<(), IndexError> {
    let from = f.key_line("semantic_models");
    for (i, item) in f.list("semantic_models")?.into_iter().enumerate() {
        let Some(name) = spec::text(&item, "name") else {
            unnamed(f, "semantic_models", i, tally);
            continue;
        };
        let sm_at = f.at(&name, from);
        let line_in = |name: &str, from: usize| f.line_in(name, from);
        if let Some(sm) = spec::legacy_semantic_model(&item, sm_at, &line_in) {
            read.semantic_models.push(sm);
        }
    }
    Ok(())
}

/// Top-level `metrics:`: the legacy spec's (with `type_params`) or the latest spec's.
fn top_level_metrics(f: &YamlFile, read: &mut Read, tally: &mut Tally) -> Result<(), IndexError> {
    let from = f.key_line("metrics");
    for (i, item) in f.list("metrics")?.into_iter().enumerate() {
        let Some(name) = spec::text(&item, "name") else {
            unnamed(f, "metrics", i, tally);
            continue;
        };
        let m_at = f.at(&name, from);
        if spec::is_package_metric(&item) {
            if let Some(p) = spec::package_metric(&item, m_at.clone()) {
                if let Some(name) = p.model {
                    read.package_models.push(PackageModel {
                        name,
                        timestamp: p.timestamp,
                        dimensions: p.dimensions,
                        at: m_at,
                    });
                }
                read.metrics.push(p.metric);
            }
        } else if item.get("type_params").is_some() {
            read.metrics.extend(spec::legacy_metric(&item, m_at));
        } else if let Some((metric, _)) = spec::latest_metric(&item, None, m_at) {
            read.metrics.push(metric);
        }
    }
    Ok(())
}

/// Top-level `saved_queries:` (both specs write them alike).
fn saved_queries(f: &YamlFile, read: &mut Read, tally: &mut Tally) -> Result<(), IndexError> {
    let from = f.key_line("saved_queries");
    for (i, item) in f.list("saved_queries")?.into_iter().enumerate() {
        let Some(name) = spec::text(&item, "name") else {
            unnamed(f, "saved_queries", i, tally);
            continue;
        };
        let at = f.at(&name, from);
        read.saved_queries.extend(spec::saved_query(&item, at));
    }
    Ok(())
}

/// `models:`: what their columns say (descriptions, key tests, relationships) and, in the
/// latest spec, each model's semantic model and its metrics.
fn models(f: &YamlFile, read: &mut Read) -> Result<(), IndexError> {
    let from = f.key_line("models");
    for item in f.list("models")? {
        let Some(model_name) = spec::text(&item, "name") else {
            continue;
        };
        let model_at = f.at(&model_name, from);
        for c in spec::items(&item, "columns") {
            column_docs(&model_name, c, &mut read.docs);
        }
        let line_in = |name: &str, from: usize| f.line_in(name, from);
        let Some(mut sm) = spec::latest_semantic_model(&item, model_at.clone(), &line_in) else {
            continue;
        };
        for m in spec::items(&item, "metrics") {
            let Some(name) = spec::text(m, "name") else {
                continue;
            };
            let m_at = f.at(&name, model_at.line);
            if let Some((metric, measure)) = spec::latest_metric(m, Some(&sm.name), m_at) {
                sm.measures.extend(measure);
                read.metrics.push(metric);
            }
        }
        read.semantic_models.push(sm);
    }
    Ok(())
}

/// A dbt model's column `c`: its description, the other model a `relationships` test points
/// it to, and whether its tests make it a key (`unique` and `not_null`).
fn column_docs(model_name: &str, c: &Value, docs: &mut ColumnDocs) {
    let Some(column) = spec::text(c, "name") else {
        return;
    };
    if let Some(d) = spec::text(c, "description") {
        docs.descriptions
            .entry((model_name.to_owned(), column.clone()))
            .or_insert(d);
    }
    let tests: Vec<&Value> = ["data_tests", "tests"]
        .iter()
        .flat_map(|k| spec::items(c, k))
        .collect();
    let test_names: Vec<String> = tests
        .iter()
        .filter_map(|t| match t {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => m.keys().next().cloned(),
            _ => None,
        })
        .collect();
    for t in &tests {
        if let Some(r) = t.get("relationships") {
            let r = r.get("arguments").unwrap_or(r);
            if let (Some(to), Some(field)) = (spec::text(r, "to"), spec::text(r, "field")) {
                docs.references
                    .entry(model_name.to_owned())
                    .or_default()
                    .push((column.clone(), spec::ref_name(&to), field));
            }
        }
    }
    if test_names.iter().any(|t| t == "unique") && test_names.iter().any(|t| t == "not_null") {
        docs.keys
            .entry(model_name.to_owned())
            .or_default()
            .push(column);
    }
}

/// Descriptions still holding Jinja once the doc blocks are in (a macro, a variable, a doc
/// block not in the project) keep it as text; each is named.
fn jinja_left(read: &Read, tally: &mut Tally) {
    let mut found: Vec<(String, At)> = Vec::new();
    let mut check = |object: String, d: &Option<String>, at: &At| {
        if d.as_deref()
            .is_some_and(|d| d.contains("{{") || d.contains("{%"))
        {
            found.push((object, at.clone()));
        }
    };
    for sm in &read.semantic_models {
        check(
            format!("semantic model '{}'", sm.name),
            &sm.description,
            &sm.at,
        );
        for x in &sm.dimensions {
            check(
                format!("dimension '{}.{}'", sm.name, x.name),
                &x.description,
                &x.at,
            );
        }
        for x in &sm.measures {
            check(
                format!("measure '{}.{}'", sm.name, x.name),
                &x.description,
                &x.at,
            );
        }
    }
    for m in &read.metrics {
        check(format!("metric '{}'", m.name), &m.description, &m.at);
    }
    for (object, at) in found {
        tally.object(
            "description",
            &object,
            &at,
            vec![(
                crate::import::Fate::Lossy,
                "its description holds Jinja that cannot be evaluated offline; kept as text".into(),
            )],
        );
    }
}

/// Two semantic models, metrics or saved queries of one name: dbt refuses such a project; the
/// import keeps the first and skips the second, named.
fn keep_first_of_each_name(read: &mut Read, tally: &mut Tally) {
    UniqueNames::new("semantic model").keep_first(
        &mut read.semantic_models,
        "semantic_model",
        |sm| (&sm.name, &sm.at),
        tally,
    );
    UniqueNames::new("metric").keep_first(&mut read.metrics, "metric", |m| (&m.name, &m.at), tally);
    UniqueNames::new("saved query").keep_first(
        &mut read.saved_queries,
        "saved_query",
        |q| (&q.name, &q.at),
        tally,
    );
}

/// `{{ doc('x') }}` in every description, from the project's `{% docs %}` blocks.
fn fill_docs(read: &mut Read) {
    let blocks = &read.doc_blocks;
    let fill = |d: &mut Option<String>| {
        if let Some(text) = d.as_mut() {
            *text = jinja::with_docs(text, blocks).0;
        }
    };
    for sm in &mut read.semantic_models {
        fill(&mut sm.description);
        sm.dimensions
            .iter_mut()
            .for_each(|x| fill(&mut x.description));
        sm.entities
            .iter_mut()
            .for_each(|x| fill(&mut x.description));
        sm.measures
            .iter_mut()
            .for_each(|x| fill(&mut x.description));
    }
    read.metrics
        .iter_mut()
        .for_each(|m| fill(&mut m.description));
    for d in read.docs.descriptions.values_mut() {
        *d = jinja::with_docs(d, blocks).0;
    }
}
