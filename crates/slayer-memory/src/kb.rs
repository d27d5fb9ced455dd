//! A Markdown knowledge base as memories (`slayer-memory ingest`, docs/spec/memory.md §4.5): each
//! `.md` file is one memory (or one per `##` section), its id `kb.` + the path relative to the
//! root without the extension, its learning the Markdown text; YAML front matter may give
//! `id`, `entities`, `tier`, `confidence`, `project`, `agent`, `description`, `date` (the
//! event time) and `session`, and
//! `[[datasource.model.column]]` links and backticked canonical names in the text become tags
//! when they resolve. This module reads pages; resolving and writing are the command's.

use std::path::Path;

use serde_json::{Map, Value};

/// The id prefix of knowledge-base memories, which `ingest --sync` converges.
pub const PREFIX: &str = "kb.";

/// Front-matter keys copied onto the memory record as they are.
const STANDING_KEYS: [&str; 6] = [
    "tier",
    "confidence",
    "project",
    "agent",
    "description",
    "session",
];

/// The front-matter key of the event time (`date: 2023-05-08`); the record's field is
/// `event_time`.
const DATE_KEY: &str = "date";

/// An entity reference found in a page, with where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The reference as written.
    pub text: String,
    /// 1-based line in the file.
    pub line: usize,
    /// How it was written, which decides what an unresolvable one costs.
    pub source: Source,
}

/// Where a reference was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Front matter `entities:`: unresolvable is a warning.
    FrontMatter,
    /// A `[[…]]` link: unresolvable is a warning.
    Link,
    /// A backticked name: a tag only when it resolves (code spans hold anything).
    Backticked,
}

/// One memory read from a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The memory record's fields but `entities` (`id`, `learning`, front-matter fields).
    pub record: Map<String, Value>,
    /// The references to resolve into its tags.
    pub references: Vec<Reference>,
    /// 1-based line where the memory starts in the file.
    pub line: usize,
}

/// How pages split into memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Split {
    /// One memory per file.
    Files,
    /// One memory per `##` section (and one for the text before the first, when any).
    Sections,
}

/// The id of the file at `relative` (to its root): `kb.` + the path without its extension,
/// folders joined by `.`, spaces as `-`.
pub fn id_of(relative: &Path) -> String {
    let without = relative.with_extension("");
    let parts: Vec<String> = without
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .replace(char::is_whitespace, "-")
        })
        .collect();
    format!("{PREFIX}{}", parts.join("."))
}

/// Why a page cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// The front matter is not YAML.
    #[error("front matter: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    /// The front matter is YAML but not `key: value` lines.
    #[error("front matter: expected key: value lines, got {0}")]
    NotAMap(Value),
    /// A `---` line opens the front matter and none closes it.
    #[error("front matter opened with '---' is never closed by a '---' line")]
    Unclosed,
    /// An `id` that is not a string.
    #[error("front matter 'id': expected a string, got {0}")]
    IdNotAString(Value),
    /// `entities` that are not a list.
    #[error("front matter 'entities': expected a list of entity references, got {0}")]
    EntitiesNotAList(Value),
    /// An entity that is not a string.
    #[error("front matter 'entities': expected strings, got {0}")]
    EntityNotAString(Value),
    /// A key the reader does not read.
    #[error("front matter key '{key}' is not read; the keys are id, entities, {}, {DATE_KEY}", STANDING_KEYS.join(", "))]
    UnknownKey {
        /// The key.
        key: String,
    },
}

/// The memories of one page: `relative` is its path under the root, `text` its content.
/// `Err` is why the page cannot be read (its front matter is not YAML, a key has the wrong
/// type).
pub fn read_page(relative: &Path, text: &str, split: Split) -> Result<Vec<Page>, PageError> {
    let (front, body, body_line) = front_matter(text)?;
    let mut base = Map::new();
    let mut references = Vec::new();
    let mut id = id_of(relative);
    if let Some(front) = front {
        for (key, value) in front {
            match key.as_str() {
                "id" => match value {
                    Value::String(s) => id = s,
                    other => return Err(PageError::IdNotAString(other)),
                },
                "entities" => {
                    let list = match value {
                        Value::Array(items) => items,
                        Value::String(s) => vec![Value::String(s)],
                        other => return Err(PageError::EntitiesNotAList(other)),
                    };
                    for item in list {
                        let Value::String(reference) = item else {
                            return Err(PageError::EntityNotAString(item));
                        };
                        let line = line_of(text, &reference, body_line);
                        references.push(Reference {
                            text: reference,
                            line,
                            source: Source::FrontMatter,
                        });
                    }
                }
                k if STANDING_KEYS.contains(&k) => {
                    base.insert(key, value);
                }
                DATE_KEY => {
                    // YAML reads `date: 2023` as a number; the record checks the text.
                    let time = match value {
                        Value::Number(n) => Value::String(n.to_string()),
                        other => other,
                    };
                    base.insert("event_time".into(), time);
                }
                other => {
                    return Err(PageError::UnknownKey {
                        key: other.to_owned(),
                    })
                }
            }
        }
    }
    let sections = match split {
        Split::Files => vec![(None, body.to_owned(), body_line)],
        Split::Sections => sections(body, body_line),
    };
    let mut pages = Vec::new();
    for (heading, learning, line) in sections {
        if learning.trim().is_empty() {
            continue;
        }
        let mut record = base.clone();
        let memory_id = match &heading {
            Some(h) => format!("{id}.{}", slug(h)),
            None => id.clone(),
        };
        record.insert("id".into(), Value::String(memory_id));
        let mut refs = references.clone();
        refs.extend(in_text(&learning, line));
        record.insert("learning".into(), Value::String(learning.trim().to_owned()));
        pages.push(Page {
            record,
            references: refs,
            line,
        });
    }
    Ok(pages)
}

/// A page split: its front matter's fields (when it has any), the body, the body's first line.
type Parts<'a> = (Option<Map<String, Value>>, &'a str, usize);

/// The front matter as JSON fields (when the text opens with a `---` line), the body after
/// it, and the body's first line (1-based).
fn front_matter(text: &str) -> Result<Parts<'_>, PageError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((None, text, 1));
    };
    let mut offset = 0;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            let value: Value = if yaml.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_yaml_ng::from_str(yaml)?
            };
            return match value {
                Value::Object(map) => Ok((Some(map), body, i + 3)),
                Value::Null => Ok((Some(Map::new()), body, i + 3)),
                other => Err(PageError::NotAMap(other)),
            };
        }
        offset += line.len();
    }
    Err(PageError::Unclosed)
}

/// The `##` sections of a body: (heading, text with its heading line, first line); the text
/// before the first heading is a section without one.
fn sections(body: &str, first_line: usize) -> Vec<(Option<String>, String, usize)> {
    let mut out: Vec<(Option<String>, String, usize)> = vec![(None, String::new(), first_line)];
    let mut fenced = false;
    for (i, line) in body.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let heading = (!fenced)
            .then(|| line.strip_prefix("## "))
            .flatten()
            .map(|h| h.trim().to_owned());
        if let Some(h) = heading {
            out.push((Some(h), String::new(), first_line + i));
        }
        if let Some(last) = out.last_mut() {
            last.1.push_str(line);
        }
    }
    out
}

/// A heading as an id segment: lowercase letters and digits, other runs as one `-`.
fn slug(heading: &str) -> String {
    let mut out = String::new();
    for c in heading.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "section".into()
    } else {
        out.to_owned()
    }
}

/// The `[[…]]` links and backticked names of `text` (first line `first_line`).
fn in_text(text: &str, first_line: usize) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let at = first_line + i;
        let mut rest = line;
        while let Some(start) = rest.find("[[") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("]]") else { break };
            let target = after[..end].split('|').next().unwrap_or("").trim();
            if !target.is_empty() {
                out.push(Reference {
                    text: target.to_owned(),
                    line: at,
                    source: Source::Link,
                });
            }
            rest = &after[end + 2..];
        }
        for (n, span) in line.split('`').enumerate() {
            // Odd pieces are inside backticks; a name has no spaces and holds a dot.
            if n % 2 == 1 && span.contains('.') && !span.contains(char::is_whitespace) {
                out.push(Reference {
                    text: span.to_owned(),
                    line: at,
                    source: Source::Backticked,
                });
            }
        }
    }
    out
}

/// The line of the front matter that names `reference` (its first), else the line before the
/// body.
fn line_of(text: &str, reference: &str, body_line: usize) -> usize {
    text.lines()
        .take(body_line.saturating_sub(1))
        .position(|l| l.contains(reference))
        .map_or(1, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "---\nentities:\n  - shop.orders\n  - nowhere.x\ntier: semantic\n---\n# Revenue\n\nNet revenue excludes [[shop.orders.status|refunds]]; see `shop.orders.amount`.\n\n## Caveats\n\nTax is `not a name`.\n";

    #[test]
    fn a_page_is_one_memory_with_its_front_matter_and_references() {
        let pages = read_page(Path::new("metrics/revenue.md"), PAGE, Split::Files).unwrap();
        assert_eq!(pages.len(), 1);
        let p = &pages[0];
        assert_eq!(p.record["id"], "kb.metrics.revenue");
        assert_eq!(p.record["tier"], "semantic");
        assert!(p.record["learning"]
            .as_str()
            .unwrap()
            .starts_with("# Revenue"));
        let refs: Vec<(&str, usize, Source)> = p
            .references
            .iter()
            .map(|r| (r.text.as_str(), r.line, r.source))
            .collect();
        assert_eq!(
            refs,
            [
                ("shop.orders", 3, Source::FrontMatter),
                ("nowhere.x", 4, Source::FrontMatter),
                ("shop.orders.status", 9, Source::Link),
                ("shop.orders.amount", 9, Source::Backticked),
            ]
        );
    }

    #[test]
    fn sections_split_at_second_level_headings() {
        let pages = read_page(Path::new("metrics/revenue.md"), PAGE, Split::Sections).unwrap();
        let ids: Vec<&str> = pages
            .iter()
            .map(|p| p.record["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["kb.metrics.revenue", "kb.metrics.revenue.caveats"]);
        assert_eq!(pages[1].line, 11);
        assert!(pages[1].record["learning"]
            .as_str()
            .unwrap()
            .starts_with("## Caveats"));
    }

    #[test]
    fn date_and_session_become_the_event_time_and_session() {
        for (date, want) in [("2023-05-08", "2023-05-08"), ("2023", "2023")] {
            let text = format!("---\ndate: {date}\nsession: chat-7\n---\nMoved to Berlin.\n");
            let pages = read_page(Path::new("moves.md"), &text, Split::Files).unwrap();
            assert_eq!(pages[0].record["event_time"], want);
            assert_eq!(pages[0].record["session"], "chat-7");
            assert!(pages[0].record.get("date").is_none());
        }
    }

    #[test]
    fn bad_front_matter_is_named() {
        let err = read_page(Path::new("a.md"), "---\nid: [1\n---\nx\n", Split::Files)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("front matter:"), "{err}");
        let err = read_page(Path::new("a.md"), "---\nowner: me\n---\nx\n", Split::Files)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("front matter key 'owner' is not read"),
            "{err}"
        );
        let err = read_page(Path::new("a.md"), "---\nid: x\n", Split::Files)
            .unwrap_err()
            .to_string();
        assert!(err.contains("never closed"), "{err}");
        assert_eq!(
            id_of(Path::new("run books/on call.md")),
            "kb.run-books.on-call"
        );
    }
}
