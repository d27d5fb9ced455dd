//! Embedding rows; filled by `slayer-embed`, deleted here when their docs go.

use rusqlite::{params, Connection};

use super::{under_sql, StoreError};

/// Deletes the embedding rows of `root` and of its strict dotted descendants (every model name).
pub fn delete_under(conn: &Connection, root: &str) -> Result<usize, StoreError> {
    let sql = format!(
        "DELETE FROM embeddings WHERE {}",
        under_sql("canonical_id", 1)
    );
    Ok(conn.execute(&sql, params![root])?)
}

/// Deletes the embedding rows of exactly these canonical ids.
pub fn delete_exact(conn: &Connection, canonical_id: &str) -> Result<usize, StoreError> {
    Ok(conn.execute(
        "DELETE FROM embeddings WHERE canonical_id = ?1",
        params![canonical_id],
    )?)
}

/// Row counts per embedding model name, sorted by name.
pub fn counts_by_model(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT model_name, count(*) FROM embeddings GROUP BY model_name ORDER BY model_name",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
