//! `slayer-index import cube PATH`: a Cube data model, offline (docs/spec/importers.md §17.6).
//! Reads the YAML model files (`cubes:`, `views:`) and the JavaScript ones (`cube()`, `view()`,
//! read statically by `js.rs`) under PATH; `extends` is flattened (the child's
//! members win), each cube becomes a model (`cube.rs`) and each view a model over its root
//! cube's source with the members it includes (`view.rs`).

mod access;
mod constants;
mod cubes;
mod jinja;
mod js;
mod refs;
mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;
use slayer_common::records::Model;

use crate::error::IndexError;
use crate::import::{
    nothing_read, problem, project_files, read_bounded, reason, At, Fate, Imported, NameLines,
    Syntax, Tally, UniqueNames,
};
use constants::Constants;
use slayer_common::limits::Limits;

/// A cube or view as read, with where it was.
#[derive(Debug, Clone)]
pub struct Definition {
    /// Its name.
    pub name: String,
    /// Everything under it, `extends` flattened in.
    pub body: Value,
    /// Where it starts.
    pub at: At,
    /// The file's text, to find members' lines.
    pub text: Rc<String>,
    /// The file's `name:` lines, read once.
    pub names: Rc<NameLines>,
}

/// A list under `key` (YAML lists; a JS mapping of name → body becomes the same list).
pub fn members(body: &Value, key: &str) -> Vec<Value> {
    match body.get(key) {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, v)| {
                let mut v = v.clone();
                if let Value::Object(m) = &mut v {
                    m.entry("name").or_insert(Value::String(name.clone()));
                }
                v
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Imports the Cube model files under `path` (a folder, or one file). A file that cannot be
/// read, or a second cube of a name, is skipped and named; only a project of which nothing
/// could be read is refused.
pub fn import(
    path: &Path,
    datasource: Option<&str>,
    limits: &Limits,
) -> Result<Imported, IndexError> {
    let model_file = |name: &str| {
        name.ends_with(".yml")
            || name.ends_with(".yaml")
            || name.ends_with(".yml.jinja")
            || name.ends_with(".yaml.jinja")
            || (name.ends_with(".js") && !name.ends_with(".sql.js"))
    };
    let walked = project_files(path, &model_file, &["node_modules", "target", "dist"])?;
    let (files, base) = (&walked.files, &walked.base);
    let mut found = Found::default();
    let mut tally = Tally::default();
    walked.warn_passed_over(&mut tally);
    let mut unreadable = Vec::new();
    let texts = read_files(files, base, limits, &mut tally, &mut unreadable);
    // The JavaScript constants first: a model reads another file's SQL by `require`.
    let mut constants = Constants::default();
    for (file, rel, text) in &texts {
        if file.extension().is_some_and(|e| e == "js") {
            constants.add(rel, text);
        }
    }
    found.constants = constants;
    for (file, rel, text) in texts {
        let source = ModelFile {
            path: file,
            rel: rel.clone(),
            text,
        };
        let read = if file.extension().is_some_and(|e| e == "js") {
            found.read_js(source, path.is_dir())
        } else {
            found.read_yaml(source, path.is_dir())
        };
        if let Err(e) = read {
            let why = reason(e);
            unreadable.push(format!("{}: {why}", rel.display()));
            tally.unreadable_file(&rel, why);
        }
    }
    if found.cubes.is_empty() && found.views.is_empty() {
        // Nothing to import: what could not be read says why.
        unreadable.extend(
            found
                .dynamic
                .iter()
                .map(|(at, what)| format!("{}:{}: {what}", at.file.display(), at.line)),
        );
        unreadable.extend(found.left_out.iter().map(|(_, object, at, why)| {
            format!("{}:{}: {object}: {why}", at.file.display(), at.line)
        }));
        if !unreadable.is_empty() {
            return Err(nothing_read(path, "Cube model", &unreadable));
        }
        return Err(problem(path, "no Cube model here (YAML files with cubes: or views:, JavaScript files calling cube() or view())"));
    }
    let mut seen = UniqueNames::new("cube or view");
    fn name_at(d: &Definition) -> (&str, &At) {
        (&d.name, &d.at)
    }
    let mut twice = seen.keep_first(&mut found.cubes, "cube", name_at, &mut tally);
    twice.extend(seen.keep_first(&mut found.views, "view", name_at, &mut tally));
    for d in &twice {
        skip_members(d, &mut tally);
    }
    let name = datasource.map(str::to_owned).unwrap_or_else(|| {
        path.canonicalize()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "cube".into())
    });
    for (at, what) in found.dynamic {
        tally.object("javascript", "JavaScript", &at, vec![(Fate::Skipped, what)]);
    }
    for (at, what) in found.partial {
        tally.object("javascript", "JavaScript", &at, vec![(Fate::Lossy, what)]);
    }
    for (kind, object, at, why) in found.left_out {
        tally.object(kind, &object, &at, vec![(Fate::Skipped, why)]);
    }
    let cubes = flatten_extends(found.cubes, &mut tally);
    let views = flatten_extends(found.views, &mut tally);
    let mut models: Vec<Model> = Vec::new();
    for c in &cubes {
        if let Some(m) = cubes::model(c, &name, &mut tally) {
            models.push(m);
        }
    }
    cubes::join(&cubes, &mut models, &mut tally);
    for v in &views {
        if let Some(m) = view::model(v, &name, &models, &mut tally) {
            models.push(m);
        }
    }
    Ok(Imported::of(
        "cube",
        path,
        name,
        models,
        tally,
        limits.description_bytes,
    ))
}

/// Each file's text, read within the limits; one that cannot be read is named in `tally`
/// (and in `unreadable`, for the error when nothing could be read).
fn read_files<'f>(
    files: &'f [PathBuf],
    base: &Path,
    limits: &Limits,
    tally: &mut Tally,
    unreadable: &mut Vec<String>,
) -> Vec<(&'f PathBuf, PathBuf, String)> {
    let mut texts = Vec::new();
    for file in files {
        let rel = file.strip_prefix(base).unwrap_or(file).to_owned();
        let syntax = if file.extension().is_some_and(|e| e == "js") {
            Syntax::JavaScript
        } else {
            Syntax::Yaml
        };
        match read_bounded(file, syntax, limits) {
            Ok(text) => texts.push((file, rel, text)),
            Err(why) => {
                unreadable.push(format!("{}: {why}", rel.display()));
                tally.unreadable_file(&rel, why);
            }
        }
    }
    texts
}

/// One model file as read.
struct ModelFile<'a> {
    path: &'a Path,
    /// Relative to the project folder.
    rel: PathBuf,
    text: String,
}

/// The cubes and views of the project's files, and what of their JavaScript must run to be
/// read.
#[derive(Default)]
struct Found {
    cubes: Vec<Definition>,
    views: Vec<Definition>,
    dynamic: Vec<(At, String)>,
    /// JavaScript values read with a part only the running model fills.
    partial: Vec<(At, String)>,
    /// Objects read but not importable: `(kind, object, where, why)`.
    left_out: Vec<(&'static str, String, At, String)>,
    /// The JavaScript files' constants, whose text a model may read.
    constants: Constants,
}

impl Found {
    /// A JavaScript model file's `cube()` and `view()` calls; in a folder, a file calling
    /// neither is passed over (the server's configuration, a helper).
    fn read_js(&mut self, f: ModelFile, in_folder: bool) -> Result<(), IndexError> {
        let known = self.constants.texts_of(&f.rel);
        let model = js::read(&f.text, known).map_err(|e| problem(f.path, e.to_string()))?;
        if model.definitions.is_empty() && model.dynamic.is_empty() {
            if in_folder {
                return Ok(());
            }
            return Err(problem(
                f.path,
                "not a Cube model file: it calls neither cube() nor view()",
            ));
        }
        let names = Rc::new(NameLines::new(&f.text));
        let text = Rc::new(f.text);
        for (kind, name, body, line) in model.definitions {
            let d = Definition {
                name,
                body,
                at: At {
                    file: f.rel.clone(),
                    line,
                },
                text: text.clone(),
                names: names.clone(),
            };
            if kind == "cube" {
                self.cubes.push(d)
            } else {
                self.views.push(d)
            }
        }
        for (line, what) in model.partial {
            let at = At {
                file: f.rel.clone(),
                line,
            };
            self.partial.push((at, what));
        }
        for (line, what) in model.dynamic {
            let at = At {
                file: f.rel.clone(),
                line,
            };
            self.dynamic.push((at, what));
        }
        Ok(())
    }

    /// A YAML model file's `cubes:` and `views:`; in a folder, a file with neither is passed
    /// over (a configuration file of the project). Jinja is read statically (`jinja.rs`).
    fn read_yaml(&mut self, f: ModelFile, in_folder: bool) -> Result<(), IndexError> {
        let stripped = jinja::strip(&f.text);
        let parsed = serde_yaml_ng::from_str::<Value>(&stripped.text);
        let value = match parsed {
            Ok(v) => v,
            Err(e) if stripped.any() => {
                return Err(problem(f.path, format!("invalid YAML even with its Jinja set aside: {e} (Cube renders the template at compile time; an offline import cannot)")));
            }
            Err(e) => return Err(problem(f.path, format!("invalid YAML: {e}"))),
        };
        if value.get("cubes").is_none() && value.get("views").is_none() {
            if in_folder {
                return Ok(());
            }
            return Err(problem(f.path, "not a Cube model file: there is no top-level cubes: or views: (import dbt, ossie and slayer read the other formats)"));
        }
        let names = Rc::new(NameLines::new(&f.text));
        let text = Rc::new(f.text);
        let mut read: Vec<(&str, Definition)> = Vec::new();
        for key in ["cubes", "views"] {
            let kind = &key[..key.len() - 1];
            for (i, mut body) in members(&value, key).into_iter().enumerate() {
                let mut templated = Vec::new();
                jinja::restore(&mut body, &stripped.originals, "", &mut templated);
                let name = body.get("name").and_then(Value::as_str).map(str::to_owned);
                let Some(name) = name.filter(|n| !n.contains("{{") && !n.contains("{%")) else {
                    let at = At {
                        file: f.rel.clone(),
                        line: nth_item_line(&text, key, i),
                    };
                    // A name written by a template (`- {{ model.as_cube() }}`) stands as a key.
                    let templated_name = body
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or_else(|| body.as_object()?.keys().find(|k| k.contains("{{")).cloned());
                    let (object, why) = match templated_name {
                        Some(n) => (format!("{kind} #{} ('{n}')", i + 1), format!("its name is made by Jinja ('{n}'), which Cube renders at compile time; an offline import cannot")),
                        None => (format!("{kind} #{}", i + 1), "it has no name".to_owned()),
                    };
                    for (key, member_kind) in MEMBER_KINDS {
                        for name in member_names(&body, key) {
                            let member = format!("{member_kind} '{name}' of {object}");
                            let why = format!("{object}, which holds it, is skipped");
                            self.left_out.push((member_kind, member, at.clone(), why));
                        }
                    }
                    self.left_out.push((kind, object, at, why));
                    continue;
                };
                let at = At {
                    file: f.rel.clone(),
                    line: names.line_of(&name, 1),
                };
                let mut d = Definition {
                    name,
                    body,
                    at,
                    text: text.clone(),
                    names: names.clone(),
                };
                if !templated.is_empty() {
                    self.templated(&mut d, &templated);
                }
                read.push((key, d));
            }
        }
        for (line, tag) in &stripped.blocks {
            // The block belongs to the definition it sits in: the last one starting above it.
            let owner = read
                .iter_mut()
                .filter(|(_, d)| d.at.line <= *line)
                .max_by_key(|(_, d)| d.at.line);
            if let Some((_, d)) = owner {
                add_note(&mut d.body, format!("a Jinja block ('{tag}', line {line}) decides at compile time which members exist; what it encloses is read once, as written"));
            }
        }
        for (key, d) in read {
            if key == "cubes" {
                self.cubes.push(d);
            } else {
                self.views.push(d);
            }
        }
        Ok(())
    }

    /// The members of `d` whose name Jinja makes are left out (named); every other value
    /// holding Jinja is kept as written, with a note on its member (or on `d`).
    fn templated(&mut self, d: &mut Definition, paths: &[String]) {
        for key in ["dimensions", "measures", "segments", "joins"] {
            let kind = &key[..key.len() - 1];
            let Some(Value::Array(items)) = d.body.get_mut(key) else {
                continue;
            };
            let mut kept = Vec::new();
            for (i, mut item) in std::mem::take(items).into_iter().enumerate() {
                let prefix = format!("{key}[{i}].");
                let here: Vec<&str> = paths
                    .iter()
                    .filter_map(|p| p.strip_prefix(&prefix))
                    .collect();
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                if here.contains(&"name") {
                    let at = At {
                        file: d.at.file.clone(),
                        line: d.names.line_of(name, d.at.line),
                    };
                    let object = format!("{kind} '{}.{name}'", d.name);
                    self.left_out.push((kind, object, at, format!("its name is made by Jinja ('{name}'), which Cube renders at compile time; an offline import cannot")));
                    continue;
                }
                for field in here {
                    add_note(&mut item, format!("its {field} holds Jinja, which Cube renders at compile time; kept as written"));
                }
                kept.push(item);
            }
            d.body[key] = Value::Array(kept);
        }
        let own: Vec<&String> = paths
            .iter()
            .filter(|p| {
                !["dimensions[", "measures[", "segments[", "joins["]
                    .iter()
                    .any(|k| p.starts_with(k))
            })
            .collect();
        for p in own {
            add_note(
                &mut d.body,
                format!("its {p} holds Jinja, which Cube renders at compile time; kept as written"),
            );
        }
    }
}

/// The members of a cube or view that is skipped, each recorded as skipped with it.
pub fn skip_members(d: &Definition, tally: &mut Tally) {
    for (key, kind) in MEMBER_KINDS {
        for name in member_names(&d.body, key) {
            let name = name.as_str();
            let at = At {
                file: d.at.file.clone(),
                line: d.names.line_of(name, d.at.line),
            };
            let object = format!("{kind} '{}.{name}'", d.name);
            let why = format!("'{}', which holds it, is skipped", d.name);
            tally.object(kind, &object, &at, vec![(Fate::Skipped, why)]);
        }
    }
}

/// The member lists the tally counts, and the kind of each.
const MEMBER_KINDS: [(&str, &str); 4] = [
    ("dimensions", "dimension"),
    ("measures", "measure"),
    ("segments", "segment"),
    ("joins", "join"),
];

/// The names of the members under `key`: a list's `name`s, or a mapping's keys (a template's
/// `{{ model.as_dimensions() }}` stands there as a key).
fn member_names(body: &Value, key: &str) -> Vec<String> {
    match body.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|x| x.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        Some(Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The key under which read-time notes ride on a cube or member until it is mapped.
pub const NOTES: &str = "__import_notes";

/// Adds a read-time note (a loss) to `v`.
pub fn add_note(v: &mut Value, note: String) {
    if let Value::Object(map) = v {
        if let Value::Array(notes) = map.entry(NOTES).or_insert_with(|| Value::Array(Vec::new())) {
            notes.push(Value::String(note));
        }
    }
}

/// The read-time notes of `v`, as losses.
pub fn notes(v: &Value) -> Vec<(Fate, String)> {
    v.get(NOTES)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|n| (Fate::Lossy, n.to_owned()))
        .collect()
}

/// The line of the `i`-th item under the top-level `key:` (its `- ` line), else the key's.
fn nth_item_line(text: &str, key: &str, i: usize) -> usize {
    let mut lines = text.lines().enumerate();
    let Some((start, _)) = lines.find(|(_, l)| l.starts_with(&format!("{key}:"))) else {
        return 1;
    };
    let mut items =
        text.lines().enumerate().skip(start + 1).filter(|(_, l)| {
            l.trim_start().starts_with("- ") && l.len() - l.trim_start().len() <= 4
        });
    items.nth(i).map_or(start + 1, |(n, _)| n + 1)
}

/// Each definition with what it `extends` merged in: lists of members by name, the child's
/// entries winning; a cycle or an unknown parent is named and left unflattened.
fn flatten_extends(defs: Vec<Definition>, tally: &mut Tally) -> Vec<Definition> {
    let by_name: BTreeMap<String, Definition> =
        defs.iter().map(|d| (d.name.clone(), d.clone())).collect();
    defs.into_iter()
        .map(|d| {
            let mut chain = vec![d.name.clone()];
            let mut body = d.body.clone();
            let mut parent = extends_of(&body);
            while let Some(p) = parent {
                if chain.contains(&p) {
                    tally.issues.push(issue(
                        &d,
                        format!(
                            "extends '{p}' in a cycle ({}); flattened without it",
                            chain.join(" → ")
                        ),
                    ));
                    break;
                }
                let Some(pd) = by_name.get(&p) else {
                    tally.issues.push(issue(
                        &d,
                        format!(
                            "extends '{p}', which is not in the project; its members are missing"
                        ),
                    ));
                    break;
                };
                chain.push(p);
                body = merge(&pd.body, &body);
                parent = extends_of(&pd.body);
            }
            if let Value::Object(m) = &mut body {
                m.remove("extends");
            }
            Definition { body, ..d }
        })
        .collect()
}

fn issue(d: &Definition, message: String) -> crate::import::Issue {
    crate::import::Issue {
        file: d.at.file.clone(),
        line: d.at.line,
        object: format!("cube '{}'", d.name),
        fate: Fate::Lossy,
        message,
    }
}

fn extends_of(body: &Value) -> Option<String> {
    let text = body.get("extends")?.as_str()?;
    Some(
        text.trim()
            .trim_start_matches("${")
            .trim_start_matches('{')
            .trim_end_matches('}')
            .to_owned(),
    )
}

/// `parent` overlaid with `child`: member lists merged by name, a view's `cubes:` by join path
/// (child wins), other keys the child's when set.
fn merge(parent: &Value, child: &Value) -> Value {
    let mut out = parent.clone();
    let (Value::Object(o), Value::Object(c)) = (&mut out, child) else {
        return child.clone();
    };
    for (k, v) in c {
        match k.as_str() {
            "dimensions" | "measures" | "segments" | "joins" | "pre_aggregations"
            | "hierarchies" | "cubes" => {
                // A view's `cubes:` entries are keyed by their join path.
                let key = if k == "cubes" { "join_path" } else { "name" };
                let mut merged = members(parent, k);
                for m in members(child, k) {
                    let name = m.get(key).cloned();
                    match merged.iter_mut().find(|x| x.get(key) == name.as_ref()) {
                        Some(slot) => *slot = m,
                        None => merged.push(m),
                    }
                }
                o.insert(k.clone(), Value::Array(merged));
            }
            _ => {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    out
}
