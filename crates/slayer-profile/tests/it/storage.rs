//! DuckDB storage: files written by DuckDB releases other than the bundled one
//! (`tests/fixtures/README.md` says which and how).

use serde_json::json;

use crate::support::{path, run, workspace_root};

#[test]
fn files_written_by_duckdb_2_0_and_1_1_give_equal_records() {
    let fixtures = workspace_root().join("crates/slayer-profile/tests/fixtures");
    let [new, old] = ["2.0.0", "1.1.3"].map(|version| {
        let file = fixtures.join(format!("written_by_duckdb_{version}.duckdb"));
        let r = run(&[path(&file), "--datasource", "fx"], None);
        assert_eq!(r.code, 0, "DuckDB {version}: {}", r.stderr);
        r
    });
    assert_eq!(new.records[1..], old.records[1..]);
    let names = new.model_names();
    assert_eq!(names, ["customers", "orders", "paid_orders"]);
    let orders = new.model("orders");
    assert_eq!(orders["description"], "One row per order.");
    assert_eq!(
        orders["joins"],
        json!([{"target_model": "customers", "join_pairs": [["customer_id", "id"]]}])
    );
    assert_eq!(new.model("paid_orders")["source_kind"], "view");
    let amount = new.column("orders", "amount");
    assert_eq!(amount["description"], "Total in dollars.");
    assert_eq!(amount["sampled"], "3.25 .. 12.0");
    assert_eq!(
        new.column("orders", "ordered_at")["sampled"],
        "2024-02-01 10:00:00 .. 2024-02-05 09:15:00.250000"
    );
    assert_eq!(
        new.column("orders", "status")["sampled_values"],
        json!(["paid", "cancelled", "shipped"])
    );
    assert_eq!(
        new.column("customers", "vip")["sampled_values"],
        json!(["True", "False"])
    );
    assert_eq!(
        new.column("paid_orders", "amount")["sampled"],
        "3.25 .. 9.5"
    );
}
