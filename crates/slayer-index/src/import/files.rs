//! The files of a project an importer reads: the folder walk (symbolic links followed only
//! inside the project, never twice; what it passes over named) and each file read whole
//! within the store's limits (its size, how deep its brackets nest) before any parser sees it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{problem, Tally};

/// The files of a project to read, the folder their names are relative to, and what the walk
/// passed over that a reader would have taken (each with why: a symbolic link leaving the
/// project or looping back, a name that is not UTF-8).
#[derive(Debug, Default)]
pub struct ProjectFiles {
    /// The files to read, in walk order.
    pub files: Vec<PathBuf>,
    /// The folder the files' names in messages are relative to.
    pub base: PathBuf,
    /// What a reader would have taken but the walk did not, with why.
    pub passed_over: Vec<(PathBuf, String)>,
}

impl ProjectFiles {
    /// Records what the walk passed over as skipped files (relative to `base`).
    pub fn warn_passed_over(&self, tally: &mut Tally) {
        for (path, why) in &self.passed_over {
            let rel = path.strip_prefix(&self.base).unwrap_or(path);
            tally.unreadable_file(rel, why.clone());
        }
    }
}

/// The files of a project to read: `path` itself when it is a file, else every file under it
/// (recursively, in name order) that `wanted` accepts, hidden folders and `skip` folders not
/// entered; a symbolic link is followed only to a place inside `path` not walked yet.
pub fn project_files(
    path: &Path,
    wanted: &dyn Fn(&str) -> bool,
    skip: &[&str],
) -> Result<ProjectFiles, crate::error::IndexError> {
    project_files_within(path, path, wanted, skip)
}

/// [`project_files`] of `path`, a folder inside the project folder `root` (links may point
/// anywhere inside `root`; file names are relative to it).
pub fn project_files_within(
    path: &Path,
    root: &Path,
    wanted: &dyn Fn(&str) -> bool,
    skip: &[&str],
) -> Result<ProjectFiles, crate::error::IndexError> {
    if path.is_file() {
        let base = path.parent().unwrap_or(Path::new("")).to_owned();
        return Ok(ProjectFiles {
            files: vec![path.to_owned()],
            base,
            passed_over: Vec::new(),
        });
    }
    if !path.is_dir() {
        return Err(problem(path, "no such file or folder"));
    }
    let canonical_root = root
        .canonicalize()
        .map_err(|e| problem(root, e.to_string()))?;
    let mut walk = Walk {
        root: canonical_root,
        wanted,
        skip,
        visited: HashSet::new(),
        out: ProjectFiles {
            base: root.to_owned(),
            ..ProjectFiles::default()
        },
    };
    if let Ok(here) = path.canonicalize() {
        walk.visited.insert(here);
    }
    walk.dir(path)?;
    Ok(walk.out)
}

/// A folder walk that never leaves the project and never enters a folder twice.
struct Walk<'a> {
    root: PathBuf,
    wanted: &'a dyn Fn(&str) -> bool,
    skip: &'a [&'a str],
    visited: HashSet<PathBuf>,
    out: ProjectFiles,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path) -> Result<(), crate::error::IndexError> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| problem(dir, e.to_string()))?
            .map(|e| e.map(|e| e.path()).map_err(|e| problem(dir, e.to_string())))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for p in entries {
            let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                let shown = p.file_name().map(|n| n.to_string_lossy().into_owned());
                if shown.as_deref().is_some_and(|n| (self.wanted)(n)) || p.is_dir() {
                    self.out.passed_over.push((
                        p.clone(),
                        "its name is not valid UTF-8; rename it to have it read".into(),
                    ));
                }
                continue;
            };
            let link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
            let target = if link {
                match p.canonicalize() {
                    Ok(t) if t.starts_with(&self.root) => Some(t),
                    Ok(t) => {
                        if p.is_dir() || (self.wanted)(name) {
                            self.out.passed_over.push((
                                p.clone(),
                                format!(
                                    "a symbolic link to {}, outside the project; not followed",
                                    t.display()
                                ),
                            ));
                        }
                        continue;
                    }
                    Err(e) => {
                        if (self.wanted)(name) {
                            self.out.passed_over.push((
                                p.clone(),
                                format!("a symbolic link that cannot be followed ({e})"),
                            ));
                        }
                        continue;
                    }
                }
            } else {
                None
            };
            if p.is_dir() {
                if name.starts_with('.') || self.skip.contains(&name) {
                    continue;
                }
                let canonical = match target {
                    Some(t) => t,
                    None => p.canonicalize().unwrap_or_else(|_| p.clone()),
                };
                if !self.visited.insert(canonical.clone()) {
                    if link {
                        self.out.passed_over.push((
                            p.clone(),
                            format!("a symbolic link to {}, a folder already read (a loop); not followed", canonical.display()),
                        ));
                    }
                    continue;
                }
                self.dir(&p)?;
            } else if (self.wanted)(name) {
                // A file reached twice (a link beside its target) is read once.
                let canonical =
                    target.unwrap_or_else(|| p.canonicalize().unwrap_or_else(|_| p.clone()));
                if self.visited.insert(canonical) {
                    self.out.files.push(p);
                }
            }
        }
        Ok(())
    }
}

/// The language of a project file, for [`read_bounded`]'s bracket count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// YAML (flow collections nest with brackets; `#` starts a comment).
    Yaml,
    /// JSON (strings in double quotes only).
    Json,
    /// JavaScript (strings in any quote, `//` and `/* */` comments).
    JavaScript,
    /// Prose (Markdown): only its size is bounded.
    Text,
}

/// A project file read whole within `limits`: its size first (`import_file_bytes`), then how
/// deep its brackets nest (`import_depth`), so no parser meets a file that would take it
/// unbounded memory, stack or time. The error is the sentence the warning gives: the message
/// is the value (an importer names the file and passes it over).
pub fn read_bounded(
    path: &Path,
    syntax: Syntax,
    limits: &slayer_common::limits::Limits,
) -> Result<String, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read: {e}"))?
        .len();
    if len > limits.import_file_bytes as u64 {
        return Err(format!(
            "it is {len} bytes, over limits.import_file_bytes ({}) in slayer.toml; not read",
            limits.import_file_bytes
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let depth = if syntax == Syntax::Text {
        0
    } else {
        bracket_depth(&text, syntax)
    };
    if depth > limits.import_depth {
        return Err(format!(
            "its brackets nest {depth} deep, over limits.import_depth ({}) in slayer.toml; not read",
            limits.import_depth
        ));
    }
    Ok(text)
}

/// The deepest nesting of `{`, `[` and `(` outside strings and comments (a linear scan; quotes
/// are matched roughly, which only ever over- or under-counts a file no parser would like).
pub fn bracket_depth(text: &str, syntax: Syntax) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    let mut line_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' | b'`'
                if b == b'"'
                    || syntax == Syntax::JavaScript
                    || (syntax == Syntax::Yaml && b == b'\'') =>
            {
                i += 1;
                while i < bytes.len() && bytes[i] != b {
                    if bytes[i] == b'\\' && b != b'\'' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'#' if syntax == Syntax::Yaml
                && (line_start || i == 0 || bytes[i - 1].is_ascii_whitespace()) =>
            {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if syntax == Syntax::JavaScript && bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if syntax == Syntax::JavaScript && bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        line_start = b == b'\n';
        i += 1;
    }
    deepest
}
