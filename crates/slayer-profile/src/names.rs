//! The names records give to a source's objects: the one place they are decided.
//!
//! `slayer-index load` refuses a name that fails `check_entity_name` and keeps only one of two
//! models of a datasource with the same name, and two columns of a model with one name make its
//! canonical ids ambiguous. So every name chosen here passes that check and is unique in its
//! namespace (models within the source, columns within their model), whatever the source allows.
//! Objects keep their own name whenever it is loadable and free; the rest are sanitised and, on a
//! collision, suffixed, always in introspection order so the result never depends on timing.
//! The real names stay in `sql_table` and column `sql`, so queries still reach the object.

use std::collections::HashSet;

use slayer_common::canonical::check_entity_name;

use crate::table::{EntityName, TableInfo, TableRef};

/// A name asked for: the object's own, or one derived from it by a documented rule
/// (`_count` → `count_col`, `<schema>_<table>`). Own names that are loadable are served
/// before any other, so a derived name never takes a real object's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The name asked for.
    pub name: String,
    /// Whether it is the object's own name rather than a derived one.
    pub own: bool,
}

/// `raw` made loadable: trimmed, then `.`, `:` and control characters replaced by `_`; `_` when
/// nothing is left.
pub fn sanitize(raw: &str) -> String {
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| {
            if matches!(c, '.' | ':') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

/// Why `name` cannot be used as it is, in words for a warning; `None` when it can.
fn problem(name: &str) -> Option<&'static str> {
    check_entity_name("name", name).err()?;
    Some(if name.trim().is_empty() {
        "the name is blank"
    } else if name.trim() != name {
        "the name has leading or trailing whitespace"
    } else if name.chars().any(char::is_control) {
        "the name contains a control character"
    } else {
        "the name contains '.' or ':'"
    })
}

/// One unique, loadable name per wanted name, in the same order.
///
/// Loadable own names are taken first, in order (a repeated one only once); then every other
/// name, in order, is sanitised and, if that is taken, suffixed `_2`, `_3`… until free.
pub fn assign(wanted: &[Wanted]) -> Vec<EntityName> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut out: Vec<Option<EntityName>> = wanted
        .iter()
        .map(|w| {
            (w.own && problem(&w.name).is_none() && taken.insert(w.name.clone()))
                .then(|| EntityName::own(&w.name))
        })
        .collect();
    for (slot, w) in out.iter_mut().zip(wanted) {
        if slot.is_some() {
            continue;
        }
        let mut reasons: Vec<String> = problem(&w.name).map(str::to_owned).into_iter().collect();
        let base = sanitize(&w.name);
        let mut name = base.clone();
        let mut n = 1;
        while taken.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        if name != base {
            reasons.push(format!("{base:?} is taken"));
        }
        taken.insert(name.clone());
        *slot = Some(EntityName {
            renamed: (!reasons.is_empty()).then(|| reasons.join("; ")),
            name,
        });
    }
    out.into_iter().flatten().collect()
}

/// Names every model and column of a source, in place (see the module notes). All tables
/// count, whatever is selected later, so a table's model name does not depend on the flags.
pub fn assign_names(tables: &mut [TableInfo]) {
    let mut per_name: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for t in tables.iter() {
        *per_name.entry(t.name.as_str()).or_default() += 1;
    }
    // Same-named tables of several schemas: those outside the default one are `<schema>_<name>`.
    let wanted: Vec<Wanted> = tables
        .iter()
        .map(|t| match &t.table_ref {
            TableRef::Table {
                schema: Some(s), ..
            } if per_name[t.name.as_str()] > 1 => Wanted {
                name: format!("{s}_{}", t.name),
                own: false,
            },
            _ => Wanted {
                name: t.name.clone(),
                own: true,
            },
        })
        .collect();
    let models = assign(&wanted);
    for (t, model) in tables.iter_mut().zip(models) {
        t.model = model;
        // SLayer reserves `_count`, so the original profiler calls such a column `count_col`;
        // as a derived name it yields to a real `count_col`.
        let wanted: Vec<Wanted> = t
            .columns
            .iter()
            .map(|c| match c.name.as_str() {
                "_count" => Wanted {
                    name: "count_col".to_owned(),
                    own: false,
                },
                name => Wanted {
                    name: name.to_owned(),
                    own: true,
                },
            })
            .collect();
        for (c, leaf) in t.columns.iter_mut().zip(assign(&wanted)) {
            c.leaf = leaf;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(names: &[&str]) -> Vec<Wanted> {
        names
            .iter()
            .map(|n| Wanted {
                name: (*n).to_owned(),
                own: true,
            })
            .collect()
    }

    fn names(assigned: &[EntityName]) -> Vec<&str> {
        assigned.iter().map(|a| a.name.as_str()).collect()
    }

    #[test]
    fn sanitised_names_always_load() {
        for raw in [
            "a.b",
            " padded ",
            "\n",
            "",
            " \0 x",
            "a:b\tc",
            "x\u{7f}",
            "\u{2003}em\u{2003}",
            "..",
        ] {
            let name = sanitize(raw);
            assert_eq!(check_entity_name("n", &name), Ok(()), "{raw:?} -> {name:?}");
        }
        assert_eq!(sanitize(" padded "), "padded");
        assert_eq!(sanitize("a.b:c"), "a_b_c");
        assert_eq!(sanitize("line\nbreak\n"), "line_break");
        assert_eq!(sanitize("charter school (y/n)"), "charter school (y/n)");
    }

    #[test]
    fn valid_names_keep_theirs_and_the_others_get_suffixes_in_order() {
        let got = assign(&own(&["a.b", "a/b", "a_b", "a:b", " a_b", "a_b_2"]));
        assert_eq!(
            names(&got),
            ["a_b_3", "a/b", "a_b", "a_b_4", "a_b_5", "a_b_2"]
        );
        assert_eq!(got[1].renamed, None);
        assert_eq!(
            got[0].renamed.as_deref(),
            Some("the name contains '.' or ':'; \"a_b\" is taken")
        );
        assert_eq!(
            got[4].renamed.as_deref(),
            Some("the name has leading or trailing whitespace; \"a_b\" is taken")
        );
    }

    #[test]
    fn a_derived_name_yields_to_a_real_one() {
        let wanted = [
            Wanted {
                name: "count_col".into(),
                own: false,
            },
            Wanted {
                name: "count_col".into(),
                own: true,
            },
        ];
        let got = assign(&wanted);
        assert_eq!(names(&got), ["count_col_2", "count_col"]);
        assert_eq!(got[0].renamed.as_deref(), Some("\"count_col\" is taken"));
        let alone = assign(&wanted[..1]);
        assert_eq!(alone[0], EntityName::own("count_col"));
    }

    #[test]
    fn a_repeated_own_name_is_kept_once() {
        let got = assign(&own(&["x", "x"]));
        assert_eq!(names(&got), ["x", "x_2"]);
    }
}
