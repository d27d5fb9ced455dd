//! `slayer-index import ossie PATH`: an Apache Ossie (Open Semantic Interchange) document, or a
//! folder of them, offline (docs/spec/importers.md §17.4). Each document is validated against the
//! bundled schema of its `version` (0.1.1 or 0.2.0.dev0) first; datasets become models, fields
//! columns (typed by `datatype`, else by `is_time`), relationships joins, metrics named
//! measures whose SQL aggregates become SLayer formulas.

mod sql;
mod tokens;
mod validate;

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use slayer_common::records::{Column, DataType, Join, Model};

use crate::error::IndexError;
use crate::import::{
    column, model, nothing_read, problem, project_files, read_bounded, reason, schema, strings, At,
    Fate, Imported, NameLines, Syntax, Tally, UniqueNames,
};
use slayer_common::limits::Limits;
use validate::{newest_followed, prune, schema_for};

/// SQL dialects, in the order a field's expression is taken when `--dialect`'s is missing.
pub const SQL_DIALECTS: [&str; 4] = ["ANSI_SQL", "SNOWFLAKE", "DATABRICKS", "BIGQUERY"];

/// One Ossie document as read and validated.
struct Document {
    /// Relative to the project folder.
    file: PathBuf,
    /// Its `name:` lines, read once.
    names: NameLines,
    value: Value,
    /// Whether its `version` is one whose schema is bundled.
    known: bool,
    version: Option<String>,
    /// The version assumed for a document without one.
    assumed_version: Option<&'static str>,
    /// Objects left out because they break the schema: `(kind, object, violation)`.
    pruned: Vec<(&'static str, String, String)>,
}

/// `dataset 'x'` → `x`.
fn object_name(object: &str) -> &str {
    object
        .split_once('\'')
        .map(|(_, rest)| rest.trim_end_matches('\''))
        .unwrap_or(object)
}

impl Document {
    /// Where the object named `name` is, at or after line `from`.
    fn at(&self, name: &str, from: usize) -> At {
        At {
            file: self.file.clone(),
            line: self.names.line_of(name, from),
        }
    }
}

/// Imports the Ossie document at `path` (or every `.yaml`/`.yml`/`.json` under a folder).
pub fn import(
    path: &Path,
    datasource: Option<&str>,
    dialect: &str,
    limits: &Limits,
) -> Result<Imported, IndexError> {
    let document = |name: &str| [".yaml", ".yml", ".json"].iter().any(|x| name.ends_with(x));
    let walked = project_files(path, &document, &[])?;
    let (files, base) = (&walked.files, &walked.base);
    let mut docs = Vec::new();
    let mut tally = Tally::default();
    walked.warn_passed_over(&mut tally);
    let mut unreadable = Vec::new();
    for file in files {
        match read_document(file, base, path.is_dir(), limits) {
            Ok(doc) => docs.extend(doc),
            Err(e) => {
                let why = reason(e);
                let rel = file.strip_prefix(base).unwrap_or(file);
                unreadable.push(format!("{}: {why}", rel.display()));
                tally.unreadable_file(rel, why);
            }
        }
    }
    if docs.is_empty() {
        if !unreadable.is_empty() {
            return Err(nothing_read(path, "Ossie document", &unreadable));
        }
        return Err(problem(
            path,
            "no Ossie document here (a YAML or JSON file with a top-level semantic_model)",
        ));
    }
    for doc in &docs {
        for (kind, object, why) in &doc.pruned {
            let at = doc.at(object_name(object), 1);
            tally.object(kind, object, &at, vec![(Fate::Skipped, why.clone())]);
        }
        if let Some(v) = &doc.assumed_version {
            tally.issues.push(crate::import::Issue {
                file: doc.file.clone(),
                line: 1,
                object: "document".into(),
                fate: Fate::Lossy,
                message: format!(
                    "it has no version key; read as {v}, the newest schema it follows"
                ),
            });
        }
    }
    let first_name = docs[0].value["semantic_model"][0]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let name = datasource.map(str::to_owned).unwrap_or(first_name);
    let mut reader = Reader {
        datasource: &name,
        dialect,
        tally,
        models: Vec::new(),
        seen: UniqueNames::new("dataset"),
        pending_joins: Vec::new(),
        pending_metrics: Vec::new(),
    };
    let mut unknown_versions = Vec::new();
    for doc in &docs {
        if !doc.known && doc.assumed_version.is_none() {
            unknown_versions.push(format!(
                "{} ({})",
                doc.file.display(),
                doc.version.as_deref().unwrap_or("no version")
            ));
        }
        for sm in doc.value["semantic_model"].as_array().into_iter().flatten() {
            reader.semantic_model(doc, sm)?;
        }
    }
    let Reader {
        mut tally,
        mut models,
        pending_joins,
        pending_metrics,
        ..
    } = reader;
    for (r, at) in pending_joins {
        relationship(&r, &mut models, &at, &mut tally);
    }
    for (m, at) in pending_metrics {
        sql::metric(&m, &mut models, dialect, &at, &mut tally);
    }
    for v in unknown_versions {
        tally.issues.push(crate::import::Issue {
            file: PathBuf::from(v),
            line: 0,
            object: "document".into(),
            fate: Fate::Lossy,
            message: "its version is not 0.1.1 or 0.2.0.dev0; read as 0.2.0.dev0".into(),
        });
    }
    Ok(Imported::of(
        "ossie",
        path,
        name,
        models,
        tally,
        limits.description_bytes,
    ))
}

/// The document in `file`, validated against the schema of its version; `None` for a file of
/// a folder that is not an Ossie document.
fn read_document(
    file: &Path,
    base: &Path,
    in_folder: bool,
    limits: &Limits,
) -> Result<Option<Document>, IndexError> {
    let syntax = if file.extension().is_some_and(|e| e == "json") {
        Syntax::Json
    } else {
        Syntax::Yaml
    };
    let text = read_bounded(file, syntax, limits).map_err(|why| problem(file, why))?;
    let value: Value = if file.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).map_err(|e| problem(file, format!("invalid JSON: {e}")))?
    } else {
        serde_yaml_ng::from_str(&text).map_err(|e| problem(file, format!("invalid YAML: {e}")))?
    };
    if value.get("semantic_model").is_none() {
        if in_folder {
            return Ok(None); // another kind of file in the folder
        }
        return Err(problem(file, "not an Ossie document: there is no top-level semantic_model (import dbt, cube and slayer read the other formats)"));
    }
    let mut value = value;
    let version = value
        .get("version")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let assumed_version = match version {
        Some(_) => None,
        None => Some(newest_followed(&value)),
    };
    let (schema, known) = schema_for(version.as_deref().or(assumed_version));
    let named = if known {
        version.as_deref().or(assumed_version).unwrap_or_default()
    } else {
        "0.2.0.dev0"
    };
    let mut pruned = Vec::new();
    let mut first_errors: Option<Vec<String>> = None;
    let refused = |errors: &[String]| {
        let shown: Vec<&str> = errors.iter().take(20).map(String::as_str).collect();
        problem(
            file,
            format!(
                "does not follow the Ossie {named} schema ({} violations):\n  {}",
                errors.len(),
                shown.join("\n  ")
            ),
        )
    };
    // A violation inside a dataset, field, metric or relationship leaves that object out and
    // the rest is validated again; one at the document's own level refuses the document.
    for _ in 0..8 {
        let mut checked = value.clone();
        if let (Some(v), Value::Object(m)) = (assumed_version, &mut checked) {
            m.insert("version".into(), Value::String(v.to_owned()));
        }
        let errors = schema::validate(schema, &checked);
        if errors.is_empty() {
            break;
        }
        first_errors.get_or_insert_with(|| errors.clone());
        match prune(&mut value, &errors) {
            Some(left_out) if !left_out.is_empty() => pruned.extend(left_out),
            _ => return Err(refused(first_errors.as_deref().unwrap_or(&errors))),
        }
    }
    let datasets_left = value["semantic_model"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|sm| sm["datasets"].as_array().is_some_and(|d| !d.is_empty()));
    if let (false, Some(errors)) = (datasets_left, &first_errors) {
        // Nothing but what breaks the schema: the document is refused whole.
        return Err(refused(errors));
    }
    Ok(Some(Document {
        file: file.strip_prefix(base).unwrap_or(file).to_owned(),
        names: NameLines::new(&text),
        value,
        known: known || assumed_version.is_some(),
        version,
        assumed_version,
        pruned,
    }))
}

/// The documents' semantic models read in order: datasets become models at once; the
/// relationships and metrics wait until every dataset of every document is in.
struct Reader<'a> {
    datasource: &'a str,
    dialect: &'a str,
    tally: Tally,
    models: Vec<Model>,
    seen: UniqueNames,
    pending_joins: Vec<(Value, At)>,
    pending_metrics: Vec<(Value, At)>,
}

impl Reader<'_> {
    fn semantic_model(&mut self, doc: &Document, sm: &Value) -> Result<(), IndexError> {
        let sm_name = sm["name"].as_str().unwrap_or_default();
        let at = doc.at(sm_name, 1);
        self.tally.object(
            "semantic_model",
            &format!("semantic model '{sm_name}'"),
            &at,
            vec![],
        );
        for ds in sm["datasets"].as_array().into_iter().flatten() {
            let ds_name = ds["name"].as_str().unwrap_or_default();
            let ds_at = doc.at(ds_name, at.line);
            if let Err(twice) = self.seen.insert(ds_name, &ds_at) {
                let object = format!("dataset '{ds_name}'");
                self.tally.object(
                    "dataset",
                    &object,
                    &ds_at,
                    vec![(Fate::Skipped, twice.to_string())],
                );
                continue;
            }
            let m = self.dataset(ds, doc, &ds_at);
            self.models.push(m);
        }
        let named = |v: &Value| {
            (
                v.clone(),
                doc.at(v["name"].as_str().unwrap_or_default(), at.line),
            )
        };
        for r in sm["relationships"].as_array().into_iter().flatten() {
            self.pending_joins.push(named(r));
        }
        for m in sm["metrics"].as_array().into_iter().flatten() {
            self.pending_metrics.push(named(m));
        }
        Ok(())
    }

    /// A dataset as a model: its source, its fields as columns, its primary key's columns
    /// (added hidden when no field reads them).
    fn dataset(&mut self, ds: &Value, doc: &Document, at: &At) -> Model {
        let name = ds["name"].as_str().unwrap_or_default();
        let mut m = model(name, self.datasource);
        let source = ds["source"].as_str().unwrap_or_default();
        if is_query(source) {
            m.sql = Some(
                source
                    .trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .trim()
                    .to_owned(),
            );
        } else {
            m.sql_table = Some(source.to_owned());
        }
        m.description = described(ds);
        if let Some(meta) = meta_of(ds) {
            m.extra.insert("meta".into(), meta);
        }
        if let Some(keys) = ds["unique_keys"].as_array() {
            m.extra.entry("meta").or_insert(json!({}))["unique_keys"] = Value::Array(keys.clone());
        }
        let primary: Vec<&str> = ds["primary_key"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for f in ds["fields"].as_array().into_iter().flatten() {
            let field = f["name"].as_str().unwrap_or_default();
            let object = format!("field '{name}.{field}'");
            let f_at = doc.at(field, at.line);
            let (mut c, problems) = field_column(f, self.dialect);
            if f["dimension"]["is_time"].as_bool() == Some(true)
                && m.default_time_dimension.is_none()
            {
                m.default_time_dimension = Some(field.to_owned());
            }
            c.primary_key =
                primary.contains(&field) || primary.contains(&c.sql.as_deref().unwrap_or(field));
            if m.columns.iter().any(|x| x.name == c.name) {
                self.tally.object(
                    "field",
                    &object,
                    &f_at,
                    vec![(
                        Fate::Skipped,
                        "a second field of that name in the dataset".into(),
                    )],
                );
                continue;
            }
            m.columns.push(c);
            self.tally.object("field", &object, &f_at, problems);
        }
        for key in &primary {
            if !m
                .columns
                .iter()
                .any(|c| c.name == *key || c.sql.as_deref() == Some(key))
            {
                let mut c = column(key);
                c.primary_key = true;
                c.hidden = true;
                m.columns.push(c);
            }
        }
        self.tally
            .object("dataset", &format!("dataset '{name}'"), at, vec![]);
        m
    }
}

/// A field as a column (all but its key flag): its expression in `dialect`, type, label,
/// description and meta, and what was lost.
fn field_column(f: &Value, dialect: &str) -> (Column, Vec<(Fate, String)>) {
    let field = f["name"].as_str().unwrap_or_default();
    let mut c = column(field);
    let mut problems = Vec::new();
    match expression(f, dialect) {
        Some((_, e)) => {
            if e != field {
                c.sql = Some(e);
            }
        }
        None => {
            let first = f["expression"]["dialects"][0]["dialect"]
                .as_str()
                .unwrap_or("?");
            problems.push((
                Fate::Lossy,
                format!("no SQL expression (only {first}); the column reads its name"),
            ));
            c.extra
                .insert("meta".into(), json!({"expression": f["expression"]}));
        }
    }
    let is_time = f["dimension"]["is_time"].as_bool();
    c.data_type = datatype(f).unwrap_or(if is_time == Some(true) {
        DataType::Timestamp
    } else {
        DataType::Unknown
    });
    c.label = f["label"].as_str().map(str::to_owned);
    c.description = described(f);
    if let Some(meta) = meta_of(f) {
        c.extra.insert("meta".into(), meta);
    }
    (c, problems)
}

/// `description`, then `ai_context`'s instructions, synonyms and examples: the text search reads,
/// so a question using a synonym finds the object.
pub fn described(v: &Value) -> Option<String> {
    let mut parts: Vec<String> = v["description"]
        .as_str()
        .map(|d| d.trim().to_owned())
        .into_iter()
        .collect();
    match &v["ai_context"] {
        Value::String(s) => parts.push(s.trim().to_owned()),
        Value::Object(c) => {
            if let Some(i) = c.get("instructions").and_then(Value::as_str) {
                parts.push(i.trim().to_owned());
            }
            let list = |key: &str| strings(&v["ai_context"], key);
            let synonyms = list("synonyms");
            if !synonyms.is_empty() {
                parts.push(format!("Synonyms: {}.", synonyms.join(", ")));
            }
            let examples = list("examples");
            if !examples.is_empty() {
                parts.push(format!("Examples: {}.", examples.join("; ")));
            }
        }
        _ => {}
    }
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// `custom_extensions` (and `ai_context`) kept in `meta`, each extension's `data` parsed when
/// it is JSON.
fn meta_of(v: &Value) -> Option<Value> {
    let mut meta = Map::new();
    if let Some(exts) = v["custom_extensions"].as_array() {
        let kept: Vec<Value> = exts
            .iter()
            .map(|e| {
                let data = e["data"]
                    .as_str()
                    .and_then(|d| serde_json::from_str::<Value>(d).ok())
                    .unwrap_or(e["data"].clone());
                json!({"vendor_name": e["vendor_name"], "data": data})
            })
            .collect();
        meta.insert("custom_extensions".into(), Value::Array(kept));
    }
    if !v["ai_context"].is_null() {
        meta.insert("ai_context".into(), v["ai_context"].clone());
    }
    (!meta.is_empty()).then_some(Value::Object(meta))
}

/// An expression's text in `dialect`, else in the first SQL dialect it has.
pub fn expression(v: &Value, dialect: &str) -> Option<(String, String)> {
    let dialects = v["expression"]["dialects"].as_array()?;
    let find = |d: &str| {
        dialects
            .iter()
            .find(|x| x["dialect"] == d)
            .and_then(|x| x["expression"].as_str())
            .map(|e| (d.to_owned(), e.trim().to_owned()))
    };
    find(dialect).or_else(|| SQL_DIALECTS.iter().find_map(|d| find(d)))
}

fn datatype(v: &Value) -> Option<DataType> {
    Some(match v["datatype"].as_str()? {
        "String" => DataType::Text,
        "Integer" => DataType::Int,
        "Decimal" | "Float" => DataType::Double,
        "Boolean" => DataType::Boolean,
        "Date" => DataType::Date,
        "DateTime" | "DateTimeTz" => DataType::Timestamp,
        _ => DataType::Unknown,
    })
}

fn is_query(source: &str) -> bool {
    let s = source.trim_start().to_ascii_lowercase();
    s.starts_with('(')
        || s.starts_with("select")
        || s.starts_with("with ")
        || source.trim().contains(char::is_whitespace)
}

fn relationship(r: &Value, models: &mut [Model], at: &At, tally: &mut Tally) {
    let name = r["name"].as_str().unwrap_or_default();
    let object = format!("relationship '{name}'");
    let (from, to) = (
        r["from"].as_str().unwrap_or_default(),
        r["to"].as_str().unwrap_or_default(),
    );
    let cols = |k: &str| strings(r, k);
    let (fc, tc) = (cols("from_columns"), cols("to_columns"));
    let skip = |tally: &mut Tally, why: String| {
        tally.object("relationship", &object, at, vec![(Fate::Skipped, why)])
    };
    if fc.len() != tc.len() {
        return skip(
            tally,
            format!(
                "from_columns has {} columns and to_columns {}; they pair by position",
                fc.len(),
                tc.len()
            ),
        );
    }
    let Some(to_index) = models.iter().position(|m| m.name == to) else {
        return skip(tally, format!("'to' names no dataset '{to}'"));
    };
    let Some(from_index) = models.iter().position(|m| m.name == from) else {
        return skip(tally, format!("'from' names no dataset '{from}'"));
    };
    let column_of = |m: &Model, key: &str| {
        m.columns
            .iter()
            .find(|c| c.name == key || c.sql.as_deref() == Some(key))
            .map(|c| c.name.clone())
    };
    let mut pairs = Vec::new();
    for (f, t) in fc.iter().zip(&tc) {
        let target = column_of(&models[to_index], t).unwrap_or_else(|| t.clone());
        let source = match column_of(&models[from_index], f) {
            Some(c) => c,
            None => {
                let mut c = column(f);
                c.hidden = true;
                models[from_index].columns.push(c);
                f.clone()
            }
        };
        pairs.push((source, target));
    }
    let m = &mut models[from_index];
    let mut extra = Map::new();
    extra.insert("name".into(), json!(name));
    extra.insert("join_type".into(), json!("left"));
    extra.insert("cardinality".into(), json!("many_to_one"));
    if let Some(d) = described(r) {
        extra.insert("description".into(), json!(d));
    }
    let mut problems = Vec::new();
    if m.joins.iter().any(|j| j.target_model == to) {
        problems.push((Fate::Lossy, format!("'{from}' already joins '{to}' another way; SLayer picks one join per pair of models, so this one is kept by its name only")));
    }
    m.joins.push(Join {
        target_model: to.to_owned(),
        join_pairs: pairs,
        extra,
    });
    tally.object("relationship", &object, at, problems);
}
