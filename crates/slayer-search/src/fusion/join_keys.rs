//! The key columns that connect two models of one datasource (model-level evidence,
//! docs/spec.md §8.6): what a join between them would use. A declared join's pairs first (either
//! model's joins to the other), then the columns both models have by the same name where that
//! name reads as a key (an `id`, a `key`, a `code`) or is either side's primary key: the
//! convention most schemas join by, where the catalog declares nothing.

use slayer_common::records::Model;
use slayer_memory::resolve::Catalog;

/// The key columns (canonical ids, both sides) connecting models `a` and `b` (`ds.model`).
pub(crate) fn join_keys(catalog: &Catalog, a: &str, b: &str) -> Vec<String> {
    let (Some(ma), Some(mb)) = (model(catalog, a), model(catalog, b)) else {
        return Vec::new();
    };
    let mut keys: Vec<String> = Vec::new();
    let mut push = |id: String| {
        if !keys.contains(&id) {
            keys.push(id);
        }
    };
    let has = |m: &Model, column: &str| m.columns.iter().any(|c| !c.hidden && c.name == column);
    for (from, to, from_id, to_id) in [(ma, mb, a, b), (mb, ma, b, a)] {
        for join in from.joins.iter().filter(|j| j.target_model == to.name) {
            for (x, y) in &join.join_pairs {
                if has(from, x) && has(to, y) {
                    push(format!("{from_id}.{x}"));
                    push(format!("{to_id}.{y}"));
                }
            }
        }
    }
    for column in ma.columns.iter().filter(|c| !c.hidden) {
        let Some(other) = mb
            .columns
            .iter()
            .find(|o| !o.hidden && o.name == column.name)
        else {
            continue;
        };
        if column.primary_key || other.primary_key || reads_as_key(&column.name) {
            push(format!("{a}.{}", column.name));
            push(format!("{b}.{}", column.name));
        }
    }
    keys
}

fn model<'c>(catalog: &'c Catalog, id: &str) -> Option<&'c Model> {
    let (datasource, name) = id.split_once('.')?;
    catalog
        .models
        .iter()
        .find(|m| m.data_source == datasource && m.name == name)
}

/// Whether a column name reads as a key: `id`, or ending in `id`, `key` or `code` once its
/// separators are dropped (`customer_id`, `CustomerID`, `order key`, `country_code`).
fn reads_as_key(name: &str) -> bool {
    let bare: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    ["id", "key", "code"].iter().any(|end| bare.ends_with(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(ds: &str, name: &str, columns: &[&str]) -> Model {
        let columns: Vec<serde_json::Value> = columns
            .iter()
            .map(|c| serde_json::json!({ "name": c }))
            .collect();
        serde_json::from_value(serde_json::json!({
            "name": name, "data_source": ds, "columns": columns
        }))
        .unwrap()
    }

    #[test]
    fn shared_names_that_read_as_keys_connect_two_models() {
        let catalog = Catalog {
            datasources: ["db".to_owned()].into(),
            models: vec![
                model(
                    "db",
                    "orders",
                    &["id", "customer_id", "name", "Country Code"],
                ),
                model("db", "customers", &["customer_id", "name", "Country Code"]),
                model("db", "notes", &["text"]),
            ],
        };
        assert_eq!(
            join_keys(&catalog, "db.orders", "db.customers"),
            [
                "db.orders.customer_id",
                "db.customers.customer_id",
                "db.orders.Country Code",
                "db.customers.Country Code"
            ]
        );
        // Declared pairs first, from either side; a shared primary key; `name` is shared but
        // is no key; nothing is shared with notes; an unknown model.
        let mut joined = catalog.clone();
        joined.models[2] = serde_json::from_value(serde_json::json!({
            "name": "notes", "data_source": "db",
            "columns": [{"name": "text"}, {"name": "order_ref"}, {"name": "serial", "primary_key": true}],
            "joins": [{"target_model": "orders", "join_pairs": [["order_ref", "id"], ["gone", "id"]]}]
        }))
        .unwrap();
        joined.models[0]
            .columns
            .push(serde_json::from_value(serde_json::json!({"name": "serial"})).unwrap());
        assert_eq!(
            join_keys(&joined, "db.orders", "db.notes"),
            [
                "db.notes.order_ref",
                "db.orders.id",
                "db.orders.serial",
                "db.notes.serial"
            ]
        );
        assert!(join_keys(&catalog, "db.orders", "db.notes").is_empty());
        assert!(join_keys(&catalog, "db.orders", "db.nope").is_empty());
        for (name, key) in [
            ("id", true),
            ("CustomerID", true),
            ("order key", true),
            ("cdscode", true),
            ("identity", false),
            ("name", false),
        ] {
            assert_eq!(reads_as_key(name), key, "{name}");
        }
    }
}
