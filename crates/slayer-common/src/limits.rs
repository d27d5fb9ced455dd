//! What one request may carry (docs/spec/limits.md §16). Every text field an agent or a user sends
//! is bounded, so a long-lived `--batch` or MCP process answers a hostile or unlucky request with
//! an error (or, for a question, a cut and a warning) instead of gigabytes. The defaults are
//! below; a `[limits]` table in `slayer.toml` beside the store changes any of them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The bounds in force. Sizes are bytes of UTF-8 (of JSON for a query).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// A search question; a longer one is cut at a character boundary, with a warning.
    pub question_bytes: usize,
    /// Distinct terms the full-text channel looks up for one question; the rest are dropped,
    /// with a warning.
    pub question_terms: usize,
    /// A memory's learning.
    pub learning_bytes: usize,
    /// An inline SlayerQuery (`--query`, a memory's query), as JSON.
    pub query_bytes: usize,
    /// How deep parentheses may nest in one formula or filter.
    pub formula_depth: usize,
    /// Entity references in one request or memory (and ids in one `show` / `expand_ids`).
    pub entities: usize,
    /// One entity reference, id, datasource, project, agent or planner term.
    pub name_bytes: usize,
    /// One `--batch` request line or MCP message.
    pub request_bytes: usize,
    /// One file an importer reads whole (a YAML or JavaScript model file, an Ossie document);
    /// a larger one is skipped, named.
    pub import_file_bytes: usize,
    /// How deep brackets may nest in such a file (YAML flow collections, JavaScript objects);
    /// a deeper one is skipped, named.
    pub import_depth: usize,
    /// One description or label of a catalog record: `slayer-index load` refuses a longer
    /// one, the importers and the profiler cut it (with a warning).
    pub description_bytes: usize,
    /// One search response, as JSON: a larger one loses its lowest-ranked hits, with a
    /// warning.
    pub response_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            question_bytes: 16 * 1024,
            question_terms: 256,
            learning_bytes: 64 * 1024,
            query_bytes: 64 * 1024,
            formula_depth: 32,
            entities: 256,
            name_bytes: 1024,
            request_bytes: 1024 * 1024,
            import_file_bytes: 64 * 1024 * 1024,
            import_depth: 256,
            description_bytes: 64 * 1024,
            response_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Why `slayer.toml`'s limits could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    /// The file is there but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not TOML, or its `[limits]` table holds an unknown key or a bad value.
    #[error("bad [limits] in {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong (the parser's message names the key and line).
        message: String,
    },
}

/// The file, read only for its `[limits]` table (other tables belong to other readers).
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    limits: Limits,
}

impl Limits {
    /// The limits for the store at `store`: `slayer.toml` beside it when there is one, else the
    /// defaults.
    pub fn load(store: &Path) -> Result<Limits, LimitsError> {
        let path = config_path(store);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Limits::default()),
            Err(source) => return Err(LimitsError::Read { path, source }),
        };
        Limits::parse(&text).map_err(|e| LimitsError::Invalid {
            path,
            message: e.to_string(),
        })
    }

    /// The `[limits]` of a configuration file's text, checked.
    pub fn parse(text: &str) -> Result<Limits, ConfigError> {
        let file: File =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string().trim().to_owned()))?;
        file.limits.check()?;
        Ok(file.limits)
    }

    /// Every limit must let something through.
    pub fn check(&self) -> Result<(), LimitError> {
        for (key, value) in [
            ("question_bytes", self.question_bytes),
            ("question_terms", self.question_terms),
            ("learning_bytes", self.learning_bytes),
            ("query_bytes", self.query_bytes),
            ("formula_depth", self.formula_depth),
            ("entities", self.entities),
            ("name_bytes", self.name_bytes),
            ("request_bytes", self.request_bytes),
            ("import_file_bytes", self.import_file_bytes),
            ("import_depth", self.import_depth),
            ("description_bytes", self.description_bytes),
            ("response_bytes", self.response_bytes),
        ] {
            if value == 0 {
                return Err(LimitError::Zero { key });
            }
        }
        Ok(())
    }

    /// `Err` naming `field` when `text` is longer than `limit` bytes.
    pub fn check_len(
        field: &str,
        text: &str,
        limit: usize,
        key: &'static str,
    ) -> Result<(), LimitError> {
        if text.len() > limit {
            return Err(LimitError::TooLong {
                field: field.to_owned(),
                len: text.len(),
                limit,
                key,
            });
        }
        Ok(())
    }

    /// A list of names: at most [`Limits::entities`] of them, each at most
    /// [`Limits::name_bytes`].
    pub fn check_names<'a>(
        &self,
        field: &str,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), LimitError> {
        let mut count = 0;
        for name in names {
            count += 1;
            if count > self.entities {
                return Err(LimitError::TooMany {
                    field: field.to_owned(),
                    limit: self.entities,
                });
            }
            Limits::check_len(
                &format!("an item of {field}"),
                name,
                self.name_bytes,
                "name_bytes",
            )?;
        }
        Ok(())
    }

    /// A formula or filter: at most [`Limits::formula_depth`] nested parentheses.
    pub fn check_formula(&self, field: &str, formula: &str) -> Result<(), LimitError> {
        let depth = paren_depth(formula);
        if depth > self.formula_depth {
            return Err(LimitError::TooDeep {
                field: field.to_owned(),
                depth,
                limit: self.formula_depth,
            });
        }
        Ok(())
    }

    /// An inline query: at most [`Limits::query_bytes`] of JSON, and every string in it (the
    /// formulas and filters) nested at most [`Limits::formula_depth`] deep.
    pub fn check_query(&self, field: &str, query: &serde_json::Value) -> Result<(), LimitError> {
        let size = serde_json::to_string(query).map_or(usize::MAX, |s| s.len());
        if size > self.query_bytes {
            return Err(LimitError::TooLong {
                field: field.to_owned(),
                len: size,
                limit: self.query_bytes,
                key: "query_bytes",
            });
        }
        let mut strings = vec![query];
        while let Some(value) = strings.pop() {
            match value {
                serde_json::Value::String(s) => {
                    self.check_formula(&format!("a formula of {field}"), s)?
                }
                serde_json::Value::Array(items) => strings.extend(items),
                serde_json::Value::Object(map) => strings.extend(map.values()),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Why a configuration file's `[limits]` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not TOML, or not of the file's shape (the TOML reader's message).
    #[error("{0}")]
    Toml(String),
    /// A limit that lets nothing through.
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// What a request or a configuration holds over a limit; each reads as the sentence a user
/// acts on (docs/spec/limits.md §16).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// A configured limit of 0, which would let nothing through.
    #[error("limits.{key} must be at least 1")]
    Zero {
        /// The key under `[limits]`.
        key: &'static str,
    },
    /// A text over its byte limit.
    #[error("{field} is {len} bytes; the limit is {limit} (limits.{key} in slayer.toml)")]
    TooLong {
        /// The field, as the user named it.
        field: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
        /// The key under `[limits]`.
        key: &'static str,
    },
    /// A list with more items than `limits.entities`.
    #[error("{field} holds more than {limit} items; the limit is limits.entities in slayer.toml")]
    TooMany {
        /// The field.
        field: String,
        /// The limit.
        limit: usize,
    },
    /// A formula nested deeper than `limits.formula_depth`.
    #[error("{field} nests parentheses {depth} deep; the limit is {limit} (limits.formula_depth in slayer.toml)")]
    TooDeep {
        /// The field.
        field: String,
        /// Its depth.
        depth: usize,
        /// The limit.
        limit: usize,
    },
}

/// `slayer.toml` beside the store (in the working directory, for a store on a server).
pub fn config_path(store: &Path) -> PathBuf {
    // A store on a server has no folder: its hosts read the one they run in.
    if matches!(
        crate::store::Location::parse(store),
        Ok(crate::store::Location::Server(_))
    ) {
        return PathBuf::from("slayer.toml");
    }
    store
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .join("slayer.toml")
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// How deep parentheses nest in `text`, outside single and double quotes: one pass, no
/// allocation, so a hostile formula costs its length and nothing more.
pub fn paren_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut quote) = (0usize, 0usize, None);
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (None, ')') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_hold_when_the_file_has_no_limits_table() {
        assert_eq!(
            Limits::parse("[semantic_search]\nmax_synonyms = 3\n").unwrap(),
            Limits::default()
        );
        let set = Limits::parse("[limits]\nlearning_bytes = 10\n").unwrap();
        assert_eq!(set.learning_bytes, 10);
        assert_eq!(set.question_bytes, Limits::default().question_bytes);
    }

    #[test]
    fn unknown_keys_and_zeros_are_refused() {
        let e = Limits::parse("[limits]\nlerning_bytes = 10\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lerning_bytes"), "{e}");
        let e = Limits::parse("[limits]\nentities = 0\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "limits.entities must be at least 1");
    }

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("héllo", 99), "héllo");
    }

    #[test]
    fn depth_skips_quoted_parentheses() {
        assert_eq!(paren_depth("sum(amount) / count(*)"), 1);
        assert_eq!(paren_depth("cumsum(sum(x))"), 2);
        assert_eq!(paren_depth("x = '((((' and f(g(h(1)))"), 3);
        assert_eq!(paren_depth(")))((("), 3);
        let deep = format!("{}x{}", "sum(".repeat(50_000), ")".repeat(50_000));
        assert_eq!(paren_depth(&deep), 50_000);
    }

    #[test]
    fn a_query_is_checked_by_size_and_by_every_formula_in_it() {
        let limits = Limits::default();
        let deep = format!("{}amount{}", "sum(".repeat(40), ")".repeat(40));
        let q = serde_json::json!({"source_model": "orders", "measures": [{"formula": deep}]});
        let e = limits.check_query("query", &q).unwrap_err().to_string();
        assert_eq!(
            e,
            "a formula of query nests parentheses 40 deep; the limit is 32 (limits.formula_depth in slayer.toml)"
        );
        let big = serde_json::json!({"filters": ["x".repeat(70_000)]});
        let e = limits.check_query("query", &big).unwrap_err().to_string();
        assert!(
            e.starts_with("query is 70016 bytes; the limit is 65536"),
            "{e}"
        );
    }
}
