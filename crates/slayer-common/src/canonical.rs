//! Canonical entity ids and the rules that relate them.
//!
//! Every entity has exactly one canonical id: `<ds>`, `<ds>.<model>` or `<ds>.<model>.<leaf>`;
//! memories are `memory:<id>`. Names never contain `.` or `:`, so a dotted prefix is unambiguous
//! and "rooted at" is a namespace relation, never a character-prefix one.

/// The prefix that marks a canonical reference to a memory.
pub const MEMORY_PREFIX: &str = "memory:";

/// The canonical id of a memory.
pub fn memory_ref(id: &str) -> String {
    format!("{MEMORY_PREFIX}{id}")
}

/// The memory id inside a `memory:<id>` reference, if it is one.
pub fn memory_id_of(canonical: &str) -> Option<&str> {
    canonical.strip_prefix(MEMORY_PREFIX)
}

/// Whether `canonical` names `root` itself or a strict dotted descendant of it.
///
/// `memory:` ids are never descendants of anything and `memory:4` is not under `memory:42`'s root:
/// a memory target matches only itself.
pub fn is_under(canonical: &str, root: &str) -> bool {
    if root.is_empty() {
        return false;
    }
    if memory_id_of(root).is_some() || memory_id_of(canonical).is_some() {
        return canonical == root;
    }
    canonical == root
        || (canonical.len() > root.len()
            && canonical.starts_with(root)
            && canonical.as_bytes()[root.len()] == b'.')
}

/// Whether `canonical` belongs to `datasource` (equal or strict dotted descendant).
///
/// `prod_v2.orders` is not rooted at `prod`; `memory:` ids are rooted at no datasource, even one
/// literally named `memory`.
pub fn rooted_at(canonical: &str, datasource: &str) -> bool {
    !datasource.is_empty() && memory_id_of(canonical).is_none() && is_under(canonical, datasource)
}

/// The datasource segment of an entity id, or `None` for a memory reference.
pub fn datasource_of(canonical: &str) -> Option<&str> {
    if memory_id_of(canonical).is_some() {
        return None;
    }
    canonical.split('.').next().filter(|s| !s.is_empty())
}

/// The model of a leaf id `<ds>.<model>.<leaf>` (names hold no `.`, docs/spec/records.md §1.2).
pub fn model_of(leaf: &str) -> Option<&str> {
    let mut dots = leaf.match_indices('.').map(|(at, _)| at);
    let (_, second) = (dots.next()?, dots.next()?);
    Some(&leaf[..second])
}

/// Builds `<ds>.<model>`.
pub fn model_id(datasource: &str, model: &str) -> String {
    format!("{datasource}.{model}")
}

/// Builds `<ds>.<model>.<leaf>`.
pub fn leaf_id(datasource: &str, model: &str, leaf: &str) -> String {
    format!("{datasource}.{model}.{leaf}")
}

/// Why a memory id or an entity name is refused: the Python original's messages where it has
/// them, every one naming the id or name (escaped) and, for a name, what it is (`what`:
/// "field 'name'", "model name").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// An empty memory id.
    #[error("memory id must be non-empty.")]
    EmptyMemoryId,
    /// A memory id holding one of `: / ? # \`.
    #[error("memory id '{id}': forbidden character '{character}'.")]
    MemoryIdCharacter {
        /// The id.
        id: String,
        /// The character.
        character: char,
    },
    /// A memory id holding whitespace or an ASCII control character.
    #[error("memory id '{id}': whitespace and ASCII control characters are not allowed.")]
    MemoryIdSpace {
        /// The id.
        id: String,
    },
    /// An empty or blank name.
    #[error("{what} must be a non-empty string")]
    EmptyName {
        /// What the name is.
        what: String,
    },
    /// A name with leading or trailing whitespace.
    #[error("{what} '{shown}' has leading or trailing whitespace; trim it")]
    Untrimmed {
        /// What the name is.
        what: String,
        /// The name, escaped.
        shown: String,
    },
    /// A name holding a control character.
    #[error("{what} '{shown}' contains the control character U+{code:04X}, which is not allowed in names; rename it")]
    Control {
        /// What the name is.
        what: String,
        /// The name, escaped.
        shown: String,
        /// The character's code point.
        code: u32,
    },
    /// A name holding a `.` or a `:`.
    #[error("{what} '{shown}' contains '{character}', which {why}; rename it")]
    Separator {
        /// What the name is.
        what: String,
        /// The name, escaped.
        shown: String,
        /// The character.
        character: char,
        /// What the character means in an id.
        why: &'static str,
    },
}

/// Checks a memory id against the charset rules of the Python original.
pub fn check_memory_id(id: &str) -> Result<(), NameError> {
    if id.is_empty() {
        return Err(NameError::EmptyMemoryId);
    }
    for c in id.chars() {
        if matches!(c, ':' | '/' | '?' | '#' | '\\') {
            return Err(NameError::MemoryIdCharacter {
                id: id.to_owned(),
                character: c,
            });
        }
        if is_python_space(c) || (c as u32) < 0x20 || c as u32 == 0x7F {
            return Err(NameError::MemoryIdSpace { id: id.to_owned() });
        }
    }
    Ok(())
}

/// Python's `str.isspace()`: Unicode White_Space plus the ASCII separators U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Checks a datasource, model or leaf name; `what` names it in the message ("model name").
///
/// Dots and colons would make canonical ids ambiguous, and control characters (a newline, NUL)
/// would inject lines into rendered docs, so those are refused; everything else a real database
/// allows (`charter school (y/n)`, `a\\b`, quotes, any script) is a name.
pub fn check_entity_name(what: &str, name: &str) -> Result<(), NameError> {
    if name.trim().is_empty() {
        return Err(NameError::EmptyName {
            what: what.to_owned(),
        });
    }
    // Messages show the name escaped: a raw newline would break the `line N:` message itself.
    let shown = || name.escape_debug().to_string();
    if name.trim() != name {
        return Err(NameError::Untrimmed {
            what: what.to_owned(),
            shown: shown(),
        });
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(NameError::Control {
            what: what.to_owned(),
            shown: shown(),
            code: c as u32,
        });
    }
    for (c, why) in [
        ('.', "separates canonical id segments"),
        (':', "marks memory references"),
    ] {
        if name.contains(c) {
            return Err(NameError::Separator {
                what: what.to_owned(),
                shown: shown(),
                character: c,
                why,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooting_is_a_namespace_relation_not_a_character_prefix() {
        assert!(rooted_at("prod", "prod"));
        assert!(rooted_at("prod.orders", "prod"));
        assert!(rooted_at("prod.orders.amount", "prod"));
        assert!(!rooted_at("prod_v2", "prod"));
        assert!(!rooted_at("prod123.orders", "prod"));
        assert!(!rooted_at("pro", "prod"));
        assert!(!rooted_at("prod.orders", ""));
        assert!(!rooted_at("memory:4", "memory"));
        assert!(!rooted_at("memory:prod", "prod"));
    }

    #[test]
    fn memory_targets_match_only_themselves() {
        assert!(is_under("memory:42", "memory:42"));
        assert!(!is_under("memory:421", "memory:42"));
        assert!(!is_under("memory:42.y", "memory:42"));
        assert!(is_under("db.orders.amount", "db.orders"));
        assert!(!is_under("db.orders_archive", "db.orders"));
        assert!(!is_under("db.orders", "db.orders.amount"));
    }

    #[test]
    fn memory_id_messages_match_the_original() {
        assert_eq!(check_memory_id("kb.policy.42"), Ok(()));
        assert_eq!(
            check_memory_id("a:b").unwrap_err().to_string(),
            "memory id 'a:b': forbidden character ':'."
        );
        assert_eq!(
            check_memory_id("a b").unwrap_err().to_string(),
            "memory id 'a b': whitespace and ASCII control characters are not allowed."
        );
        assert_eq!(
            check_memory_id("a\u{7f}").unwrap_err().to_string(),
            "memory id 'a\u{7f}': whitespace and ASCII control characters are not allowed."
        );
        assert_eq!(
            check_memory_id("").unwrap_err().to_string(),
            "memory id must be non-empty."
        );
    }

    #[test]
    fn entity_names_refuse_separators() {
        assert!(check_entity_name("model name", "orders").is_ok());
        assert!(check_entity_name("model name", "a.b")
            .unwrap_err()
            .to_string()
            .contains("'.'"));
        assert!(check_entity_name("model name", "a:b")
            .unwrap_err()
            .to_string()
            .contains("':'"));
        assert!(check_entity_name("model name", " ").is_err());
    }

    #[test]
    fn entity_names_accept_what_real_databases_allow_but_no_control_characters() {
        for name in [
            "charter school (y/n)",
            "a/b",
            "a\\b",
            "o'brien",
            "\"q\"",
            "straße",
            "1abc",
            "日付",
        ] {
            assert_eq!(check_entity_name("column name", name), Ok(()), "{name}");
        }
        let e = check_entity_name("column name", "a\nb")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "column name 'a\\nb' contains the control character U+000A, which is not allowed in names; rename it"
        );
        assert!(check_entity_name("column name", "a\0b")
            .unwrap_err()
            .to_string()
            .contains("U+0000"));
        assert!(check_entity_name("column name", "a\u{7f}")
            .unwrap_err()
            .to_string()
            .contains("U+007F"));
    }
}
