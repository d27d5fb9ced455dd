//! Cube's member references in SQL as SLayer reads them: `{CUBE}.col` and `${CUBE}.col` → `col`
//! (a column of this model), `{CUBE}` alone → the table (the cube's name), `{member}` →
//! `member`, `{cube.member}` and `{cube}.col` → `cube.member` (through the join). String
//! literals are left alone.

use std::sync::LazyLock;

use regex::Regex;

static REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$?\{\s*([A-Za-z_][\w]*)(?:\.([A-Za-z_][\w]*))?\s*\}(\.)?").expect("valid regex")
});

/// Names Cube gives a model's code (`sql: (CUBE) => …`, `FILTER_PARAMS`): references, even
/// where a function takes them as parameters.
pub const CUBE_CONTEXT: [&str; 7] = [
    "CUBE",
    "TABLE",
    "FILTER_PARAMS",
    "FILTER_GROUP",
    "SECURITY_CONTEXT",
    "COMPILE_CONTEXT",
    "SQL_UTILS",
];

/// `SCHEMA`, `DB_PREFIX`: an upper-case name no Cube reference has (cubes and members are
/// named in camel or snake case), so a global of the running model.
pub fn is_global(name: &str) -> bool {
    !CUBE_CONTEXT.contains(&name)
        && name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `sql` with Cube's references rewritten, as seen from the cube `this`.
pub fn translate(sql: &str, this: &str) -> String {
    let mut out = String::new();
    // Outside single-quoted strings only.
    for (i, piece) in sql.split('\'').enumerate() {
        if i > 0 {
            out.push('\'');
        }
        if i % 2 == 1 {
            out.push_str(piece);
            continue;
        }
        let rewritten = REF.replace_all(piece, |c: &regex::Captures| {
            let first = &c[1];
            // `${SCHEMA}`: a global of the running model (upper case, no member), not a
            // reference; kept as written (the JavaScript reader named it).
            if c[0].starts_with('$') && c.get(2).is_none() && is_global(first) {
                return c[0].to_owned();
            }
            let own = first == "CUBE" || first == "TABLE" || first == this;
            let dot = c.get(3).map_or("", |_| ".");
            match (c.get(2), own) {
                // {CUBE}.col → col; {CUBE} → the cube's table, named as the model.
                (None, true) if dot == "." => String::new(),
                (None, true) => this.to_owned(),
                (Some(member), true) => format!("{}{dot}", member.as_str()),
                // {member} or {cube}.col → member / cube.col
                (None, false) => format!("{first}{dot}"),
                (Some(member), false) => format!("{first}.{}{dot}", member.as_str()),
            }
        });
        out.push_str(&rewritten);
    }
    out
}

/// The columns an equality join condition pairs, `(this side, other side, other cube)`: ANDed
/// `{CUBE}.a = {other}.b` / `{other.b}` terms, either way round.
pub fn join_pairs(sql: &str, this: &str) -> Option<(String, Vec<(String, String)>)> {
    let mut other_cube: Option<String> = None;
    let mut pairs = Vec::new();
    static AND: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\s+and\s+").expect("valid regex"));
    for term in AND.split(sql.trim()) {
        let term = term.trim().trim_start_matches('(').trim_end_matches(')');
        let (a, b) = term.split_once('=')?;
        let side = |s: &str| -> Option<(String, String)> {
            let s = s.trim();
            let c = REF.captures(s)?;
            let whole = c.get(0)?;
            if whole.start() != 0 {
                return None; // a function or an expression around the reference
            }
            // `{CUBE}."EMAIL"`, `` {CUBE}.`_id` ``: a quoted column is the column.
            let rest = s[whole.end()..]
                .trim()
                .trim_matches(|c| c == '"' || c == '`');
            let first = c[1].to_owned();
            let cube = if first == "CUBE" || first == "TABLE" {
                this.to_owned()
            } else {
                first
            };
            match (c.get(2), rest) {
                (Some(m), "") => Some((cube, m.as_str().to_owned())),
                (None, col) if c.get(3).is_some() && crate::import::is_identifier(col) => {
                    Some((cube, col.to_owned()))
                }
                _ => None,
            }
        };
        let (l, r) = (side(a)?, side(b)?);
        let (mine, theirs) = if l.0 == this {
            (l, r)
        } else if r.0 == this {
            (r, l)
        } else {
            return None;
        };
        if theirs.0 == this {
            return None;
        }
        match &other_cube {
            Some(o) if *o != theirs.0 => return None,
            _ => other_cube = Some(theirs.0.clone()),
        }
        pairs.push((mine.1, theirs.1));
    }
    Some((other_cube?, pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_become_columns_and_paths() {
        assert_eq!(translate("{CUBE}.amount * 2", "orders"), "amount * 2");
        assert_eq!(translate("${CUBE}.id", "orders"), "id");
        assert_eq!(
            translate("select * from ${SCHEMA}.orders", "orders"),
            "select * from ${SCHEMA}.orders"
        );
        assert_eq!(
            translate("{total} / NULLIF({count}, 0)", "orders"),
            "total / NULLIF(count, 0)"
        );
        assert_eq!(
            translate("{users.city} = 'x {CUBE}'", "orders"),
            "users.city = 'x {CUBE}'"
        );
        assert_eq!(translate("{users}.city", "orders"), "users.city");
        assert_eq!(
            translate("SELECT * FROM {CUBE}", "orders"),
            "SELECT * FROM orders"
        );
    }

    #[test]
    fn equality_joins_pair_columns() {
        assert_eq!(
            join_pairs("{CUBE}.user_id = {users}.id", "orders"),
            Some((
                "users".to_owned(),
                vec![("user_id".to_owned(), "id".to_owned())]
            ))
        );
        assert_eq!(
            join_pairs(
                "${users.id} = ${CUBE}.user_id AND {CUBE}.region = {users.region}",
                "orders"
            ),
            Some((
                "users".to_owned(),
                vec![
                    ("user_id".to_owned(), "id".to_owned()),
                    ("region".to_owned(), "region".to_owned())
                ]
            ))
        );
        assert_eq!(
            join_pairs("{CUBE}.\"EMAIL\" = {users}.`email`", "orders"),
            Some((
                "users".to_owned(),
                vec![("EMAIL".to_owned(), "email".to_owned())]
            ))
        );
        assert_eq!(join_pairs("{CUBE}.a > {users}.b", "orders"), None);
        assert_eq!(join_pairs("{CUBE}.a = lower({users}.b)", "orders"), None);
    }
}
