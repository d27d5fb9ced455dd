//! Writes the Parquet fact table of `scripts/bench_profile_memory.sh`: ROWS rows × 20 columns
//! shaped like a warehouse's order lines (ids, quantities and prices, text of low, middle and
//! high cardinality, dates, timestamps, booleans, a mostly-NULL note), about 55 bytes a row, so
//! 10⁷ rows make a file of about 550 MB like the one of issue 65.
//!
//!     cargo run --release -p slayer-profile --example gen_fact_parquet -- FILE ROWS
//!
//! Values come from `hash(i)`, so a file of ROWS rows is the same on every run and machine.
#![allow(clippy::print_stderr)]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: gen_fact_parquet FILE ROWS";
    let file = args.next().ok_or(usage)?;
    let rows: u64 = args.next().ok_or(usage)?.parse()?;
    let conn = duckdb::Connection::open_in_memory()?;
    let columns = [
        "i AS order_line_id",
        "i // 4 AS order_id",
        "(hash(i // 4) % 2000000)::BIGINT AS customer_id",
        "(hash(i, 1) % 50000)::INTEGER AS product_id",
        "(hash(i // 4, 2) % 400)::INTEGER AS store_id",
        "(1 + hash(i, 3) % 12)::INTEGER AS quantity",
        "round((hash(i, 4) % 1000000) / 100.0 + 0.99, 2)::DOUBLE AS unit_price",
        "((hash(i, 5) % 40) / 100.0)::DOUBLE AS discount",
        "((hash(i, 6) % 100000000) / 1000.0)::DOUBLE AS amount",
        "['paid', 'shipped', 'delivered', 'refunded', 'cancelled', 'pending'][(1 + hash(i // 4, 7) % 6)::BIGINT] AS status",
        "['web', 'store', 'app', 'phone'][(1 + hash(i // 4, 8) % 4)::BIGINT] AS channel",
        "'country_' || (hash(i // 4, 9) % 60) AS country",
        "'city_' || (hash(i // 4, 10) % 3000) AS city",
        "'user' || (hash(i // 4) % 2000000) || '@example.com' AS customer_email",
        "'SKU-' || lpad(((hash(i, 1) % 50000))::VARCHAR, 6, '0') AS sku",
        "'L' || md5(i::VARCHAR)[1:14] AS line_ref",
        "(hash(i, 11) % 20 = 0) AS is_gift",
        "DATE '2019-01-01' + (i // 4 * 7919 % 2500)::INTEGER AS order_date",
        "TIMESTAMP '2019-01-01' + to_seconds((i // 4 * 7919 % 216000000)::BIGINT) AS ordered_at",
        "CASE WHEN hash(i, 12) % 50 = 0 THEN 'note ' || (hash(i, 13) % 1000) END AS note",
    ];
    let sql = format!(
        "COPY (SELECT {} FROM range({rows}) t(i)) TO '{}' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 122880)",
        columns.join(", "),
        file.replace('\'', "''")
    );
    conn.execute_batch(&sql)?;
    let bytes = std::fs::metadata(&file)?.len();
    eprintln!(
        "wrote {file}: {rows} rows x {} columns, {:.0} MB",
        columns.len(),
        bytes as f64 / 1e6
    );
    Ok(())
}
