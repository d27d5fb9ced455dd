//! The resolution table of docs/spec/resolution.md §3.10, through the real binary, every message.

use crate::support::TempStore;

fn ok(ids: &[&str]) -> Want {
    Ok((ids.iter().map(|s| s.to_string()).collect(), vec![]))
}

fn err(message: &str) -> Want {
    Err(message.to_owned())
}

type Want = Result<(Vec<String>, Vec<String>), String>;

/// Resolves every input of `table` and reports all mismatches at once.
fn assert_table(s: &TempStore, table: &[(&str, Want)]) {
    let mut failures = Vec::new();
    for (input, want) in table {
        let got = s.resolve(input);
        if &got != want {
            failures.push(format!("{input:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_resolution_table() {
    let s = TempStore::with_catalog();
    let table = [
        ("shop", ok(&["shop"])),
        ("shop.orders", ok(&["shop.orders"])),
        ("  shop.orders.amount  ", ok(&["shop.orders.amount"])),
        ("orders", ok(&["shop.orders"])),
        ("amount", ok(&["shop.orders.amount"])),
        ("revenue:sum", ok(&["shop.orders.revenue"])),
        ("weighted_avg", ok(&["shop.orders.weighted_avg"])),
        ("orders.amount:weighted_avg(weight=quantity)", ok(&["shop.orders.amount"])),
        ("sum(amount)", ok(&["shop.orders.amount"])),
        ("avg(amount, weight=quantity)", ok(&["shop.orders.amount"])),
        ("percentile(amount, p=0.9)", ok(&["shop.orders.amount"])),
        ("foo(amount)", ok(&["shop.orders.amount"])),
        ("count(orders.*)", ok(&["shop.orders"])),
        ("orders.customers.regions.name", ok(&["shop.regions.name"])),
        ("customers.orders", ok(&["shop.orders"])),
        ("orders.customers", ok(&["shop.customers"])),
        ("ORDERS", err("Entity 'ORDERS' not found in any datasource (checked all known datasources).")),
        (
            "sum(amount - quantity)",
            err("'sum(amount - quantity)' is not a single aggregated column reference; only the `agg(column)` form names an entity."),
        ),
        (
            "count(*)",
            err("'count(*)' requires a model context: write 'count(<model>.*)' or invoke from a query that has a source_model."),
        ),
        (
            "*:count",
            err("'count(*)' requires a model context: write 'count(<model>.*)' or invoke from a query that has a source_model."),
        ),
        ("*:sum", err("'*:sum' is not a valid entity reference; use 'count(*)' to refer to a model's row count.")),
        ("orders.*:sum", err("'orders.*:sum' is not a valid entity reference; use the 'count(<model>.*)' form.")),
        // Any name `slayer-index load` accepts is a segment (the original allowed only
        // `[a-zA-Z_][\w-]*`); an empty one is still invalid.
        ("1abc", err("Entity '1abc' not found in any datasource (checked all known datasources).")),
        ("orders..amount", err("'orders..amount' contains an invalid identifier segment.")),
        ("shop.nope", err("No model 'nope' in datasource 'shop'.")),
        (
            "name",
            err("Ambiguous bare name 'name' matches columns / measures / aggregations on ['customers', 'regions'] in datasource 'shop'. Qualify as '<model>.name'."),
        ),
        ("zzz", err("Entity 'zzz' not found in any datasource (checked all known datasources).")),
        (
            "stock",
            err("Model 'stock' exists in multiple datasources: ['shop', 'warehouse']. Specify a data_source or set a datasource priority to disambiguate."),
        ),
        ("orders.amount.x", err("'amount' is not a join target on model 'orders'.")),
        (
            "orders.customers.orders",
            err("Circular join detected resolving 'orders.customers.orders' from 'orders': hop 'orders' revisits model 'orders'."),
        ),
        ("nope.amount", err("'nope' is neither a known datasource nor a saved model. (segment of 'nope.amount').")),
        ("memory:999", err("No memory with id '999'.")),
        ("memory:a b", err("memory id 'a b': whitespace and ASCII control characters are not allowed.")),
        ("memory:a/b", err("memory id 'a/b': forbidden character '/'.")),
    ];
    assert_table(&s, &table);
}

#[test]
fn warnings_for_names_that_mean_two_things() {
    let s = TempStore::with_catalog();
    assert_eq!(
        s.resolve("events"),
        Ok((
            vec!["events".to_owned()],
            vec!["'events' is both a datasource and a model; interpreted as datasource. To force the model interpretation, qualify as <other_ds>.events...".to_owned()]
        ))
    );
    assert_eq!(
        s.resolve("regions"),
        Ok((
            vec!["shop.regions".to_owned()],
            vec!["'regions' is both a model and a column on ['customers']; resolved as the model. Qualify as <model>.regions to refer to the column.".to_owned()]
        ))
    );
    assert_eq!(
        s.resolve("events.clicks.ts").unwrap().0,
        ["events.clicks.ts"],
        "the datasource reading wins, with the same warning"
    );
    // Duplicates collapse; memory refs round-trip as given.
    let first = s.resolve("orders").unwrap();
    assert_eq!(first.0, ["shop.orders"]);
    assert_eq!(
        s.resolve("orders, shop.orders, count(orders.*), memory:1")
            .unwrap()
            .0,
        ["shop.orders", "memory:1"]
    );
}

#[test]
fn a_query_yields_its_entities_in_first_seen_order() {
    let s = TempStore::with_catalog();
    let query = r#"{"source_model":"orders","dimensions":[{"name":"customers.region_id"}],"measures":[{"formula":"sum(amount) / count(*)"},{"formula":"cumsum(sum(quantity))"}],"filters":["status = 'paid' and amount > {min_amt}","coalesce(quantity, 0) > 1"]}"#;
    let out = s.memory(
        &[
            "save",
            "--learning",
            "Paid revenue",
            "--query",
            query,
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json()["resolved_entities"],
        serde_json::json!([
            "shop.orders",
            "shop.customers.region_id",
            "shop.orders.amount",
            "shop.orders.quantity",
            "shop.orders.status"
        ])
    );
    let out = s.memory(
        &[
            "save",
            "--learning",
            "x",
            "--query",
            r#"{"source_model":"nope"}"#,
        ],
        None,
    );
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, "Error: Source model not found: 'nope'.\n");
    let out = s.memory(
        &["save", "--learning", "x", "--query", r#"{"dimensions":[]}"#],
        None,
    );
    assert_eq!(
        out.stderr,
        "Error: Could not derive a model name from query.source_model.\n"
    );
    let out = s.memory(
        &[
            "save",
            "--learning",
            "x",
            "--query",
            r#"{"source_model":"orders","filters":["bogus_col > 1"]}"#,
        ],
        None,
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("Entity 'bogus_col' not found"),
        "{}",
        out.stderr
    );
    // Nothing was saved by the failures.
    assert_eq!(s.memory(&["export"], None).lines().len(), 1);
}

/// A catalog of real-world names and named joins (issue 12: both were unreachable).
const REAL_WORLD: &str = r#"{"kind":"datasource","name":"w"}
{"kind":"model","name":"schools","data_source":"w","columns":[{"name":"id"},{"name":"charter school (y/n)"},{"name":"o'brien"},{"name":"straße"},{"name":"a/b"},{"name":"say \"hi\""},{"name":"sum(amount - quantity)"}],"joins":[{"target_model":"districts","name":"district","join_pairs":[["did","id"]]},{"target_model":"districts","name":"home_district","join_pairs":[["hid","id"]]}]}
{"kind":"model","name":"districts","data_source":"w","columns":[{"name":"id"},{"name":"label"}]}
{"kind":"model","name":"people","data_source":"w","columns":[{"name":"id"}],"joins":[{"target_model":"managers","name":"boss","join_pairs":[["mid","id"]]}]}
{"kind":"model","name":"managers","data_source":"w","columns":[{"name":"label"}]}
{"kind":"model","name":"teams","data_source":"w","columns":[{"name":"label"}],"joins":[{"target_model":"people","name":"boss","join_pairs":[["lead","id"]]}]}
"#;

#[test]
fn real_world_names_resolve_as_load_accepts_them() {
    let s = TempStore::new();
    let out = s.index(&["load", "-"], Some(REAL_WORLD));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table = [
        ("schools.charter school (y/n)", ok(&["w.schools.charter school (y/n)"])),
        ("w.schools.charter school (y/n)", ok(&["w.schools.charter school (y/n)"])),
        ("charter school (y/n)", ok(&["w.schools.charter school (y/n)"])),
        ("schools.charter school (y/n):count", ok(&["w.schools.charter school (y/n)"])),
        ("o'brien", ok(&["w.schools.o'brien"])),
        ("schools.straße", ok(&["w.schools.straße"])),
        ("a/b", ok(&["w.schools.a/b"])),
        ("schools.say \"hi\"", ok(&["w.schools.say \"hi\""])),
        // An expression unless a column is literally named so.
        ("sum(amount - quantity)", ok(&["w.schools.sum(amount - quantity)"])),
        ("sum(label - id)", err("'sum(label - id)' is not a single aggregated column reference; only the `agg(column)` form names an entity.")),
    ];
    assert_table(&s, &table);
    // Several at once: commas split at the top level, quotes inside names do not hold them.
    assert_eq!(
        s.resolve("o'brien, straße").unwrap().0,
        ["w.schools.o'brien", "w.schools.straße"]
    );
}

#[test]
fn a_join_is_hopped_by_its_name_and_an_ambiguous_hop_is_an_error() {
    let s = TempStore::new();
    let out = s.index(&["load", "-"], Some(REAL_WORLD));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        s.resolve("schools.district.label"),
        ok(&["w.districts.label"])
    );
    assert_eq!(
        s.resolve("schools.home_district.label"),
        ok(&["w.districts.label"])
    );
    assert_eq!(
        s.resolve("schools.districts.label"),
        ok(&["w.districts.label"])
    );
    assert_eq!(
        s.resolve("people.boss.label"),
        err("Ambiguous join path resolving 'people.boss.label' from 'people': hop 'boss' matches joins to ['managers', 'teams'] on model 'people'.")
    );
}

#[test]
fn a_query_source_model_is_looked_up_as_a_model() {
    let s = TempStore::with_catalog();
    // `events` is also a datasource: as a source model it is still shop's model `events` (it
    // once went through the general resolver, found the datasource and said "not found").
    let out = s.memory(
        &[
            "save",
            "--learning",
            "x",
            "--query",
            r#"{"source_model":"events","dimensions":[{"name":"kind"}]}"#,
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json()["resolved_entities"],
        serde_json::json!(["shop.events", "shop.events.kind"])
    );
    // A name two datasources share is ambiguous, and the message says so.
    let out = s.memory(
        &[
            "save",
            "--learning",
            "x",
            "--query",
            r#"{"source_model":"stock","dimensions":[{"name":"sku"}]}"#,
        ],
        None,
    );
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Error: Model 'stock' exists in multiple datasources: ['shop', 'warehouse']. Specify a data_source or set a datasource priority to disambiguate.\n"
    );
}
