//! The renderer through `slayer-index render`: goldens per kind and the sample-line rules.

use crate::kit::assert_success;
use crate::support::{assert_golden, fixture, json_lines, TempStore};

fn render_docs(input: &str) -> Vec<serde_json::Value> {
    let out = TempStore::new()
        .cmd(&["render", "-"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_success(&out);
    json_lines(&out.stdout)
}

fn text_of<'a>(docs: &'a [serde_json::Value], id: &str) -> &'a str {
    docs.iter()
        .find(|d| d["canonical_id"] == id)
        .unwrap_or_else(|| panic!("no doc {id}"))["text"]
        .as_str()
        .unwrap()
}

const REFERENCE_MODEL: &str = r#"{"kind":"model","name":"orders","data_source":"warehouse","description":"One row per checkout order.","sql_table":"public.orders","default_time_dimension":"created_at","filters":["status != 'cancelled'","amount > 0"],"columns":[{"name":"id","type":"INT","primary_key":true},{"name":"amount","type":"DOUBLE"},{"name":"status","type":"TEXT","description":"paid|refunded|cancelled.","sampled_values":["paid","refunded","cancelled","R$ 1,000–3,000"],"distinct_count":12},{"name":"paid_amount","type":"DOUBLE"},{"name":"created_at","type":"TIMESTAMP"},{"name":"customer_id","type":"INT"}],"measures":[{"name":"aov","formula":"amount:sum / *:count"}],"aggregations":[{"name":"weighted_avg_qty","formula":"x"}],"joins":[{"target_model":"customers","join_pairs":[["customer_id","id"]]}]}"#;

#[test]
fn model_and_column_match_the_reference_goldens() {
    let docs = render_docs(REFERENCE_MODEL);
    assert_eq!(
        text_of(&docs, "warehouse.orders"),
        "Model: warehouse.orders
Description: One row per checkout order.
sql_table: public.orders
default_time_dimension: created_at
Filters: status != 'cancelled'; amount > 0
Columns: id (column), amount (column), status (column), paid_amount (column), created_at (column), customer_id (column)
Measures: aov (measure)
Aggregations: weighted_avg_qty (aggregation)
Joins: customers (model)
Join pairs to customers: customer_id=id"
    );
    assert_eq!(
        text_of(&docs, "warehouse.orders.status"),
        "Column: warehouse.orders.status
Type: TEXT
Description: paid|refunded|cancelled.
Sample values: [\"paid\", \"refunded\", \"cancelled\", \"R$ 1,000–3,000\"]
Distinct count: 12"
    );
}

#[test]
fn ingested_numeric_column_matches_the_reference_golden() {
    let docs = render_docs(
        r#"{"kind":"model","name":"orders","data_source":"shop","columns":[{"name":"amount","type":"DOUBLE","sql":"amount","format":{"type":"float"},"sampled":"0.21 .. 99.25"}]}"#,
    );
    assert_eq!(
        text_of(&docs, "shop.orders.amount"),
        "Column: shop.orders.amount
Type: DOUBLE
Format: type=<NumberFormatType.FLOAT: 'float'> precision=None symbol=None
SQL: amount
Sample values: 0.21 .. 99.25"
    );
}

#[test]
fn sample_lines_follow_the_structured_list_rules() {
    let docs = render_docs(&std::fs::read_to_string(fixture("catalog.jsonl")).unwrap());
    // Empty list is authoritative: no fallback to the stale `sampled` text.
    assert_eq!(
        text_of(&docs, "warehouse.orders.channel"),
        "Column: warehouse.orders.channel\nType: TEXT"
    );
    // distinct_count equal to the list length: no Distinct count line; non-ASCII kept.
    assert_eq!(
        text_of(&docs, "warehouse.customers.city"),
        "Column: warehouse.customers.city\nType: TEXT\nDescription: Billing city.\nSample values: [\"São Paulo\", \"Zürich\", \"Osaka\"]"
    );
    // Legacy `sampled` text renders verbatim when there is no list.
    assert!(text_of(&docs, "warehouse.customers.segment")
        .ends_with("Sample values: enterprise, smb ... (120 distinct)"));
}

#[test]
fn hidden_things_and_meta_never_render() {
    let docs = render_docs(&std::fs::read_to_string(fixture("catalog.jsonl")).unwrap());
    let ids: Vec<&str> = docs
        .iter()
        .map(|d| d["canonical_id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.iter().any(|id| id.starts_with("warehouse.audit_log")),
        "{ids:?}"
    );
    assert!(!ids.contains(&"warehouse.orders.internal_flag"));
    // Unnamed measures are not entities.
    assert_eq!(
        ids.iter()
            .filter(|id| id.starts_with("warehouse.orders."))
            .count(),
        9
    );
    assert!(!text_of(&docs, "warehouse.orders").contains("internal_flag"));
    assert!(!text_of(&docs, "warehouse").contains("audit_log"));
    for d in &docs {
        let text = d["text"].as_str().unwrap();
        assert!(
            !text.contains("finance") && !text.contains("rendered"),
            "meta leaked: {text}"
        );
    }
}

#[test]
fn memory_text_and_embedding_text() {
    let docs = render_docs(
        r#"{"kind":"memory","id":"7","learning":"Refunds keep the amount.","description":"Refund rule","entities":["shop.orders.status","memory:3"],"created_at":"2026-01-01T00:00:00Z"}
{"kind":"memory","id":"8","learning":"Untagged note.","created_at":"2026-01-01T00:00:00Z"}"#,
    );
    assert_eq!(docs[0]["canonical_id"], "memory:7");
    assert_eq!(docs[0]["doc_kind"], "memory");
    assert_eq!(
        docs[0]["text"],
        "Refunds keep the amount.\nRefund rule\nTagged entities: shop.orders.status, memory:3"
    );
    assert_eq!(
        docs[0]["embedding_text"],
        "Refunds keep the amount.\n\nRefund rule"
    );
    assert_eq!(docs[1]["text"], "Untagged note.");
    assert_eq!(docs[1]["embedding_text"], "Untagged note.");
}

#[test]
fn whole_fixture_catalog_golden() {
    let out = TempStore::new()
        .cmd(&["render", "tests/fixtures/catalog.jsonl", "--format", "text"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_golden("catalog.txt", &String::from_utf8(out.stdout).unwrap());
}
