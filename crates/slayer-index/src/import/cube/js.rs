//! Cube's JavaScript model files, parsed with a real parser (oxc) and read, never run: each
//! `cube('name', {…})` / `view('name', {…})` call (top level, under `module.exports =`, `export
//! default` or a `const`; or inside code that runs, such as `asyncModule` or a loop, then
//! marked lossy) becomes the same JSON a YAML file holds. Literals, template literals
//! (`${CUBE}.id` → `{CUBE}.id`), Cube references (`extends: Orders`, `drillMembers: [id]`),
//! arrays and objects are read; a top-level `const` bound to a literal is read as its value
//! (`${SCHEMA}.orders`); camelCase keys become the YAML's snake_case (member names are kept).
//! What only running the code would tell (another variable, a call, a spread, a computed key)
//! is left out and named.

use oxc_allocator::Allocator;
use std::collections::{HashMap, HashSet};

use oxc_ast::ast::{
    Argument, ArrayExpressionElement, BindingPattern, CallExpression, ExportDefaultDeclarationKind,
    Expression, ObjectPropertyKind, PropertyKey, Statement, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};

use super::constants::Known;
use super::refs::{is_global, CUBE_CONTEXT};
use oxc_parser::Parser;
use oxc_span::SourceType;
use serde_json::{Map, Value};

/// The cubes and views of a file, each `(kind, name, body, line)`, and what could not be read
/// (`(line, what)`), or why the file is not JavaScript.
pub struct JsModel {
    pub definitions: Vec<(String, String, Value, usize)>,
    pub dynamic: Vec<(usize, String)>,
    /// Values read with a part only running the model would fill, kept as written.
    pub partial: Vec<(usize, String)>,
}

/// Keys whose values are maps of member name → member: their keys are names, not fields.
const MEMBER_MAPS: [&str; 6] = [
    "dimensions",
    "measures",
    "segments",
    "joins",
    "pre_aggregations",
    "hierarchies",
];

fn line_of(text: &str, offset: u32) -> usize {
    text[..(offset as usize).min(text.len())]
        .matches('\n')
        .count()
        + 1
}

/// `sqlTable` → `sql_table`.
fn snake(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A file the parser refuses: not JavaScript, or JavaScript it cannot read.
#[derive(Debug, thiserror::Error)]
#[error("not JavaScript this importer can parse: {0}")]
pub struct Unparsable(String);

/// The cubes and views of `text`, reading the constants whose text is `known` (this file's,
/// and those it `require`s: `constants.rs`) as that text.
pub fn read(text: &str, known: HashMap<String, Known>) -> Result<JsModel, Unparsable> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, text, SourceType::mjs()).parse();
    if parsed.panicked || parsed.diagnostics.has_errors() {
        let first = parsed
            .diagnostics
            .errors()
            .next()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "the parser gave up".into());
        return Err(Unparsable(first));
    }
    let mut names = Names {
        literals: known,
        ..Names::default()
    };
    names.visit_program(&parsed.program);
    let mut reader = Reader {
        text,
        names,
        model: JsModel {
            definitions: Vec::new(),
            dynamic: Vec::new(),
            partial: Vec::new(),
        },
        read_at: HashSet::new(),
        nested: false,
    };
    for statement in &parsed.program.body {
        let expression = match statement {
            Statement::ExpressionStatement(s) => Some(&s.expression),
            Statement::ExportDefaultDeclaration(d) => match &d.declaration {
                ExportDefaultDeclarationKind::FunctionDeclaration(_)
                | ExportDefaultDeclarationKind::ClassDeclaration(_) => None,
                other => other.as_expression(),
            },
            Statement::VariableDeclaration(v) => {
                for d in &v.declarations {
                    if let Some(init) = &d.init {
                        reader.top_level(init);
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(e) = expression {
            reader.top_level(e);
        }
    }
    // Calls inside code that runs (asyncModule, a loop, a function): read as written.
    reader.nested = true;
    reader.visit_program(&parsed.program);
    Ok(reader.model)
}

/// What the file's JavaScript binds: constants whose text is known (read as that text), and
/// every other variable, parameter, function or import (known only at run time).
#[derive(Default)]
struct Names {
    literals: HashMap<String, Known>,
    variables: HashSet<String>,
    /// Names bound to a `cube()` / `view()` call: Cube references, not variables.
    definitions: HashSet<String>,
}

impl<'a> Visit<'a> for Names {
    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let (BindingPattern::BindingIdentifier(id), Some(Expression::CallExpression(call))) =
            (&it.id, &it.init)
        {
            if matches!(&call.callee, Expression::Identifier(c) if c.name == "cube" || c.name == "view")
            {
                self.definitions.insert(id.name.as_str().to_owned());
            }
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_binding_identifier(&mut self, it: &oxc_ast::ast::BindingIdentifier<'a>) {
        self.variables.insert(it.name.as_str().to_owned());
    }
}

/// Reads the `cube()` / `view()` calls of one file.
struct Reader<'t> {
    text: &'t str,
    names: Names,
    model: JsModel,
    /// Where the calls read so far start.
    read_at: HashSet<u32>,
    /// Whether calls met now sit inside code that runs.
    nested: bool,
}

impl<'a> Visit<'a> for Reader<'_> {
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        if self.nested && is_definition(it) && !self.read_at.contains(&it.span.start) {
            self.call(it);
        }
        walk::walk_call_expression(self, it);
    }
}

fn is_definition(call: &CallExpression) -> bool {
    matches!(&call.callee, Expression::Identifier(c) if c.name == "cube" || c.name == "view")
}

impl Reader<'_> {
    /// A constant's text, its parts only the running model fills named.
    fn constant(&mut self, e: &Expression, path: &str, name: &str, known: Known) -> String {
        if !known.unknown.is_empty() {
            let line = line_of(self.text, x_span(e));
            self.model.partial.push((line, format!("{path}: constant '{name}' holds {}, known only when the model runs; kept as written", known.unknown.iter().map(|u| format!("${{{u}}}")).collect::<Vec<_>>().join(", "))));
        }
        known.text
    }

    fn top_level(&mut self, e: &Expression) {
        match e {
            Expression::AssignmentExpression(a) => self.top_level(&a.right),
            Expression::ParenthesizedExpression(p) => self.top_level(&p.expression),
            Expression::CallExpression(call) if is_definition(call) => self.call(call),
            _ => {}
        }
    }

    fn left_out(&mut self, offset: u32, what: String) {
        let line = line_of(self.text, offset);
        self.model.dynamic.push((line, what));
    }

    /// One `cube('name', {…})` / `view(…)` call.
    fn call(&mut self, call: &CallExpression) {
        self.read_at.insert(call.span.start);
        let Expression::Identifier(callee) = &call.callee else {
            return;
        };
        let kind = callee.name.as_str().to_owned();
        let line = line_of(self.text, call.span.start);
        let name = match call.arguments.first() {
            Some(Argument::StringLiteral(s)) => s.value.as_str().to_owned(),
            Some(Argument::TemplateLiteral(t)) if t.expressions.is_empty() => {
                t.quasis.iter().map(|q| q.value.raw.as_str()).collect()
            }
            _ => {
                let where_ = if self.nested {
                    " inside code that runs"
                } else {
                    ""
                };
                self.left_out(
                    call.span.start,
                    format!("{kind}(){where_} whose name is not a literal (known only when the model runs); left out"),
                );
                return;
            }
        };
        let body = match call.arguments.get(1) {
            Some(Argument::ObjectExpression(o)) => {
                let mut path = format!("{kind} '{name}'");
                self.object(&o.properties, false, &mut path)
            }
            None => Value::Object(Map::new()),
            _ => {
                self.left_out(
                    call.span.start,
                    format!("{kind}('{name}') whose definition is not an object literal; left out"),
                );
                return;
            }
        };
        let mut body = body;
        if let Value::Object(m) = &mut body {
            m.insert("name".into(), Value::String(name.clone()));
        }
        if self.nested {
            super::add_note(&mut body, "declared inside code that runs when Cube loads the model (asyncModule, a loop, a function); read as written, so values known only at run time are missing".into());
        }
        self.model.definitions.push((kind, name, body, line));
    }

    fn object(
        &mut self,
        properties: &[ObjectPropertyKind],
        member_map: bool,
        path: &mut String,
    ) -> Value {
        let mut out = Map::new();
        for p in properties {
            match p {
                ObjectPropertyKind::SpreadProperty(s) => {
                    self.left_out(
                        s.span.start,
                        format!("{path}: a spread (...) is computed when the model runs; left out"),
                    );
                }
                ObjectPropertyKind::ObjectProperty(prop) => {
                    let key = match (&prop.key, prop.computed) {
                        (_, true) => None,
                        (PropertyKey::StaticIdentifier(i), _) => Some(i.name.as_str().to_owned()),
                        (PropertyKey::StringLiteral(s), _) => Some(s.value.as_str().to_owned()),
                        _ => None,
                    };
                    let Some(key) = key else {
                        self.left_out(prop.span.start, format!("{path}: a computed key; left out"));
                        continue;
                    };
                    let key = if member_map { key } else { snake(&key) };
                    let child_is_map = !member_map && MEMBER_MAPS.contains(&key.as_str());
                    let before = path.len();
                    path.push('.');
                    path.push_str(&key);
                    if let Some(v) = self.value(&prop.value, child_is_map, path) {
                        out.insert(key, v);
                    }
                    path.truncate(before);
                }
            }
        }
        Value::Object(out)
    }

    /// A reference as Cube reads it, a constant's text, or `None` (named) for a variable only
    /// running the model would tell.
    fn referenced(&mut self, e: &Expression, path: &str) -> Option<String> {
        let r = reference(e)?;
        let root = r.split('.').next().unwrap_or_default();
        if let Some(known) = self.names.literals.get(&r).cloned() {
            return Some(self.constant(e, path, &r, known));
        }
        let variable = root == "process"
            || (self.names.variables.contains(root)
                && !self.names.definitions.contains(root)
                && !CUBE_CONTEXT.contains(&root));
        if variable {
            self.left_out(
                x_span(e),
                format!(
                    "{path}: '{r}' is a JavaScript value known only when the model runs; left out"
                ),
            );
            return None;
        }
        Some(r)
    }

    fn value(&mut self, e: &Expression, member_map: bool, path: &mut String) -> Option<Value> {
        Some(match e {
            Expression::StringLiteral(s) => Value::String(s.value.as_str().to_owned()),
            Expression::NumericLiteral(n) => serde_json::Number::from_f64(n.value)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Expression::BooleanLiteral(b) => Value::Bool(b.value),
            Expression::NullLiteral(_) => Value::Null,
            Expression::TemplateLiteral(t) => {
                let mut s = String::new();
                for (i, q) in t.quasis.iter().enumerate() {
                    s.push_str(
                        q.value
                            .cooked
                            .as_ref()
                            .map_or(q.value.raw.as_str(), |c| c.as_str()),
                    );
                    let Some(x) = t.expressions.get(i) else {
                        continue;
                    };
                    if reference(x).is_none() {
                        self.left_out(
                            x_span(x),
                            format!("{path}: a template part that must run to be read; left out"),
                        );
                        return None;
                    }
                    let r = reference(x)?;
                    match self.names.literals.get(&r).cloned() {
                        // A constant's text goes in as written, not as a reference.
                        Some(known) => s.push_str(&self.constant(x, path, &r, known)),
                        // A global only the running model knows (`${SCHEMA}`): kept as written.
                        None if is_global(&r) => {
                            self.model.partial.push((line_of(self.text, x_span(x)), format!("{path}: '${{{r}}}' is a value known only when the model runs; kept as written")));
                            s.push_str(&format!("${{{r}}}"));
                        }
                        None => s.push_str(&format!("{{{}}}", self.referenced(x, path)?)),
                    }
                }
                Value::String(s)
            }
            Expression::Identifier(_) | Expression::StaticMemberExpression(_) => {
                Value::String(self.referenced(e, path)?)
            }
            Expression::ArrayExpression(a) => {
                let mut items = Vec::new();
                for el in &a.elements {
                    match el {
                        ArrayExpressionElement::SpreadElement(s) => {
                            self.left_out(
                                s.span.start,
                                format!("{path}: a spread (...) is computed when the model runs; left out"),
                            );
                        }
                        ArrayExpressionElement::Elision(_) => {}
                        other => {
                            if let Some(v) = other
                                .as_expression()
                                .and_then(|x| self.value(x, false, path))
                            {
                                items.push(v);
                            }
                        }
                    }
                }
                Value::Array(items)
            }
            Expression::ObjectExpression(o) => self.object(&o.properties, member_map, path),
            // `sql: () => `…``, the older function form.
            Expression::ArrowFunctionExpression(f) => match f.get_expression() {
                Some(x) => self.value(x, member_map, path)?,
                None => {
                    self.left_out(
                        f.span.start,
                        format!("{path}: a function body must run to be read; left out"),
                    );
                    return None;
                }
            },
            Expression::ParenthesizedExpression(p) => {
                self.value(&p.expression, member_map, path)?
            }
            other => {
                self.left_out(x_span(other), format!("{path}: an expression that must run to be read (a call, an operator); left out"));
                return None;
            }
        })
    }
}

fn x_span(e: &Expression) -> u32 {
    use oxc_span::GetSpan;
    e.span().start
}

/// `CUBE`, `Users`, `Users.id`: a reference as Cube writes it (or a variable's path).
fn reference(e: &Expression) -> Option<String> {
    match e {
        Expression::Identifier(i) => Some(i.name.as_str().to_owned()),
        Expression::StaticMemberExpression(m) => Some(format!(
            "{}.{}",
            reference(&m.object)?,
            m.property.name.as_str()
        )),
        _ => None,
    }
}
