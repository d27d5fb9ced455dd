//! Importers of the semantic layers teams already keep elsewhere (docs/spec/importers.md §17). Each
//! reads a project offline and returns the catalog records `load` takes, one [`Issue`] per object
//! it skipped or mapped with a loss, and counts per kind of object ([`Report`]).

pub mod cube;
pub mod dbt;
mod files;
pub mod ossie;
pub mod references;
pub mod schema;

pub use files::{
    bracket_depth, project_files, project_files_within, read_bounded, ProjectFiles, Syntax,
};

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use slayer_common::records::{Column, Datasource, Measure, Model};

/// What an importer made of a project.
#[derive(Debug)]
pub struct Imported {
    /// The project's datasource record, first on stdout.
    pub datasource: Datasource,
    /// One model per semantic model (cube, view, dataset).
    pub models: Vec<Model>,
    /// Every object skipped or mapped lossily, in the order met.
    pub issues: Vec<Issue>,
    /// Memory records made from the project (dbt saved queries as example queries).
    pub memories: Vec<serde_json::Value>,
    /// Counts per kind of object.
    pub report: Report,
}

impl Imported {
    /// The models of the datasource `name` read by `format` from `project`, with what the
    /// tally saw.
    pub fn of(
        format: &str,
        project: &Path,
        name: String,
        mut models: Vec<Model>,
        mut tally: Tally,
        description_bytes: usize,
    ) -> Imported {
        if format != "slayer" {
            references::check(&models, &mut tally);
        }
        cut_long_texts(&mut models, &mut tally, description_bytes);
        Imported {
            datasource: Datasource {
                name,
                source_type: None,
                description: None,
                extra: Map::new(),
            },
            models,
            issues: tally.issues,
            memories: Vec::new(),
            report: Report {
                format: format.to_owned(),
                project: project.to_owned(),
                kinds: tally.kinds,
            },
        }
    }
}

/// Cuts every description or label over `limit` bytes (`limits.description_bytes`), naming
/// each cut as a loss of its object.
pub fn cut_long_texts(models: &mut [Model], tally: &mut Tally, limit: usize) {
    for model in models {
        let object = references::object_of(tally, model);
        for (field, len) in slayer_common::records::cut_long(model.texts_mut(), limit) {
            tally.late_loss(
                &object,
                format!("its {field} is {len} bytes, cut to its first {limit} (limits.description_bytes in slayer.toml)"),
            );
        }
    }
}

/// What became of an object that did not map whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fate {
    /// Imported, but something of it was lost (named in the message).
    Lossy,
    /// Not imported at all.
    Skipped,
}

/// One object skipped or mapped lossily: where it is, what was lost and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Issue {
    /// The file, relative to the project folder.
    pub file: PathBuf,
    /// 1-based line of the object in the file (0 when unknown).
    pub line: usize,
    /// The object: `metric 'revenue'`, `semantic model 'orders'`.
    pub object: String,
    /// Lossy or skipped.
    pub fate: Fate,
    /// What was lost and why.
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fate = match self.fate {
            Fate::Lossy => "mapped with a loss",
            Fate::Skipped => "skipped",
        };
        write!(
            f,
            "{}:{}: {} {fate}: {}",
            self.file.display(),
            self.line,
            self.object,
            self.message
        )
    }
}

/// How many objects of one kind were read and what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Objects of this kind in the project.
    pub read: usize,
    /// Imported whole.
    pub mapped: usize,
    /// Imported with a loss.
    pub lossy: usize,
    /// Not imported.
    pub skipped: usize,
}

/// Counts per kind of object (`semantic_model`, `dimension`, `metric`, …), for `--report`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The format read.
    pub format: String,
    /// The project folder.
    pub project: PathBuf,
    /// Per kind, in name order.
    pub kinds: BTreeMap<String, Counts>,
}

impl Report {
    /// Whether any object was skipped (the import then exits 1).
    pub fn skipped_any(&self) -> bool {
        self.kinds.values().any(|c| c.skipped > 0)
    }
}

/// Where an object was read: the file and its line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct At {
    /// Relative to the project folder.
    pub file: PathBuf,
    /// 1-based; 0 when unknown.
    pub line: usize,
}

/// The kinds of object `references::check` attributes a loss to (measures and the models
/// holding formulas, filters and joins).
const REFERENCED_KINDS: [&str; 7] = [
    "measure",
    "metric",
    "created_metric",
    "semantic_model",
    "cube",
    "view",
    "dataset",
];

/// Collects what became of each object as an importer goes.
#[derive(Debug, Default)]
pub struct Tally {
    /// The issues so far.
    pub issues: Vec<Issue>,
    /// The counts so far.
    pub kinds: BTreeMap<String, Counts>,
    /// Each object recorded: its kind, where it is, and whether it was imported whole.
    objects: HashMap<String, (String, At, Option<Fate>)>,
}

impl Tally {
    /// Records one object of `kind`: mapped whole when `problems` is empty, skipped when any
    /// problem skips it, else lossy. Each problem becomes an issue.
    pub fn object(&mut self, kind: &str, object: &str, at: &At, problems: Vec<(Fate, String)>) {
        let counts = self.kinds.entry(kind.to_owned()).or_default();
        counts.read += 1;
        let fate = if problems.iter().any(|(fate, _)| *fate == Fate::Skipped) {
            counts.skipped += 1;
            Some(Fate::Skipped)
        } else if problems.is_empty() {
            counts.mapped += 1;
            None
        } else {
            counts.lossy += 1;
            Some(Fate::Lossy)
        };
        // Only what the reference check names later is kept (not the many dimensions).
        if REFERENCED_KINDS.contains(&kind) {
            self.objects
                .insert(object.to_owned(), (kind.to_owned(), at.clone(), fate));
        }
        for (fate, message) in problems {
            self.issues.push(Issue {
                file: at.file.clone(),
                line: at.line,
                object: object.to_owned(),
                fate,
                message,
            });
        }
    }

    /// The first of `names` recorded as an object.
    pub fn known(&self, names: &[String]) -> Option<String> {
        names
            .iter()
            .find(|n| self.objects.contains_key(*n))
            .cloned()
    }

    /// A loss found after `object` was recorded (a reference that does not resolve): it is
    /// named, and an object counted as imported whole is counted as lossy instead.
    pub fn late_loss(&mut self, object: &str, message: String) {
        let at = match self.objects.get_mut(object) {
            Some((kind, at, fate)) => {
                if fate.is_none() {
                    *fate = Some(Fate::Lossy);
                    if let Some(c) = self.kinds.get_mut(kind.as_str()) {
                        c.mapped = c.mapped.saturating_sub(1);
                        c.lossy += 1;
                    }
                }
                at.clone()
            }
            None => At::default(),
        };
        self.issues.push(Issue {
            file: at.file,
            line: at.line,
            object: object.to_owned(),
            fate: Fate::Lossy,
            message,
        });
    }

    /// Records a file of the project that could not be read at all (skipped, with `why`): the
    /// rest of the project is still imported.
    pub fn unreadable_file(&mut self, file: &Path, why: impl Into<String>) {
        let at = At {
            file: file.to_owned(),
            line: 0,
        };
        let object = format!("file '{}'", file.display());
        self.object("file", &object, &at, vec![(Fate::Skipped, why.into())]);
    }
}

/// A column with nothing but its name.
pub fn column(name: &str) -> Column {
    Column::named(name)
}

/// A named measure.
pub fn measure(name: &str, formula: String) -> Measure {
    Measure {
        name: Some(name.to_owned()),
        formula,
        label: None,
        description: None,
        extra: Map::new(),
    }
}

/// An empty model of `datasource`.
pub fn model(name: &str, datasource: &str) -> Model {
    Model {
        name: name.to_owned(),
        data_source: datasource.to_owned(),
        sql_table: None,
        sql: None,
        source_queries: None,
        description: None,
        hidden: false,
        default_time_dimension: None,
        filters: Vec::new(),
        columns: Vec::new(),
        measures: Vec::new(),
        aggregations: Vec::new(),
        joins: Vec::new(),
        extra: Map::new(),
    }
}

/// The names met so far of one kind of object a project must not hold twice (dbt refuses a
/// project with two semantic models of one name, and so do the importers).
#[derive(Debug)]
pub struct UniqueNames {
    /// The kind, as the message names it: `semantic model`, `cube or view`.
    kind: &'static str,
    /// Each name and where it was first met.
    seen: HashMap<String, At>,
}

impl UniqueNames {
    /// No names yet, of objects of `kind`.
    pub fn new(kind: &'static str) -> UniqueNames {
        UniqueNames {
            kind,
            seen: HashMap::new(),
        }
    }

    /// Records `name`, met at `at`; a second of one name is refused (the caller skips it,
    /// with this as the reason, and keeps the first).
    pub fn insert(&mut self, name: &str, at: &At) -> Result<(), Duplicate> {
        if let Some(first) = self.seen.get(name) {
            return Err(Duplicate {
                kind: self.kind,
                name: name.to_owned(),
                first: first.clone(),
            });
        }
        self.seen.insert(name.to_owned(), at.clone());
        Ok(())
    }
}

impl UniqueNames {
    /// Keeps the first of each name in `items`; each later one is recorded in `tally` as a
    /// skipped `kind` (`semantic_model` → `semantic model 'x'`) and returned.
    pub fn keep_first<T>(
        &mut self,
        items: &mut Vec<T>,
        kind: &str,
        name_at: impl Fn(&T) -> (&str, &At),
        tally: &mut Tally,
    ) -> Vec<T> {
        let mut skipped = Vec::new();
        for item in std::mem::take(items) {
            let (name, at) = name_at(&item);
            match self.insert(name, at) {
                Ok(()) => items.push(item),
                Err(twice) => {
                    let object = format!("{} '{name}'", kind.replace('_', " "));
                    tally.object(kind, &object, at, vec![(Fate::Skipped, twice.to_string())]);
                    skipped.push(item);
                }
            }
        }
        skipped
    }
}

/// What is wrong with a file, without the path the caller names anyway.
pub fn reason(e: crate::error::IndexError) -> String {
    match e {
        crate::error::IndexError::Project { message, .. } => message,
        other => other.to_string(),
    }
}

/// The error of a project of which nothing could be read: each file and why.
pub fn nothing_read(path: &Path, what: &str, unreadable: &[String]) -> crate::error::IndexError {
    problem(
        path,
        format!("no {what} could be read:\n  {}", unreadable.join("\n  ")),
    )
}

/// The strings of the list under `key` (none when it is missing or not a list).
pub fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// A second object of a name the project already uses.
#[derive(Debug, thiserror::Error)]
#[error("a second {kind} named '{name}' (the first, at {}:{}, is kept); rename one", first.file.display(), first.line)]
pub struct Duplicate {
    kind: &'static str,
    name: String,
    first: At,
}

/// An unreadable project: the file (or folder) and what is wrong; exit 2, nothing written.
pub fn problem(path: &Path, message: impl Into<String>) -> crate::error::IndexError {
    crate::error::IndexError::Project {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// The standard time grains, smallest first.
pub const GRAINS: [&str; 8] = [
    "second", "minute", "hour", "day", "week", "month", "quarter", "year",
];

/// `1 month`, `7 days`, `week` → (1, month), (7, day), (1, week).
pub fn count_and_grain(window: &str) -> Option<(u32, &'static str)> {
    let mut parts = window.split_whitespace();
    let (n, unit) = match (parts.next(), parts.next()) {
        (Some(n), Some(u)) => (n.parse().ok()?, u),
        (Some(u), None) => (1, u),
        _ => return None,
    };
    let unit = unit.to_ascii_lowercase();
    let unit = unit.trim_end_matches('s');
    GRAINS.iter().find(|g| **g == unit).map(|g| (n, *g))
}

/// `7 days` → `7d`: the trailing window of a SLayer aggregation (`sum(x, window='7d')`).
pub fn window_arg(window: &str) -> Option<String> {
    let (n, grain) = count_and_grain(window)?;
    let unit = match grain {
        "second" => "s",
        "minute" => "min",
        "hour" => "h",
        "day" => "d",
        "week" => "w",
        "month" => "m",
        "year" => "y",
        _ => return None,
    };
    Some(format!("{n}{unit}"))
}

/// Whether `text` is a bare SQL identifier (a column a key or a formula can name).
pub fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every `name: <name>` line of a YAML text, read once: finding each of n objects by
/// scanning the text would be quadratic (10,000 semantic models in one file took 41 s).
#[derive(Debug, Default)]
pub struct NameLines {
    lines: HashMap<String, Vec<usize>>,
}

impl NameLines {
    /// The `name:` lines of `text`.
    pub fn new(text: &str) -> NameLines {
        let mut lines: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start().trim_start_matches("- ").trim_start();
            if let Some(rest) = t.strip_prefix("name:") {
                let value = rest.trim().trim_matches(|c| c == '"' || c == '\'');
                lines.entry(value.to_owned()).or_default().push(i + 1);
            }
        }
        NameLines { lines }
    }

    /// As [`line_of_name`]: the first `name: <name>` line at or after `from`, else `from`.
    pub fn line_of(&self, name: &str, from: usize) -> usize {
        let Some(at) = self.lines.get(name) else {
            return from;
        };
        let i = at.partition_point(|l| *l < from);
        at.get(i).copied().unwrap_or(from)
    }
}

/// The 1-based line of the first `name: <name>` (or `- name: <name>`) at or after `from`, or
/// `from` when there is none: how an object of a YAML file is found for a message.
pub fn line_of_name(text: &str, name: &str, from: usize) -> usize {
    for (i, line) in text.lines().enumerate().skip(from.saturating_sub(1)) {
        let t = line.trim_start().trim_start_matches("- ").trim_start();
        if let Some(rest) = t.strip_prefix("name:") {
            let value = rest.trim().trim_matches(|c| c == '"' || c == '\'');
            if value == name {
                return i + 1;
            }
        }
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_found_by_name_after_a_start() {
        let text = "models:\n  - name: a\n    x: 1\n  - name: 'b'\nmetrics:\n  - name: a\n";
        assert_eq!(line_of_name(text, "a", 1), 2);
        assert_eq!(line_of_name(text, "b", 1), 4);
        assert_eq!(line_of_name(text, "a", 5), 6);
        assert_eq!(line_of_name(text, "zzz", 3), 3);
    }

    #[test]
    fn name_lines_find_what_a_scan_finds() {
        let text = "models:\n  - name: a\n    x: 1\n  - name: 'b'\nmetrics:\n  - name: a\n";
        let lines = NameLines::new(text);
        for (name, from) in [("a", 1), ("b", 1), ("a", 3), ("a", 6), ("a", 7), ("zzz", 3)] {
            assert_eq!(
                lines.line_of(name, from),
                line_of_name(text, name, from),
                "{name} {from}"
            );
        }
    }

    #[test]
    fn brackets_are_counted_outside_strings_and_comments() {
        assert_eq!(bracket_depth("a: [1, [2, {b: 3}]]", Syntax::Yaml), 3);
        assert_eq!(bracket_depth("a: '[[[' # [[[[\nb: \"{{\"", Syntax::Yaml), 0);
        assert_eq!(
            bracket_depth(
                "cube(`x`, { sql: `${CUBE}` }) // ((((\n/* [[[ */",
                Syntax::JavaScript
            ),
            2
        );
        let deep = format!("{}{}", "[".repeat(40_000), "]".repeat(40_000));
        assert_eq!(bracket_depth(&deep, Syntax::Json), 40_000);
    }

    #[test]
    fn windows_and_shifts() {
        assert_eq!(count_and_grain("1 month"), Some((1, "month")));
        assert_eq!(count_and_grain("7 days"), Some((7, "day")));
        assert_eq!(count_and_grain("fortnight"), None);
        assert_eq!(window_arg("7 days").as_deref(), Some("7d"));
        assert_eq!(window_arg("2 quarters"), None);
    }

    #[test]
    fn a_tally_counts_each_object_once() {
        let mut t = Tally::default();
        let at = At {
            file: "m.yml".into(),
            line: 3,
        };
        t.object("metric", "metric 'a'", &at, vec![]);
        t.object(
            "metric",
            "metric 'b'",
            &at,
            vec![(Fate::Lossy, "x".into()), (Fate::Lossy, "y".into())],
        );
        t.object(
            "metric",
            "metric 'c'",
            &at,
            vec![(Fate::Skipped, "z".into())],
        );
        assert_eq!(
            t.kinds["metric"],
            Counts {
                read: 3,
                mapped: 1,
                lossy: 1,
                skipped: 1
            }
        );
        assert_eq!(t.issues.len(), 3);
        assert_eq!(t.issues[2].to_string(), "m.yml:3: metric 'c' skipped: z");
    }
}
