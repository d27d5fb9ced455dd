//! Jinja in Cube YAML model files, read statically. Cube renders the template at compile time
//! with `COMPILE_CONTEXT` and the security context, neither of which exists offline, so nothing
//! is evaluated: each `{{ … }}` and inline `{% … %}` becomes a placeholder the YAML parser
//! takes as plain text, lines holding only block tags (`{% for … %}`, `{% endif %}`) are
//! blanked (line numbers kept), and after parsing every placeholder is put back as written.
//! What the template decides (a member's name, a `public` flag, SQL) is then named by the
//! caller: a member whose name is made by Jinja is skipped, any other value is kept as text.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

static COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\{#.*?#\}").expect("valid regex"));
static TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}").expect("valid regex"));

/// A template with its Jinja set aside.
#[derive(Debug, Default)]
pub struct Stripped {
    /// The text the YAML parser reads.
    pub text: String,
    /// The Jinja each placeholder stands for, by number.
    pub originals: Vec<String>,
    /// Block tags on lines of their own: `(1-based line, tag)`.
    pub blocks: Vec<(usize, String)>,
}

impl Stripped {
    /// Whether the file held any Jinja.
    pub fn any(&self) -> bool {
        !self.originals.is_empty() || !self.blocks.is_empty()
    }
}

fn placeholder(n: usize) -> String {
    format!("__jinja{n}__")
}

/// `text` with its Jinja set aside.
pub fn strip(text: &str) -> Stripped {
    let mut out = Stripped::default();
    // Comments first, across lines: each becomes as many newlines as it held.
    let text = COMMENT.replace_all(text, |c: &regex::Captures| {
        "\n".repeat(c[0].matches('\n').count())
    });
    let text = text.as_ref();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let rest = TAG.replace_all(line, "");
        let only_statements = TAG.find_iter(line).all(|t| !t.as_str().starts_with("{{"));
        if rest.trim().is_empty() && TAG.is_match(line) && only_statements {
            for tag in TAG.find_iter(line) {
                if !tag.as_str().starts_with("{#") {
                    out.blocks.push((i + 1, tag.as_str().to_owned()));
                }
            }
            lines.push(String::new());
            continue;
        }
        // An expression alone on its line (`- {{ model.as_cube() }}`, `{{ x.as_dimensions() }}`)
        // writes mapping entries: it stands in as a key, so the lines around it still parse.
        let bare = rest.trim().trim_start_matches('-').trim().is_empty();
        if bare && TAG.find_iter(line).count() == 1 {
            let tag = TAG
                .find(line)
                .map(|t| t.as_str().to_owned())
                .unwrap_or_default();
            out.originals.push(tag);
            let key = format!("{}: null", placeholder(out.originals.len() - 1));
            lines.push(TAG.replace(line, key.as_str()).into_owned());
            continue;
        }
        let replaced = TAG.replace_all(line, |c: &regex::Captures| {
            let tag = c[0].to_owned();
            if tag.starts_with("{#") {
                return String::new();
            }
            out.originals.push(tag);
            placeholder(out.originals.len() - 1)
        });
        lines.push(replaced.into_owned());
    }
    out.text = lines.join("\n");
    out
}

/// `s` with each placeholder put back as written; whether it held any.
pub fn restore_text(s: &str, originals: &[String]) -> (String, bool) {
    if !s.contains("__jinja") {
        return (s.to_owned(), false);
    }
    let mut out = s.to_owned();
    let mut any = false;
    // Highest numbers first, so `__jinja1__` never matches inside `__jinja12__`.
    for (n, original) in originals.iter().enumerate().rev() {
        let p = placeholder(n);
        let entry = format!("{p}: null");
        if out.contains(&entry) {
            out = out.replace(&entry, original);
            any = true;
        }
        if out.contains(&p) {
            out = out.replace(&p, original);
            any = true;
        }
    }
    (out, any)
}

/// Every string of `v` (keys included) with its placeholders put back; the paths of the
/// values that held Jinja (`sql`, `measures[2].sql`).
pub fn restore(v: &mut Value, originals: &[String], path: &str, found: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            let (text, any) = restore_text(s, originals);
            if any {
                *s = text;
                found.push(path.to_owned());
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                restore(item, originals, &format!("{path}[{i}]"), found);
            }
        }
        Value::Object(map) => {
            let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for (key, mut value) in entries {
                let (key, any) = restore_text(&key, originals);
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if any {
                    found.push(child.clone());
                }
                restore(&mut value, originals, &child, found);
                map.insert(key, value);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jinja_is_set_aside_and_put_back() {
        let text = "cubes:\n  - name: orders\n    sql_table: {{ schema }}.orders\n{% for m in ['a', 'b'] %}\n    # {# note #}\n{% endfor %}\n";
        let s = strip(text);
        assert!(s.any());
        assert_eq!(s.blocks.len(), 2);
        assert_eq!(s.blocks[0].0, 4);
        let mut v: Value = serde_yaml_ng::from_str(&s.text).unwrap();
        let mut found = Vec::new();
        restore(&mut v, &s.originals, "", &mut found);
        assert_eq!(v["cubes"][0]["sql_table"], "{{ schema }}.orders");
        assert_eq!(found, ["cubes[0].sql_table"]);
    }

    #[test]
    fn an_expression_alone_on_its_line_stands_in_as_a_key() {
        let text = "cubes:\n  - {{ model.as_cube() }}\n    dimensions:\n      {{ model.as_dimensions() }}\n    measures:\n      - name: count\n        type: count\n";
        let s = strip(text);
        let mut v: Value = serde_yaml_ng::from_str(&s.text).unwrap();
        let mut found = Vec::new();
        restore(&mut v, &s.originals, "", &mut found);
        let cube = &v["cubes"][0];
        assert!(cube.get("{{ model.as_cube() }}").is_some(), "{v}");
        assert!(
            cube["dimensions"]
                .get("{{ model.as_dimensions() }}")
                .is_some(),
            "{v}"
        );
        assert_eq!(cube["measures"][0]["name"], "count");
    }

    #[test]
    fn a_comment_across_lines_is_removed_whole() {
        let s = strip("{#\n{% for x in y %}\n  {{ x }}\n#}\ncubes: []\n");
        assert!(!s.any());
        assert_eq!(s.text, "\n\n\n\ncubes: []");
    }

    #[test]
    fn placeholders_do_not_match_longer_ones() {
        let originals: Vec<String> = (0..12).map(|i| format!("{{{{ v{i} }}}}")).collect();
        let (text, any) = restore_text("__jinja1__ __jinja11__", &originals);
        assert!(any);
        assert_eq!(text, "{{ v1 }} {{ v11 }}");
    }
}
