//! Writes the benchmark sources of `scripts/bench_profile.sh` into a folder:
//! `wide.duckdb` (one table, ROWS rows × 20 columns: text of low and high cardinality, integers,
//! doubles, booleans, dates, timestamps) and `many.sqlite` (50 tables × 2,000 rows × 8 columns).
//!
//!     cargo run --release -p slayer-profile --example gen_bench_sources -- DIR [ROWS]
#![allow(clippy::print_stderr)]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().ok_or("usage: gen_bench_sources DIR [ROWS]")?);
    let rows: u64 = args
        .next()
        .map(|r| r.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    std::fs::create_dir_all(&dir)?;

    let duck_path = dir.join("wide.duckdb");
    let _ = std::fs::remove_file(&duck_path);
    let duck = duckdb::Connection::open(&duck_path)?;
    let mut cols = vec!["i AS id".to_owned()];
    for c in 0..4 {
        cols.push(format!("'status_' || (hash(i + {c}) % 6) AS cat_small_{c}"));
        cols.push(format!(
            "'sku_' || (hash(i * 7 + {c}) % 5000) AS cat_big_{c}"
        ));
        cols.push(format!("(hash(i + {c}) % 100000)::BIGINT AS int_{c}"));
    }
    for c in 0..3 {
        cols.push(format!("(hash(i * 3 + {c}) % 1000000) / 100.0 AS dbl_{c}"));
    }
    cols.push("(i % 3 = 0) AS flag".to_owned());
    cols.push("CASE WHEN i % 10 = 0 THEN NULL ELSE 'city_' || (i % 40) END AS city".to_owned());
    cols.push("DATE '2020-01-01' + (i % 1500)::INTEGER AS day".to_owned());
    cols.push("TIMESTAMP '2020-01-01 00:00:00' + to_seconds(i * 37) AS at".to_owned());
    duck.execute_batch(&format!(
        "CREATE TABLE wide AS SELECT {} FROM range({rows}) t(i); ALTER TABLE wide ADD PRIMARY KEY (id);",
        cols.join(", ")
    ))?;
    drop(duck);
    eprintln!("wrote {} ({rows} rows x 20 columns)", duck_path.display());

    let lite_path = dir.join("many.sqlite");
    let _ = std::fs::remove_file(&lite_path);
    let mut lite = rusqlite::Connection::open(&lite_path)?;
    let tx = lite.transaction()?;
    for t in 0..50 {
        tx.execute_batch(&format!(
            "CREATE TABLE t{t:02} (id INTEGER PRIMARY KEY, name TEXT, region TEXT, qty INTEGER, price REAL,
                                    active BOOLEAN, day DATE, at DATETIME);"
        ))?;
        let mut stmt = tx.prepare(&format!(
            "INSERT INTO t{t:02} VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        ))?;
        for i in 0..2000u32 {
            stmt.execute(rusqlite::params![
                i,
                format!("name_{}", (i * 31 + t) % 700),
                ["north", "south", "east", "west"][(i % 4) as usize],
                i % 50,
                f64::from(i % 997) / 10.0,
                i % 2,
                format!("2024-{:02}-{:02}", 1 + i % 12, 1 + i % 28),
                format!("2024-01-01 {:02}:{:02}:00", i % 24, i % 60),
            ])?;
        }
    }
    tx.commit()?;
    eprintln!(
        "wrote {} (50 tables x 2000 rows x 8 columns)",
        lite_path.display()
    );
    Ok(())
}
