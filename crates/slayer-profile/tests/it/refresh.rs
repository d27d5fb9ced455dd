//! Refresh mode: only the sample fields change; everything else is kept byte for byte.

use crate::support::{duckdb_file, orders_sql, path, run};

#[test]
fn hand_written_models_keep_everything_but_samples() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(dir.path(), "wh.duckdb", &orders_sql("TIMESTAMP"));
    let input = [
        r#"{"kind":"datasource","name":"wh","type":"duckdb","host":"x"}"#,
        r#"{"kind":"model","name":"orders","data_source":"wh","sql_table":"main.orders","description":"Hand-written.","zz_unknown":{"b":1,"a":2},"columns":[{"name":"status","description":"Lifecycle.","type":"TEXT","sampled":"stale","meta":{"k":1}},{"name":"amount","type":"DOUBLE","sampled_values":["stale"],"distinct_count":9},{"name":"hidden_one","type":"TEXT","hidden":true}],"measures":[{"name":"revenue","formula":"amount:sum"}]}"#,
        r#"{"kind":"model","name":"q","data_source":"wh","sql":"SELECT 1 AS x","columns":[{"name":"x","type":"INT","sampled":"keep"}]}"#,
    ]
    .join("\n");
    let r = run(&[path(&db), "--models", "-"], Some(&input));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0],
        r#"{"kind":"datasource","name":"wh","type":"duckdb","host":"x"}"#
    );
    assert_eq!(
        lines[1],
        r#"{"kind":"model","name":"orders","data_source":"wh","sql_table":"main.orders","description":"Hand-written.","zz_unknown":{"b":1,"a":2},"columns":[{"name":"status","description":"Lifecycle.","type":"TEXT","sampled":"paid, shipped, cancelled, pending, refunded","meta":{"k":1},"sampled_values":["paid","shipped","cancelled","pending","refunded"],"distinct_count":5},{"name":"amount","type":"DOUBLE","sampled":"0.25 .. 99.75"},{"name":"hidden_one","type":"TEXT","hidden":true}],"measures":[{"name":"revenue","formula":"amount:sum"}]}"#
    );
    assert_eq!(
        lines[2],
        r#"{"kind":"model","name":"q","data_source":"wh","sql":"SELECT 1 AS x","columns":[{"name":"x","type":"INT","sampled":"keep"}]}"#
    );
}

#[test]
fn a_model_whose_table_is_missing_is_passed_through_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(dir.path(), "wh.duckdb", "CREATE TABLE a (x INTEGER);");
    let input = r#"{"kind":"model","name":"b","data_source":"wh","sql_table":"b","columns":[{"name":"x","type":"INT"}]}"#;
    let r = run(&[path(&db), "--models", "-"], Some(input));
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("warning: wh.b: table b not found in "),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout.trim_end(), input);
}

#[test]
fn a_bad_model_line_is_named_and_nothing_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(dir.path(), "wh.duckdb", "CREATE TABLE a (x INTEGER);");
    let input = "{\"kind\":\"model\",\"name\":\"a\",\"data_source\":\"wh\",\"sql_table\":\"a\"}\n\n{\"kind\":\"model\",\"name\":\"b.c\",\"data_source\":\"wh\"}\n{oops";
    let r = run(
        &[path(&db), "--models", "-", "--format", "text"],
        Some(input),
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("line 3: "), "{}", r.stderr);
    assert!(
        r.stderr.contains("line 4: invalid JSON at column 2"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout, "");
}

/// The prebuilt DuckDB links ICU, which converts zoned values in the session's time zone (the
/// machine's `TZ` by default); the bundled build has no ICU and converts in UTC. Profiling pins
/// UTC, so a model author's expressions over a TIMESTAMPTZ column print the same everywhere,
/// with either build (these expressions are the ones both builds implement).
#[test]
fn zoned_values_print_in_utc_whatever_the_machines_time_zone() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(
        dir.path(),
        "wh.duckdb",
        "CREATE TABLE e (placed TIMESTAMPTZ);
         INSERT INTO e VALUES ('2024-02-01 23:30:00+00'), ('2024-03-01 00:15:00+00');",
    );
    let input = r#"{"kind":"model","name":"e","data_source":"wh","sql_table":"e","columns":[{"name":"placed","type":"TIMESTAMP"},{"name":"moment","sql":"coalesce(placed, NULL)","type":"TIMESTAMP"},{"name":"day","sql":"CAST(CAST(placed AS TIMESTAMP) AS DATE)","type":"DATE"},{"name":"text","sql":"CAST(placed AS VARCHAR)","type":"TEXT"}]}"#;
    let expected = r#"{"kind":"model","name":"e","data_source":"wh","sql_table":"e","columns":[{"name":"placed","type":"TIMESTAMP","sampled":"2024-02-01 23:30:00 .. 2024-03-01 00:15:00"},{"name":"moment","sql":"coalesce(placed, NULL)","type":"TIMESTAMP","sampled":"2024-02-01 23:30:00 .. 2024-03-01 00:15:00"},{"name":"day","sql":"CAST(CAST(placed AS TIMESTAMP) AS DATE)","type":"DATE","sampled":"2024-02-01 .. 2024-03-01"},{"name":"text","sql":"CAST(placed AS VARCHAR)","type":"TEXT","sampled":"2024-02-01 23:30:00+00, 2024-03-01 00:15:00+00","sampled_values":["2024-02-01 23:30:00+00","2024-03-01 00:15:00+00"],"distinct_count":2}]}"#;
    for tz in ["UTC", "Pacific/Kiritimati", "America/Los_Angeles"] {
        let out = crate::kit::run(
            "slayer-profile",
            None,
            &[path(&db), "--models", "-"],
            &[("TZ", tz)],
            Some(input),
        );
        assert_eq!(out.code, 0, "TZ={tz}: {}", out.stderr);
        assert_eq!(out.stdout.trim_end(), expected, "TZ={tz}");
    }
}

#[test]
fn unknown_types_of_imported_models_are_filled_from_the_warehouse_then_profiled() {
    // What `slayer-index import dbt` prints: no types but those the format states.
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(dir.path(), "wh.duckdb", &orders_sql("TIMESTAMP"));
    let input = r#"{"kind":"model","name":"orders","data_source":"wh","sql_table":"orders","columns":[{"name":"status","type":"UNKNOWN"},{"name":"total","sql":"amount","type":"UNKNOWN"},{"name":"big","sql":"amount > 50","type":"UNKNOWN"},{"name":"ghost","type":"UNKNOWN"}]}"#;
    let r = run(&[path(&db), "--models", "-"], Some(input));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("; 2 UNKNOWN columns typed from the source)"),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stdout.trim(),
        r#"{"kind":"model","name":"orders","data_source":"wh","sql_table":"orders","columns":[{"name":"status","type":"TEXT","sampled":"paid, shipped, cancelled, pending, refunded","sampled_values":["paid","shipped","cancelled","pending","refunded"],"distinct_count":5},{"name":"total","sql":"amount","type":"DOUBLE","sampled":"0.25 .. 99.75"},{"name":"big","sql":"amount > 50","type":"UNKNOWN"},{"name":"ghost","type":"UNKNOWN"}]}"#
    );
}
