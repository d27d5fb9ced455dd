//! `import dbt`: dbt projects in both semantic-layer specs, offline, as catalog records; every
//! skip and loss named; unreadable projects refused with nothing written (docs/spec/importers.md
//! §17).

use std::path::Path;

use predicates::str::contains;
use serde_json::Value;

use crate::support::{assert_golden, import, measure_formulas, write_files, TempStore};

/// `model.measure = formula` for every measure, sorted: what the golden files hold besides the
/// records themselves.
fn measures(records: &[Value]) -> Vec<String> {
    let mut out = measure_formulas(records);
    out.sort();
    out
}

#[test]
fn both_specs_of_one_project_import_whole_with_golden_records() {
    let s = TempStore::new();
    for spec in ["legacy", "latest"] {
        let (code, records, stderr) = import(
            &s,
            &["import", "dbt", &format!("tests/fixtures/dbt/{spec}")],
        );
        assert_eq!(code, 0, "{spec}: {stderr}");
        assert!(!stderr.contains("warning"), "{spec}: {stderr}");
        assert_eq!(records[0]["kind"], "datasource");
        assert_eq!(records[0]["name"], "shop", "the project's name");
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        assert_golden(&format!("dbt-{spec}.jsonl"), &text);
    }
    // The same semantic layer either way: the latest spec's metrics are measures too.
    let (_, legacy, _) = import(&s, &["import", "dbt", "tests/fixtures/dbt/legacy"]);
    let (_, latest, _) = import(&s, &["import", "dbt", "tests/fixtures/dbt/latest"]);
    let shared = |r: &[Value]| -> Vec<String> {
        measures(r)
            .into_iter()
            .filter(|m| {
                [
                    "completed_share",
                    "revenue_per_customer",
                    "weekly_revenue",
                    "cumulative_revenue",
                    "completed_revenue =",
                ]
                .iter()
                .any(|n| m.contains(n))
            })
            .collect()
    };
    assert_eq!(shared(&legacy), shared(&latest));
    assert!(measures(&legacy)
        .contains(&"orders.weekly_revenue = sum(order_total, window='7d')".to_owned()));
    assert!(measures(&legacy).contains(
        &"orders.revenue_per_customer = revenue / count_distinct(customers.customer_id)".to_owned()
    ));
}

#[test]
fn a_real_project_maps_every_metric_and_names_what_it_skips() {
    let s = TempStore::new();
    let report = s.dir.path().join("report.json");
    let report_arg = report.to_str().unwrap();
    let (code, records, stderr) = import(
        &s,
        &[
            "import",
            "dbt",
            "tests/fixtures/dbt/autofix/legacy",
            "--report",
            report_arg,
            "--datasource",
            "jaffle",
        ],
    );
    assert_eq!(code, 1, "an object was skipped: {stderr}");
    assert!(
        stderr.contains("warning: models/locations.yml:15: entity 'locations.not_mergeable_entity' skipped: unknown entity type 'categorical'; expected primary, unique, natural or foreign"),
        "{stderr}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["datasource"], "jaffle");
    assert_eq!(report["kinds"]["semantic_model"]["read"], 6);
    assert_eq!(report["kinds"]["metric"]["read"], 26);
    assert_eq!(report["kinds"]["metric"]["skipped"], 0);
    assert_eq!(report["kinds"]["entity"]["skipped"], 1);
    // Every metric is a named measure somewhere, so search can find it.
    let names: Vec<String> = measures(&records)
        .iter()
        .map(|m| {
            m.split(" = ")
                .next()
                .unwrap()
                .split('.')
                .nth(1)
                .unwrap()
                .to_owned()
        })
        .collect();
    let yaml = std::fs::read_to_string(crate::support::fixture(
        "dbt/autofix/legacy/models/order_items.yml",
    ))
    .unwrap();
    for metric in [
        "food_revenue_pct",
        "revenue_growth_mom",
        "order_gross_profit",
        "cumulative_revenue",
        "conversion_metric",
    ] {
        assert!(yaml.contains(metric));
        assert!(names.contains(&metric.to_owned()), "{metric} in {names:?}");
    }
    // The latest spec's conversion of the same project: its models come from `models:`.
    let (code, records, stderr) =
        import(&s, &["import", "dbt", "tests/fixtures/dbt/autofix/latest"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(records.iter().filter(|r| r["kind"] == "model").count(), 6);
}

#[test]
fn load_writes_the_records_and_show_tells_a_metric_whole() {
    let s = TempStore::new();
    s.cmd(&["import", "dbt", "tests/fixtures/dbt/legacy", "--load"])
        .assert()
        .success()
        .stderr(contains(
            "imported 2 models of tests/fixtures/dbt/legacy into datasource 'shop'",
        ));
    s.cmd(&["show", "shop.orders.completed_share", "--format", "text"])
        .assert()
        .success()
        .stdout(contains("Formula: completed_revenue / nullif(revenue, 0)"))
        .stdout(contains("Share of revenue from completed orders."));
}

const PROJECT: &str = "name: p\nconfig-version: 2\n";
const ORDERS: &str = "semantic_models:\n  - name: orders\n    model: ref('orders')\n    entities:\n      - name: order\n        type: primary\n        expr: order_id\n      - name: store\n        type: foreign\n        expr: store_id\n    measures:\n      - name: revenue\n        agg: sum\n        expr: amount\n";

#[test]
fn bad_projects_are_refused_or_named_and_nothing_is_written() {
    let s = TempStore::new();
    let dir = s.dir.path().join("proj");
    let arg = dir.to_str().unwrap();
    let refused = |what: &str, files: &[(&str, &str)], message: &str| {
        let _ = std::fs::remove_dir_all(&dir);
        write_files(&dir, files);
        s.cmd(&["import", "dbt", arg, "--load"])
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(message));
        assert!(!s.store.exists(), "{what}: nothing written");
    };
    refused(
        "not dbt",
        &[("models/x.yml", ORDERS)],
        "not a dbt project: there is no dbt_project.yml here",
    );
    refused(
        "malformed YAML",
        &[
            ("dbt_project.yml", PROJECT),
            ("models/orders.yml", "semantic_models:\n  - name: [oops\n"),
        ],
        "models/orders.yml: invalid YAML: ",
    );
    // A second semantic model of a name is skipped, the first kept.
    let _ = std::fs::remove_dir_all(&dir);
    write_files(
        &dir,
        &[
            ("dbt_project.yml", PROJECT),
            ("models/a.yml", ORDERS),
            ("models/b.yml", ORDERS),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "dbt", arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("models/b.yml:2: semantic model 'orders' skipped: a second semantic model named 'orders' (the first, at models/a.yml:2, is kept); rename one"), "{stderr}");
    assert_eq!(records.len(), 2, "the datasource and one model");

    // Objects that cannot be mapped are named, the rest imported.
    let _ = std::fs::remove_dir_all(&dir);
    write_files(
        &dir,
        &[
            ("dbt_project.yml", PROJECT),
            ("models/orders.yml", ORDERS),
            ("models/metrics.yml", "metrics:\n  - name: odd\n    type: histogram\n    type_params:\n      measure: revenue\n  - name: revenue\n    description: \"{{ var('currency') }} taken\"\n    type: simple\n    type_params:\n      measure: revenue\n"),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "dbt", arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "warning: models/metrics.yml:2: metric 'odd' skipped: unknown metric type 'histogram'"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: models/orders.yml:8: entity 'orders.store' mapped with a loss: no semantic model has 'store' as its primary, unique or natural entity, so no join is made"),
        "{stderr}"
    );
    assert!(stderr.contains("warning: models/metrics.yml:6: metric 'revenue' mapped with a loss: its description holds Jinja that cannot be evaluated offline; kept as text"), "{stderr}");
    assert_eq!(records.len(), 2, "the datasource and the model");
    assert_eq!(measures(&records), ["orders.revenue = sum(amount)"]);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_compiled_project_s_names_types_and_tests_win_over_its_yaml() {
    let s = TempStore::new();
    let dir = s.dir.path().join("shop");
    copy_dir(&crate::support::fixture("dbt/legacy"), &dir);
    std::fs::create_dir_all(dir.join("target")).unwrap();
    std::fs::write(
        dir.join("target/semantic_manifest.json"),
        r#"{"semantic_models": [{"name": "orders", "node_relation": {"relation_name": "\"shop\".\"analytics\".\"fct_orders\""}}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("target/manifest.json"),
        r#"{"nodes": {"model.shop.dim_customers": {"resource_type": "model", "name": "dim_customers", "relation_name": "\"shop\".\"analytics\".\"dim_customers\"", "columns": {"tier": {"description": "Compiled: standard, plus or vip."}}}}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("target/catalog.json"),
        r#"{"nodes": {"model.shop.dim_customers": {"columns": {"customer_id": {"type": "BIGINT"}, "signed_up_at": {"type": "TIMESTAMP WITH TIME ZONE"}}}}}"#,
    )
    .unwrap();
    // A relationships test joins the models no entity joins.
    let yaml = dir.join("semantic/customers.yml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    std::fs::write(&yaml, text.replace("        type: primary\n        expr: customer_id\n", "        type: primary\n        expr: customer_id\n      - name: store\n        type: foreign\n        expr: store_id\n")).unwrap();
    std::fs::write(
        dir.join("semantic/stores.yml"),
        "models:\n  - name: dim_customers\n    columns:\n      - name: home_store_id\n        data_tests:\n          - relationships:\n              to: ref('fct_orders')\n              field: order_id\n",
    )
    .unwrap();
    let (code, records, stderr) = import(&s, &["import", "dbt", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let model = |name: &str| records.iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(
        model("orders")["sql_table"],
        "\"shop\".\"analytics\".\"fct_orders\""
    );
    let customers = model("customers");
    assert_eq!(
        customers["sql_table"],
        "\"shop\".\"analytics\".\"dim_customers\""
    );
    let column = |name: &str| {
        customers["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        column("tier")["description"],
        "standard or vip.",
        "the semantic model's own words first"
    );
    assert_eq!(column("customer_id")["type"], "INT");
    assert_eq!(column("signed_up_at")["type"], "TIMESTAMP");
    let joins: Vec<(String, Value)> = customers["joins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["target_model"].as_str().unwrap().to_owned(),
                j["join_pairs"].clone(),
            )
        })
        .collect();
    assert!(
        joins.contains(&(
            "orders".to_owned(),
            serde_json::json!([["home_store_id", "order_id"]])
        )),
        "{joins:?}"
    );
    assert!(
        stderr
            .contains("entity 'customers.store' mapped with a loss: no semantic model has 'store'"),
        "{stderr}"
    );
}

#[test]
fn shared_entities_saved_queries_and_created_metrics_import_faithfully() {
    let s = TempStore::new();
    let memories = s.dir.path().join("memories.jsonl");
    let (code, records, stderr) = import(
        &s,
        &[
            "import",
            "dbt",
            "tests/fixtures/dbt/partial",
            "--memories",
            memories.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "the broken file is skipped: {stderr}");
    assert!(
        stderr.contains(
            "warning: models/broken.yml:0: file 'models/broken.yml' skipped: invalid YAML"
        ),
        "{stderr}"
    );
    let formulas = measures(&records);
    // The filter names a dimension of loss_payment, which shares the entity claim_amount.
    assert!(
        formulas.contains(
            &"claim_amount.claims_with_loss_payment = count(claims_with_loss_payment_filtered)"
                .to_owned()
        ),
        "{formulas:#?}"
    );
    let claim = records
        .iter()
        .find(|r| r["name"] == "claim_amount")
        .unwrap();
    let leaf = claim["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "claims_with_loss_payment_filtered")
        .unwrap();
    assert_eq!(leaf["filter"], "loss_payment.has_loss_payment = 1");
    // create_metric: the ratio built on it resolves.
    assert!(
        formulas
            .iter()
            .any(|f| f.starts_with("claim_amount.loss_ratio = ")),
        "{formulas:#?}"
    );
    assert!(!stderr.contains("metric 'loss_ratio' skipped"), "{stderr}");
    // The metric keeps its dbt name; the helper column reading net_revenue takes another.
    assert!(
        formulas.contains(&"claim_amount.net_revenue = sum(net_revenue_col)".to_owned())
            || formulas
                .iter()
                .any(|f| f.starts_with("claim_amount.net_revenue = ")),
        "{formulas:#?}"
    );
    assert!(
        !formulas.iter().any(|f| f.contains("net_revenue_metric")),
        "{formulas:#?}"
    );
    // A filter naming a dimension no model has is named, not written onto the wrong model.
    assert!(stderr.contains("metric 'unknown_filter' mapped with a loss: filter: 'claim_amount__no_such_dimension': no model carrying the entity 'claim_amount' has a dimension 'no_such_dimension'"), "{stderr}");
    // The saved query as an example-query memory.
    let text = std::fs::read_to_string(&memories).unwrap();
    let saved: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(saved.len(), 1);
    let q = &saved[0];
    assert_eq!(q["kind"], "memory");
    assert_eq!(q["id"], "dbt.saved_query.claims_by_line");
    assert_eq!(q["description"], "Claims by line of business");
    assert_eq!(
        q["query"],
        serde_json::json!({
            "source_model": "claim_amount",
            "measures": [{"formula": "claim_count"}, {"formula": "net_revenue"}],
            "dimensions": [{"name": "line_of_business"}],
            "time_dimensions": [{"dimension": {"name": "claim_date"}, "granularity": "month"}],
            "filters": ["line_of_business = 'auto'"]
        })
    );
}

#[test]
fn newer_simple_metrics_and_primary_entities_are_read() {
    let s = TempStore::new();
    let dir = s.dir.path().join("proj");
    write_files(
        &dir,
        &[
            ("dbt_project.yml", PROJECT),
            (
                "models/bookings.yml",
                "semantic_models:\n  - name: bookings\n    model: ref('bookings')\n    primary_entity: booking\n    dimensions:\n      - name: is_instant\n        type: categorical\n    entities:\n      - name: listing\n        type: foreign\n        expr: listing_id\nmetrics:\n  - name: booking_value\n    type: simple\n    type_params:\n      expr: booking_value\n      metric_aggregation_params:\n        semantic_model: bookings\n        agg: sum\n  - name: instant_value\n    type: simple\n    type_params:\n      expr: booking_value\n      metric_aggregation_params:\n        semantic_model: bookings\n        agg: sum\n    filter: \"{{ Dimension('booking__is_instant') }}\"\n  - name: broken\n    type: simple\n    type_params: {}\n  - name: twice_broken\n    type: derived\n    type_params:\n      expr: broken * 2\n      metrics: [broken]\n",
            ),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "dbt", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    let formulas = measures(&records);
    assert!(
        // The helper column reading `booking_value` leaves the name to the metric.
        formulas.contains(&"bookings.booking_value = sum(booking_value_col)".to_owned()),
        "{formulas:#?}"
    );
    // The filter reaches the dimension through the primary_entity.
    assert!(
        formulas.contains(&"bookings.instant_value = sum(instant_value_filtered)".to_owned()),
        "{formulas:#?}\n{stderr}"
    );
    assert!(
        !stderr.contains("no semantic model has the entity 'booking'"),
        "{stderr}"
    );
    // A metric skipped for its input says which input.
    assert!(
        stderr.contains("metric 'twice_broken' skipped: its input metric 'broken' is skipped (a simple metric without type_params.measure)"),
        "{stderr}"
    );
}

/// The dbt_metrics package's spec (dbt Core 1.0–1.5): metrics on dbt models without semantic
/// models (HousewareHQ's dbt_*_metrics packages are written so). Each aggregating metric is a
/// measure of its model, the model made from the metrics' timestamp and dimensions and its
/// column docs; a derived one combines them; a filter becomes a filtered column; a window is
/// named, not silently dropped.
#[test]
fn dbt_metrics_package_metrics_import_on_their_models() {
    let s = TempStore::new();
    let dir = s.dir.path().join("proj");
    write_files(
        &dir,
        &[
            ("dbt_project.yml", PROJECT),
            (
                "models/schema.yml",
                "version: 2\nmodels:\n  - name: tickets\n    description: One row per support ticket\n    columns:\n      - name: first_response_minutes\n        description: Minutes until an agent first replied\n",
            ),
            (
                "models/metrics.yml",
                "version: 2\nmetrics:\n  - name: tickets_opened\n    label: Tickets opened\n    model: ref('tickets')\n    description: Number of tickets opened\n    calculation_method: count\n    expression: ticket_id\n    timestamp: created_at\n    time_grains: [day, week]\n    dimensions: [channel, priority]\n  - name: avg_first_response\n    model: ref('tickets')\n    calculation_method: average\n    expression: first_response_minutes\n    timestamp: created_at\n    time_grains: [day]\n  - name: urgent_tickets\n    model: ref('tickets')\n    calculation_method: count\n    expression: ticket_id\n    timestamp: created_at\n    time_grains: [day]\n    filters:\n      - field: priority\n        operator: '='\n        value: \"'urgent'\"\n  - name: urgent_share\n    calculation_method: derived\n    expression: \"{{ metric('urgent_tickets') }} / {{ metric('tickets_opened') }}\"\n    timestamp: created_at\n    time_grains: [day]\n  - name: rolling_agents\n    model: ref('tickets')\n    type: count_distinct\n    sql: agent_id\n    timestamp: created_at\n    time_grains: [day]\n    window:\n      count: 7\n      period: day\n  - name: p99_wait\n    model: ref('tickets')\n    calculation_method: percentile_99\n    expression: wait\n    timestamp: created_at\n    time_grains: [day]\n",
            ),
        ],
    );
    let (code, records, stderr) = import(&s, &["import", "dbt", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    let formulas = measures(&records);
    for want in [
        "tickets.tickets_opened = count(ticket_id)",
        "tickets.avg_first_response = avg(first_response_minutes)",
        "tickets.urgent_tickets = count(urgent_tickets_filtered)",
        "tickets.urgent_share = urgent_tickets / tickets_opened",
        "tickets.rolling_agents = count_distinct(agent_id)",
    ] {
        assert!(
            formulas.contains(&want.to_owned()),
            "{want}\n{formulas:#?}\n{stderr}"
        );
    }
    let model = records
        .iter()
        .find(|r| r["kind"] == "model" && r["name"] == "tickets")
        .unwrap();
    let column = |name: &str| {
        model["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no column {name}: {model:#}"))
            .clone()
    };
    assert_eq!(column("created_at")["type"], "TIMESTAMP");
    assert_eq!(column("channel")["name"], "channel");
    assert_eq!(
        column("first_response_minutes")["description"],
        "Minutes until an agent first replied"
    );
    assert_eq!(
        column("urgent_tickets_filtered")["filter"],
        "priority = 'urgent'"
    );
    assert_eq!(model["default_time_dimension"], "created_at");
    let opened = model["measures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "tickets_opened")
        .unwrap();
    assert_eq!(opened["label"], "Tickets opened");
    assert_eq!(opened["description"], "Number of tickets opened");
    // What is lost or skipped is named; a package's model is no semantic model of the project.
    assert!(stderr.contains("metric 'rolling_agents'"), "{stderr}");
    assert!(stderr.contains("window '7 day'"), "{stderr}");
    assert!(
        stderr.contains("metric 'p99_wait' skipped: unknown calculation_method 'percentile_99'"),
        "{stderr}"
    );
    assert!(!stderr.contains("semantic model 'tickets'"), "{stderr}");
}
