//! Small key/value settings (e.g. which index generation the store last synced).

use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

use super::StoreError;

/// Reads a setting.
pub fn get(conn: &Connection, key: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?)
}

/// Writes a setting.
pub fn set(conn: &Connection, key: &str, value: &str) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, value],
    )?;
    Ok(())
}

/// Reads a setting that holds a count (`None` where absent or not a number).
pub fn get_count(conn: &Connection, key: &str) -> Result<Option<i64>, StoreError> {
    Ok(get(conn, key)?.and_then(|v| v.parse().ok()))
}

/// Drops a change log's oldest entries (of one `stream`, for a log that has streams) once they
/// span twice `keep` counts, and moves the `from` setting (the first count the log may lack)
/// past them. Two index reads when there is nothing to do.
pub(super) fn prune_change_log(
    conn: &Connection,
    table: &str,
    stream: Option<&str>,
    from: &str,
    keep: i64,
) -> Result<(), StoreError> {
    let of_stream = if stream.is_some() {
        " WHERE stream = ?1"
    } else {
        ""
    };
    let (first, last): (Option<i64>, Option<i64>) = conn
        .prepare_cached(&format!("SELECT min(n), max(n) FROM {table}{of_stream}"))?
        .query_row(params_from_iter(stream), |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(());
    };
    if last - first < 2 * keep {
        return Ok(());
    }
    let upto = last - keep;
    let and_stream = if stream.is_some() {
        " AND stream = ?2"
    } else {
        ""
    };
    let mut delete =
        conn.prepare_cached(&format!("DELETE FROM {table} WHERE n <= ?1{and_stream}"))?;
    match stream {
        Some(stream) => delete.execute(params![upto, stream])?,
        None => delete.execute([upto])?,
    };
    conn.prepare_cached(
        "UPDATE settings SET value = CAST(max(CAST(value AS INTEGER), ?2) AS TEXT) WHERE key = ?1",
    )?
    .execute(params![from, upto])?;
    Ok(())
}
