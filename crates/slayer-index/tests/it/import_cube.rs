//! `import cube`: Cube data models in YAML and JavaScript (read with a parser, never run),
//! offline; dynamic JavaScript named, unreadable files refused (docs/spec.md §17.6).

use predicates::str::contains;
use serde_json::Value;

use crate::support::{assert_golden, import, write_files, TempStore};

fn model<'a>(records: &'a [Value], name: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["kind"] == "model" && r["name"] == name)
        .unwrap_or_else(|| panic!("no model {name}"))
}

fn names(m: &Value, key: &str) -> Vec<String> {
    m[key]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| x["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn yaml_and_javascript_models_import_with_golden_records() {
    let s = TempStore::new();
    let (code, records, stderr) = import(
        &s,
        &[
            "import",
            "cube",
            "tests/fixtures/cube",
            "--datasource",
            "shop",
        ],
    );
    assert_eq!(code, 1, "a spread in customers.js is skipped: {stderr}");
    assert!(
        stderr.contains("warning: model/cubes/customers.js:30: JavaScript skipped: cube 'customers'.dimensions: a spread (...) is computed when the model runs; left out"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "measure 'orders.revenue_share' mapped with a loss: its SQL aggregates columns itself"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("cube.js"),
        "the server's configuration is passed over: {stderr}"
    );
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    assert_golden("cube-shop.jsonl", &text);

    let orders = model(&records, "orders");
    // extends: the base cube's members first, then the child's.
    assert_eq!(
        names(orders, "columns")[..3],
        ["id", "created_at", "status"]
    );
    let joins = orders["joins"].as_array().unwrap();
    assert_eq!(
        joins[0]["join_pairs"],
        serde_json::json!([["customer_id", "id"], ["region", "region"]])
    );
    let customers = model(&records, "customers");
    assert_eq!(
        customers["sql_table"], "public.customers",
        "sqlTable read as sql_table"
    );
    assert_eq!(
        names(customers, "measures"),
        ["count", "lifetimeValue"],
        "member names keep their case"
    );
    assert_eq!(
        customers["measures"][1]["formula"], "avg(lifetime_value)",
        "an arrow function's template"
    );
    let sales = model(&records, "sales");
    assert!(names(sales, "columns").contains(&"customers_region".to_owned()));
    assert!(names(sales, "columns").contains(&"shop_city".to_owned()));
    assert!(names(sales, "measures").contains(&"customers_ltv".to_owned()));
}

#[test]
fn the_same_model_in_yaml_and_javascript_gives_the_same_cubes() {
    let s = TempStore::new();
    let (_, yaml, _) = import(
        &s,
        &[
            "import",
            "cube",
            "tests/fixtures/cube-folders/folders.yml",
            "--datasource",
            "d",
        ],
    );
    let (_, js, _) = import(
        &s,
        &[
            "import",
            "cube",
            "tests/fixtures/cube-folders/folders.js",
            "--datasource",
            "d",
        ],
    );
    // test_view3 extends test_view2: its cubes entries are merged by join path (users replaced).
    let v3 = model(&yaml, "test_view3");
    let mut v3_columns = names(v3, "columns");
    v3_columns.sort();
    assert!(
        v3_columns.contains(&"renamed_orders_status".to_owned()),
        "{v3_columns:?}"
    );
    assert!(
        v3_columns.contains(&"users_city".to_owned()),
        "{v3_columns:?}"
    );
    assert!(
        !v3_columns.contains(&"users_age".to_owned()),
        "{v3_columns:?}"
    );
    for name in ["orders", "test_view", "test_view2", "test_view3"] {
        let (a, b) = (model(&yaml, name), model(&js, name));
        let sorted = |m: &Value, k: &str| {
            let mut n = names(m, k);
            n.sort();
            n
        };
        assert_eq!(sorted(a, "columns"), sorted(b, "columns"), "{name}");
        assert_eq!(sorted(a, "measures"), sorted(b, "measures"), "{name}");
    }
}

#[test]
fn unreadable_models_are_refused_and_nothing_is_written() {
    let s = TempStore::new();
    let dir = s.dir.path().join("m");
    let arg = dir.to_str().unwrap();
    let refused = |files: &[(&str, &str)], message: &str| {
        let _ = std::fs::remove_dir_all(&dir);
        write_files(&dir, files);
        s.cmd(&["import", "cube", arg, "--load"])
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(message));
        assert!(!s.store.exists());
    };
    refused(
        &[("a.js", "cube(`a`, { sql: `x` ")],
        "a.js: not JavaScript this importer can parse: ",
    );
    refused(
        &[("a.yml", "cubes:\n  - name: [a\n")],
        "a.yml: invalid YAML: ",
    );
    refused(
        &[
            ("a.yml", "cubes:\n  - name: a\n    sql_table: t\n"),
            ("b.js", "cube(`a`, { sqlTable: `t` });\n"),
        ],
        "b.js: line 1: a second cube or view named 'a' (the first is at a.yml:2); rename one",
    );
    refused(&[("notes.txt", "hello")], "no Cube model here");
}

#[test]
fn a_model_load_would_refuse_is_skipped_and_counted_under_its_own_kind() {
    let s = TempStore::new();
    let file = s.dir.path().join("m.yml");
    std::fs::write(
        &file,
        "cubes:\n  - name: ok\n    sql_table: t\n  - name: bad.name\n    sql_table: u\n",
    )
    .unwrap();
    let report = s.dir.path().join("r.json");
    let (code, records, stderr) = import(
        &s,
        &[
            "import",
            "cube",
            file.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cube 'bad.name' skipped"), "{stderr}");
    assert_eq!(records.iter().filter(|r| r["kind"] == "model").count(), 1);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        report["kinds"]["cube"],
        serde_json::json!({"read": 2, "mapped": 1, "lossy": 0, "skipped": 1})
    );
}
