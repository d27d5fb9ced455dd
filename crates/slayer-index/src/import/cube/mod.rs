//! `slayer-index import cube PATH`: a Cube data model, offline (docs/spec.md §17.6). Reads the
//! YAML model files (`cubes:`, `views:`) and the JavaScript ones (`cube()`, `view()`, read
//! statically by `js.rs`) under PATH; `extends` is flattened (the child's
//! members win), each cube becomes a model (`cube.rs`) and each view a model over its root
//! cube's source with the members it includes (`view.rs`).

mod cubes;
mod js;
mod refs;
mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;
use slayer_common::records::Model;

use crate::error::IndexError;
use crate::import::{line_of_name, problem, project_files, At, Fate, Imported, Tally, UniqueNames};

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

/// Imports the Cube model files under `path` (a folder, or one file).
pub fn import(path: &Path, datasource: Option<&str>) -> Result<Imported, IndexError> {
    let model_file = |name: &str| {
        name.ends_with(".yml")
            || name.ends_with(".yaml")
            || (name.ends_with(".js") && !name.ends_with(".sql.js"))
    };
    let (files, base) = project_files(path, &model_file, &["node_modules", "target", "dist"])?;
    let mut found = Found::default();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| problem(file, format!("cannot read: {e}")))?;
        let source = ModelFile {
            path: file,
            rel: file.strip_prefix(&base).unwrap_or(file).to_owned(),
            text,
        };
        if file.extension().is_some_and(|e| e == "js") {
            found.read_js(source, path.is_dir())?;
        } else {
            found.read_yaml(source, path.is_dir())?;
        }
    }
    if found.cubes.is_empty() && found.views.is_empty() {
        return Err(problem(path, "no Cube model here (YAML files with cubes: or views:, JavaScript files calling cube() or view())"));
    }
    let mut seen = UniqueNames::new("cube or view");
    for d in found.cubes.iter().chain(&found.views) {
        seen.insert(&d.name, &d.at)?;
    }
    let name = datasource.map(str::to_owned).unwrap_or_else(|| {
        path.canonicalize()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "cube".into())
    });
    let mut tally = Tally::default();
    for (at, what) in found.dynamic {
        tally.object("javascript", "JavaScript", &at, vec![(Fate::Skipped, what)]);
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
    Ok(Imported::of("cube", path, name, models, tally))
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
}

impl Found {
    /// A JavaScript model file's `cube()` and `view()` calls; in a folder, a file calling
    /// neither is passed over (the server's configuration, a helper).
    fn read_js(&mut self, f: ModelFile, in_folder: bool) -> Result<(), IndexError> {
        let model = js::read(&f.text).map_err(|e| problem(f.path, e.to_string()))?;
        if model.definitions.is_empty() && model.dynamic.is_empty() {
            if in_folder {
                return Ok(());
            }
            return Err(problem(
                f.path,
                "not a Cube model file: it calls neither cube() nor view()",
            ));
        }
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
            };
            if kind == "cube" {
                self.cubes.push(d)
            } else {
                self.views.push(d)
            }
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
    /// over (a configuration file of the project).
    fn read_yaml(&mut self, f: ModelFile, in_folder: bool) -> Result<(), IndexError> {
        let value: Value = match serde_yaml_ng::from_str(&f.text) {
            Ok(v) => v,
            Err(e) if f.text.contains("{{") || f.text.contains("{%") => {
                return Err(problem(f.path, format!("invalid YAML: {e} (the file holds Jinja; render the model with Cube first)")));
            }
            Err(e) => return Err(problem(f.path, format!("invalid YAML: {e}"))),
        };
        if value.get("cubes").is_none() && value.get("views").is_none() {
            if in_folder {
                return Ok(());
            }
            return Err(problem(f.path, "not a Cube model file: there is no top-level cubes: or views: (import dbt, ossie and slayer read the other formats)"));
        }
        let text = Rc::new(f.text);
        for (key, into) in [("cubes", &mut self.cubes), ("views", &mut self.views)] {
            for body in members(&value, key) {
                let Some(name) = body.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    return Err(problem(
                        f.path,
                        format!("a {} without a name", &key[..key.len() - 1]),
                    ));
                };
                let at = At {
                    file: f.rel.clone(),
                    line: line_of_name(&text, &name, 1),
                };
                into.push(Definition {
                    name,
                    body,
                    at,
                    text: text.clone(),
                });
            }
        }
        Ok(())
    }
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
