//! Cube's JavaScript model files, parsed with a real parser (oxc) and read, never run: each
//! top-level `cube('name', {…})` / `view('name', {…})` (also under `module.exports =`, `export
//! default` or a `const`) becomes the same JSON a YAML file holds. Literals, template literals
//! (`${CUBE}.id` → `{CUBE}.id`), identifiers (`extends: Orders`, `drillMembers: [id]`),
//! arrays and objects are read; camelCase keys become the YAML's snake_case (member names are
//! kept). What only running the code would tell (a call, a spread, a computed key,
//! `asyncModule`) is left out and named.

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Argument, ArrayExpressionElement, ExportDefaultDeclarationKind, Expression, ObjectPropertyKind,
    PropertyKey, Statement,
};
use oxc_parser::Parser;
use oxc_span::SourceType;
use serde_json::{Map, Value};

/// The cubes and views of a file, each `(kind, name, body, line)`, and what could not be read
/// (`(line, what)`), or why the file is not JavaScript.
pub struct JsModel {
    pub definitions: Vec<(String, String, Value, usize)>,
    pub dynamic: Vec<(usize, String)>,
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

pub fn read(text: &str) -> Result<JsModel, Unparsable> {
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
    let mut model = JsModel {
        definitions: Vec::new(),
        dynamic: Vec::new(),
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
                        top_level(init, text, &mut model);
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(e) = expression {
            top_level(e, text, &mut model);
        }
    }
    let found = model.definitions.len();
    let calls = count_calls(text);
    if calls > found {
        model.dynamic.push((
            1,
            format!("{} cube()/view() calls sit inside code that must run to be read (asyncModule, a loop, a function); they are left out", calls - found),
        ));
    }
    Ok(model)
}

/// `cube(` and `view(` outside comments and strings, roughly: what the file defines.
fn count_calls(text: &str) -> usize {
    let mut n = 0;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for word in ["cube(", "view("] {
            let mut rest = code;
            while let Some(i) = rest.find(word) {
                let before = rest[..i].chars().last();
                if before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')) {
                    n += 1;
                }
                rest = &rest[i + word.len()..];
            }
        }
    }
    n
}

fn top_level(e: &Expression, text: &str, model: &mut JsModel) {
    match e {
        Expression::AssignmentExpression(a) => top_level(&a.right, text, model),
        Expression::ParenthesizedExpression(p) => top_level(&p.expression, text, model),
        Expression::CallExpression(call) => {
            let Expression::Identifier(callee) = &call.callee else {
                return;
            };
            let kind = callee.name.as_str();
            if kind != "cube" && kind != "view" {
                return;
            }
            let line = line_of(text, call.span.start);
            let name = match call.arguments.first() {
                Some(Argument::StringLiteral(s)) => s.value.as_str().to_owned(),
                Some(Argument::TemplateLiteral(t)) if t.expressions.is_empty() => {
                    t.quasis.iter().map(|q| q.value.raw.as_str()).collect()
                }
                _ => {
                    model.dynamic.push((
                        line,
                        format!("{kind}() whose name is not a literal; left out"),
                    ));
                    return;
                }
            };
            let body = match call.arguments.get(1) {
                Some(Argument::ObjectExpression(o)) => {
                    let mut path = format!("{kind} '{name}'");
                    object(&o.properties, false, text, &mut path, &mut model.dynamic)
                }
                None => Value::Object(Map::new()),
                _ => {
                    model.dynamic.push((
                        line,
                        format!(
                            "{kind}('{name}') whose definition is not an object literal; left out"
                        ),
                    ));
                    return;
                }
            };
            let mut body = body;
            if let Value::Object(m) = &mut body {
                m.insert("name".into(), Value::String(name.clone()));
            }
            model.definitions.push((kind.to_owned(), name, body, line));
        }
        _ => {}
    }
}

fn object(
    properties: &[ObjectPropertyKind],
    member_map: bool,
    text: &str,
    path: &mut String,
    dynamic: &mut Vec<(usize, String)>,
) -> Value {
    let mut out = Map::new();
    for p in properties {
        match p {
            ObjectPropertyKind::SpreadProperty(s) => {
                dynamic.push((
                    line_of(text, s.span.start),
                    format!("{path}: a spread (...) is computed when the model runs; left out"),
                ));
            }
            ObjectPropertyKind::ObjectProperty(prop) => {
                let key = match (&prop.key, prop.computed) {
                    (_, true) => None,
                    (PropertyKey::StaticIdentifier(i), _) => Some(i.name.as_str().to_owned()),
                    (PropertyKey::StringLiteral(s), _) => Some(s.value.as_str().to_owned()),
                    _ => None,
                };
                let Some(key) = key else {
                    dynamic.push((
                        line_of(text, prop.span.start),
                        format!("{path}: a computed key; left out"),
                    ));
                    continue;
                };
                let key = if member_map { key } else { snake(&key) };
                let child_is_map = !member_map && MEMBER_MAPS.contains(&key.as_str());
                let before = path.len();
                path.push('.');
                path.push_str(&key);
                if let Some(v) = value(&prop.value, child_is_map, text, path, dynamic) {
                    out.insert(key, v);
                }
                path.truncate(before);
            }
        }
    }
    Value::Object(out)
}

fn value(
    e: &Expression,
    member_map: bool,
    text: &str,
    path: &mut String,
    dynamic: &mut Vec<(usize, String)>,
) -> Option<Value> {
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
                if let Some(x) = t.expressions.get(i) {
                    match reference(x) {
                        Some(r) => s.push_str(&format!("{{{r}}}")),
                        None => {
                            dynamic.push((
                                line_of(text, x_span(x)),
                                format!(
                                    "{path}: a template part that must run to be read; left out"
                                ),
                            ));
                            return None;
                        }
                    }
                }
            }
            Value::String(s)
        }
        Expression::Identifier(_) | Expression::StaticMemberExpression(_) => {
            Value::String(reference(e)?)
        }
        Expression::ArrayExpression(a) => {
            let mut items = Vec::new();
            for el in &a.elements {
                match el {
                    ArrayExpressionElement::SpreadElement(s) => {
                        dynamic.push((
                            line_of(text, s.span.start),
                            format!(
                                "{path}: a spread (...) is computed when the model runs; left out"
                            ),
                        ));
                    }
                    ArrayExpressionElement::Elision(_) => {}
                    other => {
                        if let Some(v) = other
                            .as_expression()
                            .and_then(|x| value(x, false, text, path, dynamic))
                        {
                            items.push(v);
                        }
                    }
                }
            }
            Value::Array(items)
        }
        Expression::ObjectExpression(o) => object(&o.properties, member_map, text, path, dynamic),
        // `sql: () => `…``, the older function form.
        Expression::ArrowFunctionExpression(f) => match f.get_expression() {
            Some(x) => value(x, member_map, text, path, dynamic)?,
            None => {
                dynamic.push((
                    line_of(text, f.span.start),
                    format!("{path}: a function body must run to be read; left out"),
                ));
                return None;
            }
        },
        Expression::ParenthesizedExpression(p) => {
            value(&p.expression, member_map, text, path, dynamic)?
        }
        other => {
            dynamic.push((line_of(text, x_span(other)), format!("{path}: an expression that must run to be read (a call, an operator); left out")));
            return None;
        }
    })
}

fn x_span(e: &Expression) -> u32 {
    use oxc_span::GetSpan;
    e.span().start
}

/// `CUBE`, `Users`, `Users.id`: a reference as Cube writes it.
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
