//! `import ossie`: Apache Ossie documents offline, validated against their schema, with
//! datasets as models, relationships as joins and metrics as named measures (docs/spec/importers.md
//! §17.4).

use predicates::str::contains;
use serde_json::Value;

use crate::support::{assert_golden, import, measure_formulas, TempStore};

#[test]
fn the_tpcds_example_imports_offline_with_its_types_joins_and_metrics() {
    let s = TempStore::new();
    for file in [
        "tests/fixtures/ossie/tpcds_semantic_model.yaml",
        "tests/fixtures/ossie/tpcds_semantic_model-0.1.1.yaml",
    ] {
        let (code, records, stderr) = import(&s, &["import", "ossie", file]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.ends_with("read 5 dataset (5 mapped), 31 field (31 mapped), 5 metric (5 mapped), 4 relationship (4 mapped), 1 semantic_model (1 mapped)\n"), "{stderr}");
        assert_eq!(
            records[0]["name"], "tpcds_retail_model",
            "semantic_model.name"
        );
        assert_eq!(
            measure_formulas(&records),
            [
                "store_sales.total_sales = sum(ss_ext_sales_price)",
                "store_sales.total_profit = sum(ss_net_profit)",
                "store_sales.customer_lifetime_value = sum(ss_ext_sales_price) / count_distinct(customer.c_customer_sk)",
                "store_sales.sales_by_brand = sum(ss_ext_sales_price)",
                "store_sales.store_productivity = sum(ss_ext_sales_price) / nullif(sum(store.s_number_employees), 0)",
            ]
        );
        let sales = &records[1];
        assert_eq!(sales["sql_table"], "tpcds.public.store_sales");
        assert!(sales["description"]
            .as_str()
            .unwrap()
            .contains("Synonyms: sales transactions, store purchases, retail sales, POS data."));
    }
}

#[test]
fn a_document_of_every_feature_has_golden_records_and_named_losses() {
    let s = TempStore::new();
    let (code, records, stderr) =
        import(&s, &["import", "ossie", "tests/fixtures/ossie/shop.yaml"]);
    assert_eq!(code, 0, "lossy is not skipped: {stderr}");
    assert!(stderr.contains("warning: shop.yaml:60: field 'orders.weekday' mapped with a loss: no SQL expression (only MAQL); the column reads its name"), "{stderr}");
    assert!(stderr.contains("warning: shop.yaml:126: metric 'ranked' mapped with a loss: the window function RANK(…) OVER (…) has no SLayer form; the SQL is kept as the formula's text, which SLayer cannot run"), "{stderr}");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    assert_golden("ossie-shop.jsonl", &text);
    assert!(measure_formulas(&records)
        .contains(&"orders.big_share = sum(_big_share_0) / sum(order_total)".to_owned()));
    // Another dialect: SNOWFLAKE's expression where there is one, ANSI_SQL's elsewhere.
    let (_, records, _) = import(
        &s,
        &[
            "import",
            "ossie",
            "tests/fixtures/ossie/shop.yaml",
            "--dialect",
            "SNOWFLAKE",
        ],
    );
    let total = records[1]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "order_total")
        .unwrap()
        .clone();
    assert_eq!(total["sql"], "order_total::number(10,2)");
}

#[test]
fn a_synonym_finds_its_field_once_loaded() {
    let s = TempStore::new();
    s.cmd(&[
        "import",
        "ossie",
        "tests/fixtures/ossie/shop.yaml",
        "--load",
    ])
    .assert()
    .success();
    let mut search = crate::kit::command("slayer-search");
    search
        .env("SLAYER_STORE", &s.store)
        .env("SLAYER_MODEL_DIR", "/nonexistent/slayer-models")
        .args(["--question", "basket value", "--channels", "entities,text"]);
    let out = crate::kit::output(search, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    // The column the synonym names, under its model (which a matching column lifts).
    let ids: Vec<&str> = r["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(ids[..2], ["shop.orders", "shop.orders.order_total"], "{r}");
}

#[test]
fn a_document_breaking_its_schema_is_refused_with_the_paths_and_nothing_written() {
    let s = TempStore::new();
    let file = s.dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "version: \"0.2.0.dev0\"\nsemantic_model:\n  - name: m\n    datasets:\n      - name: d\n        fields:\n          - name: f\n            expression:\n              dialects:\n                - dialect: COBOL\n                  expression: x\n        colour: red\n",
    )
    .unwrap();
    s.cmd(&["import", "ossie", file.to_str().unwrap(), "--load"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("does not follow the Ossie 0.2.0.dev0 schema (3 violations):"))
        .stderr(contains("$.semantic_model[0].datasets[0]: missing required 'source'"))
        .stderr(contains("$.semantic_model[0].datasets[0].fields[0].expression.dialects[0].dialect: \"COBOL\" is not one of"))
        .stderr(contains("$.semantic_model[0].datasets[0]: unknown key 'colour'"));
    assert!(!s.store.exists());
    // Not an Ossie document at all.
    s.cmd(&[
        "import",
        "ossie",
        "tests/fixtures/dbt/legacy/dbt_project.yml",
    ])
    .assert()
    .code(2)
    .stderr(contains(
        "not an Ossie document: there is no top-level semantic_model",
    ));
}

#[test]
fn the_bundled_schemas_use_only_keywords_the_validator_checks() {
    for text in [
        include_str!("../../src/import/ossie/osi-schema-0.2.0.dev0.json"),
        include_str!("../../src/import/ossie/osi-schema-0.1.1.json"),
    ] {
        let schema: Value = serde_json::from_str(text).unwrap();
        assert!(slayer_index::import::schema::unknown_keywords(&schema).is_empty());
    }
}

#[test]
fn a_document_without_a_version_or_with_one_bad_dataset_imports_the_rest() {
    let s = TempStore::new();
    // The official example without its version key: read as the newest schema it follows.
    let text = std::fs::read_to_string("../../tests/fixtures/ossie/tpcds_semantic_model.yaml")
        .or_else(|_| std::fs::read_to_string("tests/fixtures/ossie/tpcds_semantic_model.yaml"))
        .unwrap();
    let unversioned: String = text
        .lines()
        .filter(|l| !l.starts_with("version:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let file = s.dir.path().join("tpcds.yaml");
    std::fs::write(&file, unversioned).unwrap();
    let (code, records, stderr) = import(&s, &["import", "ossie", file.to_str().unwrap()]);
    assert!(code <= 1, "{stderr}");
    assert!(
        stderr.contains("document mapped with a loss: it has no version key; read as 0.2.0.dev0, the newest schema it follows"),
        "{stderr}"
    );
    let (_, versioned, _) = import(
        &s,
        &[
            "import",
            "ossie",
            "tests/fixtures/ossie/tpcds_semantic_model.yaml",
        ],
    );
    assert_eq!(records, versioned, "every object maps as with the key");
    // One dataset breaking the schema is left out, named; the others import.
    let file = s.dir.path().join("two.yaml");
    std::fs::write(
        &file,
        "version: \"0.2.0.dev0\"\nsemantic_model:\n  - name: m\n    datasets:\n      - name: good\n        source: db.good\n        fields:\n          - name: id\n            expression:\n              dialects:\n                - dialect: ANSI_SQL\n                  expression: id\n      - name: bad\n        source: db.bad\n        colour: red\n",
    )
    .unwrap();
    let (code, records, stderr) = import(&s, &["import", "ossie", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("dataset 'bad' skipped: it breaks the schema ($.semantic_model[0].datasets[1]: unknown key 'colour'); left out"),
        "{stderr}"
    );
    let models: Vec<&str> = records
        .iter()
        .filter(|r| r["kind"] == "model")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["good"]);
}
