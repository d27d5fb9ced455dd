//! Rankings are read only as deep as the buckets need: whatever the caps, a bucket is the
//! prefix of the bucket a whole read gives, scores and all.

use serde_json::{json, Value};

use crate::support::Fixture;

/// 300 memories, most with an example query, a few learnings scattered low in every ranking,
/// so the learnings bucket needs reads far past the first page of hits.
fn many_memories(f: &Fixture) {
    let words = [
        "refund", "revenue", "order", "amount", "status", "dollars", "paid",
    ];
    let mut lines = String::new();
    for i in 1..=300u32 {
        let n = 1 + (i * 7 % 11) as usize;
        let learning: Vec<&str> = (0..n)
            .map(|k| words[(i as usize + k * 3) % words.len()])
            .collect();
        let mut m = json!({
            "kind": "memory",
            "id": format!("d{i}"),
            "learning": learning.join(" "),
            "entities": if i % 3 == 0 { json!(["mydb.orders.amount"]) } else { json!(["mydb.orders.status"]) },
            "created_at": "2026-02-01T00:00:00Z",
        });
        if i % 29 != 0 {
            m["query"] = json!({"source_model": "orders", "measures": [{"formula": "amount:sum"}]});
        }
        lines.push_str(&m.to_string());
        lines.push('\n');
    }
    let out = f.raw_memory_import(&lines);
    assert_eq!(out, 0);
}

fn bucket(v: &Value, name: &str) -> Vec<Value> {
    v[name].as_array().unwrap().clone()
}

#[test]
fn a_capped_bucket_is_a_prefix_of_the_whole_read() {
    let f = Fixture::new();
    many_memories(&f);
    let inputs: [&[&str]; 3] = [
        &["--question", "refund revenue dollars"],
        &[
            "--entity",
            "orders.amount",
            "--question",
            "paid order status",
        ],
        &["--entity", "orders.amount", "--entity", "orders.status"],
    ];
    for input in inputs {
        let search = |m: &str, q: &str| {
            let mut args = input.to_vec();
            args.extend(["--max-memories", m, "--max-example-queries", q, "--explain"]);
            f.search(&args)
        };
        let whole = search("400", "400");
        let learnings = bucket(&whole, "memories");
        let examples = bucket(&whole, "example_queries");
        assert!(learnings.len() >= 8, "{input:?}: {}", learnings.len());
        assert!(examples.len() > 100, "{input:?}");
        for cap in [1usize, 3, 8] {
            let capped = search(&cap.to_string(), &cap.to_string());
            assert_eq!(
                bucket(&capped, "memories"),
                learnings[..cap],
                "{input:?} cap {cap}"
            );
            assert_eq!(
                bucket(&capped, "example_queries"),
                examples[..cap],
                "{input:?}"
            );
        }
    }
}
