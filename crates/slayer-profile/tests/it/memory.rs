//! `--memory-limit`: the sizes it takes, and a profile that stays within a small one by
//! sampling only the column whose values would not fit.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{path, run, Run};

/// A Parquet file of `rows` rows: `ref` unique per row, `cat` of seven values, `n` of 1,000.
fn parquet_file(dir: &Path, rows: u64) -> PathBuf {
    let file = dir.join("lines.parquet");
    let conn = duckdb::Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "COPY (SELECT 'ref_' || md5(i::VARCHAR) AS ref, 'c' || (i % 7) AS cat, i % 1000 AS n
               FROM range({rows}) t(i)) TO '{}' (FORMAT parquet)",
        path(&file)
    ))
    .unwrap();
    file
}

/// Runs slayer-profile with `TMPDIR` set, so where it spills can be looked at.
fn run_in(tmp: &Path, args: &[&str]) -> Run {
    let out = crate::kit::run("slayer-profile", None, args, &[("TMPDIR", path(tmp))], None);
    Run::of(out, args)
}

#[test]
fn bad_sizes_are_usage_errors_that_name_the_flag_and_the_fix() {
    for (value, fix) in [
        ("300", "write 256MiB, 1GB or 2GiB"),
        ("lots", "write 256MiB, 1GB or 2GiB"),
        ("300M", "use KiB, MiB, GiB (1024) or KB, MB, GB (1000)"),
        ("1MiB", "give at least 32MiB"),
    ] {
        let r = run(&["examples/shop/data", "--memory-limit", value], None);
        assert_eq!(r.code, 2, "{value}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{value}: {}", r.stdout);
        assert!(
            r.stderr.contains("--memory-limit") && r.stderr.contains(fix),
            "{value}: {}",
            r.stderr
        );
    }
}

#[test]
fn sizes_in_either_unit_profile_a_small_source_as_the_default_does() {
    let default = run(&["examples/shop/data"], None);
    assert_eq!(default.code, 0, "{}", default.stderr);
    for value in ["32MiB", "1GB", "1.5GiB"] {
        let r = run(&["examples/shop/data", "--memory-limit", value], None);
        assert_eq!(r.code, 0, "{value}: {}", r.stderr);
        assert_eq!(r.records, default.records, "{value}");
    }
}

#[test]
fn a_tight_limit_samples_only_the_column_that_would_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let rows = 300_000;
    let file = parquet_file(dir.path(), rows);
    let args = [path(&file), "--memory-limit", "32MiB", "--threads", "2"];
    let tight = run_in(tmp.path(), &args);
    assert_eq!(tight.code, 0, "{}", tight.stderr);

    // 32 MiB holds 131,072 groups: `ref` (300,000) is grouped over a sample and its count
    // estimated; `cat` and `n` are as exact as without a limit.
    let r = tight.column("lines", "ref");
    let estimate = r["distinct_count"].as_i64().unwrap();
    assert!(
        (rows as i64 * 9 / 10..=rows as i64 * 11 / 10).contains(&estimate),
        "{r}"
    );
    let sampled = r["sampled"].as_str().unwrap();
    assert!(
        sampled.ends_with(&format!(" ... (~{estimate} distinct)")),
        "{sampled}"
    );
    assert_eq!(r["sampled_values"].as_array().unwrap().len(), 50);
    assert_eq!(r["value_index"].as_array().unwrap().len(), 1000);
    let cat = tight.column("lines", "cat");
    assert_eq!(cat["distinct_count"], 7);
    assert_eq!(cat["sampled"], "c0, c1, c2, c3, c4, c5, c6");
    assert_eq!(tight.column("lines", "n")["sampled"], "0 .. 999");

    // The sample is seeded: the same records on every run, whatever the threads.
    let again = run_in(
        tmp.path(),
        &[path(&file), "--memory-limit", "32MiB", "--threads", "1"],
    );
    assert_eq!(again.stdout, tight.stdout);
    // The spill folder is gone with the run.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");

    // Under the default limit every value fits and the count is exact.
    let exact = run_in(tmp.path(), &[path(&file)]);
    assert_eq!(exact.code, 0, "{}", exact.stderr);
    let r = exact.column("lines", "ref");
    assert_eq!(r["distinct_count"], Value::from(rows));
    assert!(r["sampled"]
        .as_str()
        .unwrap()
        .ends_with(" ... (300000 distinct)"));
    assert_eq!(exact.column("lines", "cat"), cat);
}
