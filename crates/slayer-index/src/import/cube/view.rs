//! A Cube view as a model: its root cube's source and joins, and the members each `cubes:`
//! entry includes (`join_path`, `includes` / `excludes`, `prefix`, `alias`, member aliases),
//! joined members read through the join path (`users.city`, `sum(users.amount)`).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;
use slayer_common::records::{Measure, Model};

use super::cubes::{cube_measure, dimension};
use super::{access, members, notes, Definition};
use crate::import::{measure, model as new_model, Fate, Tally};

static SIMPLE_AGG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\w+)\((\*|\w+)(.*)\)$").expect("valid regex"));

/// The view `v` as a model over the cubes already made, or `None` (recorded) when its root cube
/// is not one of them.
pub fn model(
    v: &Definition,
    datasource: &str,
    models: &[Model],
    tally: &mut Tally,
) -> Option<Model> {
    let object = format!("view '{}'", v.name);
    let entries = members(&v.body, "cubes");
    let root_name = entries
        .first()
        .and_then(|e| e.get("join_path").and_then(Value::as_str))
        .map(|p| p.split('.').next().unwrap_or_default().to_owned());
    let Some(root) = root_name
        .as_deref()
        .and_then(|r| models.iter().find(|m| m.name == r))
    else {
        // A view of view-level members only has no table to read.
        super::skip_members(v, tally);
        tally.object(
            "view",
            &object,
            &v.at,
            vec![(
                Fate::Skipped,
                format!(
                    "its root cube {} is not in the project",
                    root_name.unwrap_or_else(|| "(none)".into())
                ),
            )],
        );
        return None;
    };
    let mut view = View {
        model: over_root(v, root, datasource),
        problems: notes(&v.body),
        excluded: Vec::new(),
    };
    let (hidden, undecided) = access::hides(&v.body);
    view.model.hidden = hidden;
    view.problems
        .extend(undecided.map(|why| (Fate::Lossy, why)));
    for e in &entries {
        view.include(e, models);
    }
    // The root's joins come along: so do the key columns they pair, hidden when left out.
    for j in &root.joins {
        for (key, _) in &j.join_pairs {
            if !view.model.columns.iter().any(|c| &c.name == key) {
                if let Some(c) = root.columns.iter().find(|c| &c.name == key) {
                    let mut c = c.clone();
                    c.hidden = true;
                    view.model.columns.push(c);
                }
            }
        }
    }
    // Members defined on the view itself; one reading a member the view leaves out is named.
    for (key, kind) in [("dimensions", "dimension"), ("measures", "measure")] {
        for x in members(&v.body, key) {
            let sql = x.get("sql").and_then(Value::as_str).unwrap_or_default();
            let mut x = x.clone();
            for (path, member) in &view.excluded {
                if reads_member(sql, path, member) {
                    super::add_note(&mut x, format!("its sql reads '{path}.{member}', which the view excludes ({kind} of a view should read only what the view includes)"));
                }
            }
            if kind == "dimension" {
                dimension(v, &x, &mut view.model, tally);
            } else {
                cube_measure(v, &x, &mut view.model, tally);
            }
        }
    }
    access::apply(v, &mut view.model, tally);
    tally.object("view", &object, &v.at, view.problems);
    Some(view.model)
}

/// An empty model of the view reading its root cube's source, with the root's joins.
fn over_root(v: &Definition, root: &Model, datasource: &str) -> Model {
    let mut m = new_model(&v.name, datasource);
    m.sql_table = root.sql_table.clone();
    m.sql = root.sql.clone();
    m.joins = root.joins.clone();
    m.description = v
        .body
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    m.extra.insert(
        "meta".into(),
        serde_json::json!({"cube_kind": "view", "root": root.name}),
    );
    m
}

/// A view's model as its `cubes:` entries fill it, and what was lost on the way.
struct View {
    model: Model,
    problems: Vec<(Fate, String)>,
    /// Members an entry's `excludes` leaves out: `(join path, member)`.
    excluded: Vec<(String, String)>,
}

/// Whether `sql` reads `member` of the cube at the end of `path`: `{path.member}`,
/// `{cube.member}`, `{cube}.member` or `cube.member`.
fn reads_member(sql: &str, path: &str, member: &str) -> bool {
    let cube = path.rsplit('.').next().unwrap_or(path);
    let wanted = [format!("{path}.{member}"), format!("{cube}.{member}")];
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || "_.{}$".contains(c)))
        .map(|w| w.replace(['{', '}', '$'], ""))
        .any(|w| wanted.contains(&w))
}

/// The cube a `cubes:` entry includes members of, and the path that reaches it.
struct Included<'a> {
    cube: &'a Model,
    cube_name: &'a str,
    /// The join path without the root (`users` for `orders.users`); empty for the root.
    relative: String,
}

impl View {
    fn lossy(&mut self, message: String) {
        self.problems.push((Fate::Lossy, message));
    }

    /// The members one `cubes:` entry includes (`includes`, less `excludes`), named with the
    /// entry's `prefix` and the members' aliases.
    fn include(&mut self, e: &Value, models: &[Model]) {
        let path = e
            .get("join_path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let segments: Vec<&str> = path.split('.').collect();
        let cube_name = segments.last().copied().unwrap_or_default();
        let Some(cube) = models.iter().find(|x| x.name == cube_name) else {
            self.lossy(format!(
                "join_path '{path}' names no cube '{cube_name}'; its members are left out"
            ));
            return;
        };
        let from = Included {
            cube,
            cube_name,
            relative: segments[1..].join("."),
        };
        let prefix = e.get("prefix").and_then(Value::as_bool).unwrap_or(false);
        let entry_alias = e.get("alias").and_then(Value::as_str).unwrap_or(cube_name);
        let excludes: Vec<&str> = e
            .get("excludes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for x in &excludes {
            self.excluded.push((path.to_owned(), (*x).to_owned()));
        }
        for (member, alias) in wanted(e, cube)
            .into_iter()
            .filter(|(n, _)| !excludes.contains(&n.as_str()))
        {
            let name = if prefix {
                format!("{entry_alias}_{alias}")
            } else {
                alias
            };
            self.member(&from, member, name);
        }
    }

    /// `member` of the included cube, as `name`.
    fn member(&mut self, from: &Included, member: String, name: String) {
        let m = &mut self.model;
        if m.columns.iter().any(|c| c.name == name)
            || m.measures.iter().any(|x| x.name.as_deref() == Some(&name))
        {
            self.lossy(format!("'{name}' is included twice; the first is kept"));
            return;
        }
        let relative = &from.relative;
        if let Some(c) = from.cube.columns.iter().find(|c| c.name == member) {
            let mut c = c.clone();
            c.name = name;
            if !relative.is_empty() {
                c.sql = Some(format!("{relative}.{member}"));
                c.primary_key = false;
            } else if c.sql.is_none() && c.name != member {
                c.sql = Some(member.clone());
            }
            m.columns.push(c);
        } else if let Some(x) = from
            .cube
            .measures
            .iter()
            .find(|x| x.name.as_deref() == Some(&member))
        {
            self.measure(from, x, &member, name);
        } else {
            self.lossy(format!(
                "includes '{member}', which cube '{}' does not have",
                from.cube_name
            ));
        }
    }

    /// The included cube's measure `x` (named `member` there) as `name`: read through the join
    /// path when the cube is not the root.
    fn measure(&mut self, from: &Included, x: &Measure, member: &str, name: String) {
        let relative = &from.relative;
        let formula = if relative.is_empty() {
            x.formula.clone()
        } else if let Some(c) = SIMPLE_AGG.captures(&x.formula) {
            format!("{}({relative}.{}{})", &c[1], &c[2], &c[3])
        } else {
            self.lossy(format!("measure '{member}' of '{}' is a formula of other measures; a view cannot re-aggregate it through the join, so it is written '{relative}.{member}'", from.cube_name));
            format!("{relative}.{member}")
        };
        let m = &mut self.model;
        // A root measure reads root columns by name: those it needs come along, hidden
        // when the view leaves them out.
        if relative.is_empty() {
            for word in formula.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if m.columns.iter().any(|c| c.name == word) {
                    continue;
                }
                if let Some(c) = from.cube.columns.iter().find(|c| c.name == word) {
                    let mut c = c.clone();
                    c.hidden = true;
                    m.columns.push(c);
                }
            }
        }
        let mut me = measure(&name, formula);
        me.label = x.label.clone();
        me.description = x.description.clone();
        m.measures.push(me);
    }
}

/// What an entry's `includes` names, each `(member, alias)`: `"*"` is every visible column
/// and every measure of the cube.
fn wanted(e: &Value, cube: &Model) -> Vec<(String, String)> {
    match e.get("includes") {
        Some(Value::String(s)) if s == "*" => cube
            .columns
            .iter()
            .filter(|c| !c.hidden)
            .map(|c| c.name.clone())
            .chain(cube.measures.iter().filter_map(|x| x.name.clone()))
            .map(|n| (n.clone(), n))
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(n) => Some((n.clone(), n.clone())),
                Value::Object(o) => {
                    let n = o.get("name")?.as_str()?.to_owned();
                    let alias = o
                        .get("alias")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or(n.clone());
                    Some((n, alias))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
