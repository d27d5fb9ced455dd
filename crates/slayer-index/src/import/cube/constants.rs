//! The text of a model's JavaScript constants, read without running anything: a top-level
//! `const` bound to a string, to a template literal whose parts are other such constants, or
//! to another file's (`require('./sql').movements`, `const { a } = require('./sql')`) has a
//! text an offline import can know, and `sql: movements` reads it. Anything else (a call, an
//! environment variable, a parameter) stays unknown and is named where it is used.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Argument, BindingPattern, Expression, PropertyKey, Statement, TemplateLiteral,
    VariableDeclarator,
};
use oxc_parser::Parser;
use oxc_span::SourceType;

/// How deep one constant may lean on others (a cycle or a long chain stops there).
const MAX_DEPTH: usize = 32;

/// What a constant is bound to, as far as reading tells.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    /// Text, and the constants spliced into it: `Part::Text` and `Part::Name` in order.
    Parts(Vec<Part>),
    /// `require(path).name`.
    Import(String, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Name(String),
}

/// A constant's text, and the names in it only running the model would fill.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    pub text: String,
    pub unknown: Vec<String>,
}

/// The constants of every JavaScript file of a project, by file (relative to the project).
#[derive(Debug, Default)]
pub struct Constants {
    files: HashMap<PathBuf, HashMap<String, Bound>>,
}

impl Constants {
    /// Records the top-level constants of `file` (its text `text`); a file that does not
    /// parse has none (it is named when it is read as a model).
    pub fn add(&mut self, file: &Path, text: &str) {
        let allocator = Allocator::default();
        let parsed = Parser::new(&allocator, text, SourceType::mjs()).parse();
        if parsed.panicked || parsed.diagnostics.has_errors() {
            return;
        }
        let mut bound = HashMap::new();
        for statement in &parsed.program.body {
            if let Statement::VariableDeclaration(v) = statement {
                for d in &v.declarations {
                    declarator(d, &mut bound);
                }
            }
        }
        self.files.insert(file.to_owned(), bound);
    }

    /// The text of every constant of `file` that has one, with the names inside it whose
    /// value only running the model gives (kept as `${NAME}`, as written).
    pub fn texts_of(&self, file: &Path) -> HashMap<String, Known> {
        let Some(bound) = self.files.get(file) else {
            return HashMap::new();
        };
        bound
            .keys()
            .filter_map(|name| {
                let mut unknown = Vec::new();
                let text = self.text(file, name, 0, &mut unknown)?;
                unknown.sort();
                unknown.dedup();
                Some((name.clone(), Known { text, unknown }))
            })
            .collect()
    }

    /// A constant's text; a name in it without one is kept as `${name}` and listed.
    fn text(
        &self,
        file: &Path,
        name: &str,
        depth: usize,
        unknown: &mut Vec<String>,
    ) -> Option<String> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.files.get(file)?.get(name)? {
            Bound::Parts(parts) => {
                let mut out = String::new();
                for p in parts {
                    match p {
                        Part::Text(t) => out.push_str(t),
                        Part::Name(n) => match self.text(file, n, depth + 1, unknown) {
                            Some(t) => out.push_str(&t),
                            None => {
                                out.push_str(&format!("${{{n}}}"));
                                unknown.push(n.clone());
                            }
                        },
                    }
                }
                Some(out)
            }
            Bound::Import(path, n) => {
                let other = required(file, path);
                self.text(&other, n, depth + 1, unknown)
            }
        }
    }
}

/// The file `require(path)` in `file` names: relative to `file`'s folder, `.js` added.
fn required(file: &Path, path: &str) -> PathBuf {
    let mut p = file.parent().unwrap_or(Path::new("")).to_path_buf();
    for part in path.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                p.pop();
            }
            other => p.push(other),
        }
    }
    if p.extension().is_none() {
        p.set_extension("js");
    }
    p
}

fn template(t: &TemplateLiteral) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    for (i, q) in t.quasis.iter().enumerate() {
        let text = q
            .value
            .cooked
            .as_ref()
            .map_or(q.value.raw.as_str(), |c| c.as_str());
        parts.push(Part::Text(text.to_owned()));
        if let Some(x) = t.expressions.get(i) {
            let Expression::Identifier(id) = x else {
                return None;
            };
            parts.push(Part::Name(id.name.as_str().to_owned()));
        }
    }
    Some(parts)
}

/// `require('./x')` → `./x`.
fn require_path(e: &Expression) -> Option<String> {
    let Expression::CallExpression(call) = e else {
        return None;
    };
    match (&call.callee, call.arguments.first()) {
        (Expression::Identifier(c), Some(Argument::StringLiteral(s))) if c.name == "require" => {
            Some(s.value.as_str().to_owned())
        }
        _ => None,
    }
}

fn declarator(d: &VariableDeclarator, bound: &mut HashMap<String, Bound>) {
    let Some(init) = &d.init else {
        return;
    };
    match &d.id {
        BindingPattern::BindingIdentifier(id) => {
            let name = id.name.as_str().to_owned();
            let b = match init {
                Expression::StringLiteral(s) => {
                    Some(Bound::Parts(vec![Part::Text(s.value.as_str().to_owned())]))
                }
                Expression::TemplateLiteral(t) => template(t).map(Bound::Parts),
                Expression::StaticMemberExpression(m) => require_path(&m.object)
                    .map(|path| Bound::Import(path, m.property.name.as_str().to_owned())),
                _ => None,
            };
            if let Some(b) = b {
                bound.insert(name, b);
            }
        }
        // `const { a, b: c } = require('./x')`
        BindingPattern::ObjectPattern(o) => {
            let Some(path) = require_path(init) else {
                return;
            };
            for p in &o.properties {
                let PropertyKey::StaticIdentifier(key) = &p.key else {
                    continue;
                };
                if let BindingPattern::BindingIdentifier(local) = &p.value {
                    bound.insert(
                        local.name.as_str().to_owned(),
                        Bound::Import(path.clone(), key.name.as_str().to_owned()),
                    );
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_read_across_templates_and_files() {
        let mut c = Constants::default();
        c.add(
            Path::new("schema/sql.js"),
            "const base = `SELECT * FROM t`;\nconst moves = `SELECT a FROM (${base}) x`;\nconst odd = f();\n",
        );
        c.add(
            Path::new("schema/m.js"),
            "const moves = require('./sql').moves;\nconst { base: b } = require('./sql.js');\nconst SCHEMA = 'billing';\nconst loop = `${loop}`;\nconst odd = require('./sql').odd;\n",
        );
        c.add(
            Path::new("schema/g.js"),
            "const q = `SELECT * FROM ${SCHEMA}.orders`;\n",
        );
        let texts = c.texts_of(Path::new("schema/m.js"));
        assert_eq!(texts["moves"].text, "SELECT a FROM (SELECT * FROM t) x");
        assert!(texts["moves"].unknown.is_empty());
        assert_eq!(texts["b"].text, "SELECT * FROM t");
        assert_eq!(texts["SCHEMA"].text, "billing");
        assert_eq!(texts["loop"].unknown, ["loop"], "a cycle stops, named");
        assert!(!texts.contains_key("odd"), "a call has no text");
        let g = c.texts_of(Path::new("schema/g.js"));
        assert_eq!(g["q"].text, "SELECT * FROM ${SCHEMA}.orders");
        assert_eq!(g["q"].unknown, ["SCHEMA"]);
    }
}
