//! Reading a SLayer YAML project folder: `datasources/*.yaml`, `models/<ds>/*.yaml` and
//! `memories/<id>.md` (YAML front matter, then the learning verbatim).
//!
//! Files are read in sorted order, so the result does not depend on the filesystem. Every
//! problem names the file and field; nothing is returned unless every file is valid.

use std::path::{Path, PathBuf};

use serde_json::Value;
use slayer_common::jsonl::{record_from_value, Record};
use slayer_common::records::{Datasource, Memory, Model};

use crate::error::IndexError;

/// A project's contents.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Project {
    /// One per `datasources/*.yaml`.
    pub datasources: Vec<Datasource>,
    /// One per `models/<ds>/*.yaml`.
    pub models: Vec<Model>,
    /// One per `memories/<id>.md`, in id order.
    pub memories: Vec<Memory>,
}

fn problem(path: &Path, message: impl Into<String>) -> IndexError {
    IndexError::Project {
        path: path.to_owned(),
        message: message.into(),
    }
}

fn files_with(dir: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>, IndexError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| problem(dir, e.to_string()))? {
        let path = entry.map_err(|e| problem(dir, e.to_string()))?.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && extensions.contains(&ext) {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| problem(dir, e.to_string()))? {
        let path = entry.map_err(|e| problem(dir, e.to_string()))?.path();
        if path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn read_text(path: &Path) -> Result<String, IndexError> {
    std::fs::read_to_string(path).map_err(|e| problem(path, format!("cannot read: {e}")))
}

fn yaml_object(path: &Path, text: &str) -> Result<serde_json::Map<String, Value>, IndexError> {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(serde_json::Map::new()),
        Ok(_) => Err(problem(path, "expected a YAML mapping at the top level")),
        Err(e) => Err(problem(path, format!("invalid YAML: {e}"))),
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned()
}

/// Reads the whole project; errors name the file.
pub fn read_project(dir: &Path) -> Result<Project, IndexError> {
    let (ds_dir, models_dir, memories_dir) = (
        dir.join("datasources"),
        dir.join("models"),
        dir.join("memories"),
    );
    if !ds_dir.is_dir() && !models_dir.is_dir() && !memories_dir.is_dir() {
        return Err(problem(
            dir,
            "not a SLayer project folder: it has no datasources/, models/ or memories/ folder",
        ));
    }
    let mut project = Project::default();
    for path in files_with(&ds_dir, &["yaml", "yml"])? {
        let mut map = yaml_object(&path, &read_text(&path)?)?;
        map.entry("name")
            .or_insert_with(|| Value::String(stem(&path)));
        match record_from_value("datasource", Value::Object(map)) {
            Ok(Record::Datasource(ds)) => project.datasources.push(ds),
            Ok(_) => unreachable!("record_from_value returns the kind it is asked for"),
            Err(m) => return Err(problem(&path, m.to_string())),
        }
    }
    for ds_folder in subdirs(&models_dir)? {
        let ds_name = stem(&ds_folder);
        for path in files_with(&ds_folder, &["yaml", "yml"])? {
            let mut map = yaml_object(&path, &read_text(&path)?)?;
            match map.get("data_source") {
                Some(Value::String(ds)) if ds != &ds_name => {
                    return Err(problem(
                        &path,
                        format!("field 'data_source' is '{ds}' but the file is under models/{ds_name}/; move the file or fix the field"),
                    ))
                }
                Some(_) => {}
                None => {
                    map.insert("data_source".into(), Value::String(ds_name.clone()));
                }
            }
            map.entry("name")
                .or_insert_with(|| Value::String(stem(&path)));
            match record_from_value("model", Value::Object(map)) {
                Ok(Record::Model(m)) => project.models.push(m),
                Ok(_) => unreachable!("record_from_value returns the kind it is asked for"),
                Err(m) => return Err(problem(&path, m.to_string())),
            }
        }
    }
    for path in files_with(&memories_dir, &["md"])? {
        project.memories.push(read_memory(&path)?);
    }
    project.memories.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(project)
}

/// Reads `memories/<id>.md`: `---\n<front matter>---\n<learning verbatim>`.
fn read_memory(path: &Path) -> Result<Memory, IndexError> {
    let text = read_text(path)?;
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| {
            problem(
                path,
                "expected YAML front matter starting with a '---' line",
            )
        })?;
    let (front, learning) = split_front_matter(rest)
        .ok_or_else(|| problem(path, "front matter has no closing '---' line"))?;
    let mut map = yaml_object(path, front)?;
    map.insert("id".into(), Value::String(stem(path)));
    map.insert("learning".into(), Value::String(learning.to_owned()));
    if let Some(Value::Number(n)) = map.get("created_at") {
        let shown = n.to_string();
        map.insert("created_at".into(), Value::String(shown));
    }
    match record_from_value("memory", Value::Object(map)) {
        Ok(Record::Memory(m)) => Ok(m),
        Ok(_) => unreachable!("record_from_value returns the kind it is asked for"),
        Err(m) => Err(problem(path, m.to_string())),
    }
}

fn split_front_matter(rest: &str) -> Option<(&str, &str)> {
    if let Some(body) = rest.strip_prefix("---\n") {
        return Some(("", body));
    }
    let end = rest.find("\n---\n").map(|i| (i + 1, i + 5)).or_else(|| {
        rest.strip_suffix("\n---")
            .map(|front| (front.len() + 1, rest.len()))
    })?;
    Some((&rest[..end.0], &rest[end.1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_splits_at_the_closing_fence() {
        assert_eq!(
            split_front_matter("a: 1\n---\nbody\n---\nmore"),
            Some(("a: 1\n", "body\n---\nmore"))
        );
        assert_eq!(split_front_matter("---\nbody"), Some(("", "body")));
        assert_eq!(split_front_matter("a: 1\n---"), Some(("a: 1\n", "")));
        assert_eq!(split_front_matter("a: 1\n"), None);
    }
}
