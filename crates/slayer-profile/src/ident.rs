//! SQL quoting. Every table, schema and column name reaches SQL through these functions.

/// `"name"` with inner quotes doubled: safe for any identifier in DuckDB and SQLite.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with inner quotes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Words that need quoting even though they look like plain identifiers.
const RESERVED: &[&str] = &[
    "all",
    "and",
    "as",
    "asc",
    "between",
    "by",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "cross",
    "default",
    "desc",
    "distinct",
    "else",
    "end",
    "except",
    "exists",
    "false",
    "from",
    "full",
    "group",
    "having",
    "in",
    "inner",
    "intersect",
    "into",
    "is",
    "join",
    "left",
    "like",
    "limit",
    "natural",
    "not",
    "null",
    "offset",
    "on",
    "or",
    "order",
    "outer",
    "primary",
    "references",
    "right",
    "select",
    "table",
    "then",
    "to",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "when",
    "where",
    "with",
];

/// The identifier as a person would write it: bare when that is unambiguous (lowercase letters,
/// digits and `_`, not starting with a digit, not a keyword), quoted otherwise.
pub fn display_ident(name: &str) -> String {
    display_ident_as(name, Quoting::Double)
}

/// How a source's own SQL quotes a name that needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quoting {
    /// `"name"`: standard SQL, DuckDB, SQLite, PostgreSQL.
    #[default]
    Double,
    /// `` `name` ``: MySQL and MariaDB (whose default `sql_mode` reads `"…"` as a string).
    Backtick,
}

/// `name` as [`display_ident`] writes it, quoted the source's way when it needs quoting.
pub fn display_ident_as(name: &str, quoting: Quoting) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED.contains(&name);
    match (plain, quoting) {
        (true, _) => name.to_owned(),
        (false, Quoting::Double) => quote_ident(name),
        (false, Quoting::Backtick) => format!("`{}`", name.replace('`', "``")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mysql_source_quotes_with_backticks() {
        assert_eq!(display_ident_as("orders", Quoting::Backtick), "orders");
        assert_eq!(display_ident_as("Order", Quoting::Backtick), "`Order`");
        assert_eq!(display_ident_as("a`b", Quoting::Backtick), "`a``b`");
        assert_eq!(display_ident_as("Order", Quoting::Double), "\"Order\"");
    }

    #[test]
    fn hostile_names_are_quoted() {
        assert_eq!(quote_ident(r#"we"ird"#), r#""we""ird""#);
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(display_ident("orders"), "orders");
        assert_eq!(display_ident("Orders"), "\"Orders\"");
        assert_eq!(display_ident("order"), "\"order\"");
        assert_eq!(display_ident("two words"), "\"two words\"");
        assert_eq!(display_ident("1st"), "\"1st\"");
    }
}
