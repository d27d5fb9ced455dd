//! `import cube`: Cube data models in YAML and JavaScript (read with a parser, never run),
//! offline; dynamic JavaScript named, unreadable files refused (docs/spec/importers.md §17.6).

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
    refused(&[("notes.txt", "hello")], "no Cube model here");
    // A second cube of a name is skipped; the first is kept.
    let _ = std::fs::remove_dir_all(&dir);
    write_files(
        &dir,
        &[
            ("a.yml", "cubes:\n  - name: a\n    sql_table: t\n"),
            ("b.js", "cube(`a`, { sqlTable: `u` });\n"),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "cube", arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("b.js:1: cube 'a' skipped: a second cube or view named 'a' (the first, at a.yml:2, is kept); rename one"),
        "{stderr}"
    );
    assert_eq!(model(&records, "a")["sql_table"], "t");
}

#[test]
fn a_project_with_bad_parts_imports_the_rest_and_names_each_loss() {
    let s = TempStore::new();
    let report = s.dir.path().join("report.json");
    let (code, records, stderr) = import(
        &s,
        &[
            "import",
            "cube",
            "tests/fixtures/cube-partial",
            "--datasource",
            "shop",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    let warned = |text: &str| assert!(stderr.contains(text), "missing {text:?} in:\n{stderr}");
    // A file that is not YAML is skipped; the rest imports.
    warned("warning: model/broken.yml:0: file 'model/broken.yml' skipped: invalid YAML");
    // Jinja: a member whose name the template makes is skipped, other values kept and named.
    warned(
        "model/templated.yml:16: measure 'events.{{ k }}_count' skipped: its name is made by Jinja",
    );
    warned("cube 'events' mapped with a loss: its sql_table holds Jinja, which Cube renders at compile time; kept as written");
    warned("cube 'events' mapped with a loss: a Jinja block ('{%- for k in ['click', 'view'] %}', line 15)");
    // Visibility Cube decides at query time is never silently public.
    warned("view 'customers_admin' mapped with a loss: its public flag ('{{ COMPILE_CONTEXT.role == 'admin' }}') is decided by Cube at query time");
    assert_eq!(model(&records, "customers_admin")["hidden"], true);
    // The access policy is kept, described and applied to what every role is denied.
    let view = model(&records, "customer_orders");
    assert_eq!(view["meta"]["access_policy"][0]["role"], "*");
    assert!(
        view["description"]
            .as_str()
            .unwrap()
            .ends_with("Access policy: role '*': members hidden: email; rows where country equals { securityContext.country }."),
        "{view}"
    );
    let email = view["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "email")
        .unwrap();
    assert_eq!(email["hidden"], true);
    warned("access policy 'customer_orders' #1 (role '*') mapped with a loss: its row-level filter depends on the security context");
    // A view measure reading a member the view excludes.
    warned("measure 'customer_orders.ssn_count' mapped with a loss: its sql reads 'orders.customers.ssn', which the view excludes");
    // JavaScript: a constant is read as its value, a variable named; asyncModule read as written.
    assert_eq!(model(&records, "payments")["sql_table"], "billing.payments");
    warned("model/payments.js:9: JavaScript skipped: cube 'payments'.dimensions.method.sql: 'schemaFromEnv' is a JavaScript value known only when the model runs; left out");
    assert_eq!(model(&records, "refunds")["sql_table"], "shop.refunds");
    warned("model/dynamic.js:6: cube 'refunds' mapped with a loss: declared inside code that runs");
    warned("model/dynamic.js:17: JavaScript skipped: cube() inside code that runs whose name is not a literal");
    // References: a number measure over a raw column, a filter on a cube that is not joined.
    warned("measure 'orders.last_amount' mapped with a loss: its formula 'amount' reads column 'amount' outside any aggregation");
    warned("cube 'orders' mapped with a loss: the filter of column 'promo_revenue_filtered' ('promotions.code IS NOT NULL') names 'promotions.code', but model 'orders' has no join to 'promotions'");
    // Every join a view copies from its root pairs columns the view has.
    assert!(!stderr.contains("pairs 'customer_id'"), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["kinds"]["file"]["skipped"], 1);
    assert_eq!(report["kinds"]["access_policy"]["read"], 1);
    assert_eq!(report["kinds"]["measure"]["skipped"], 1);
    assert_eq!(
        report["issues"].as_array().unwrap().len(),
        stderr.matches("warning: ").count()
    );
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

#[test]
fn what_the_public_projects_census_found_reads_right() {
    let s = TempStore::new();
    let dir = s.dir.path().join("m");
    write_files(
        &dir,
        &[
            // A `(CUBE) =>` parameter elsewhere in the file does not make ${CUBE} a variable.
            (
                "orders.js",
                "const shared = { filters: [{ sql: (CUBE) => `${CUBE}.x > 0` }] };\ncube(`orders`, {\n  sql_table: `t.orders`,\n  joins: { users: { sql: `${CUBE}.\"USER_ID\" = ${users}.id`, relationship: `belongsTo` } },\n  dimensions: { id: { sql: `id`, type: `number`, primaryKey: true }, user_key: { sql: `\"USER_ID\"`, type: `number` } },\n  measures: { count: { type: `count` } },\n});\n",
            ),
            (
                "users.yml",
                "cubes:\n  - name: users\n    sql_table: t.users\n    dimensions:\n      - name: id\n        sql: id\n        type: number\n        primary_key: true\nviews:\n  - name: user_orders\n    cubes:\n      - join_path: orders\n        includes: \"*\"\n      - join_path: orders.users\n        includes: \"*\"\n        prefix: true\n",
            ),
            // A template writing the cube: its members are named with it.
            (
                "events.yml.jinja",
                "{% set model = dbt_model('events') %}\ncubes:\n  - {{ model.as_cube() }}\n    measures:\n      - name: count\n        type: count\n",
            ),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "cube", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("'CUBE' is a JavaScript value"), "{stderr}");
    let orders = model(&records, "orders");
    // The quoted key is read, and the pair names the column reading it.
    assert_eq!(
        orders["joins"][0]["join_pairs"][0][0], "user_key",
        "{orders}"
    );
    assert!(!stderr.contains("join 'orders.users' skipped"), "{stderr}");
    // A view relays count(*) through the join without a false warning.
    assert!(!stderr.contains("user_orders"), "{stderr}");
    assert!(
        stderr.contains(
            "events.yml.jinja:3: measure 'count' of cube #1 ('{{ model.as_cube() }}') skipped"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("cube #1 ('{{ model.as_cube() }}') skipped: its name is made by Jinja"),
        "{stderr}"
    );
}

#[test]
fn sql_held_in_constants_of_another_file_is_read_and_globals_named() {
    let s = TempStore::new();
    let dir = s.dir.path().join("m");
    write_files(
        &dir,
        &[
            (
                "sql.js",
                "const base = `SELECT * FROM ${SCHEMA}.moves`;\nconst movements = `SELECT m.* FROM (${base}) m`;\naddExport({ movements });\n",
            ),
            (
                "moves.js",
                "const movements = require('./sql').movements;\ncube(`moves`, {\n  sql: movements,\n  measures: { count: { type: `count` } },\n});\n",
            ),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "cube", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        model(&records, "moves")["sql"],
        "SELECT m.* FROM (SELECT * FROM ${SCHEMA}.moves) m"
    );
    assert!(
        stderr.contains("moves.js:3: JavaScript mapped with a loss: cube 'moves'.sql: constant 'movements' holds ${SCHEMA}, known only when the model runs; kept as written"),
        "{stderr}"
    );
}
