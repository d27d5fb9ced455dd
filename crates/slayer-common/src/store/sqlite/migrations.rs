//! The SQLite schema: its version in `PRAGMA user_version` and the forward-only migrations
//! that reach it (docs/spec/store.md §11.3), one SQL file per version under `migrations/`.

use rusqlite::{Connection, TransactionBehavior};

use super::{catalog, StoreError};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 13;

/// The triggers that keep `tag_counts` and the `memory_count` setting exact: one text for the
/// version 4 migration and for [`super::memories::resume_counts`].
pub(crate) const COUNT_TRIGGERS: &str = include_str!("migrations/count_triggers.sql");

/// Each entry upgrades the schema from version `index` to `index + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_tables.sql"),
    include_str!("migrations/0002_docs_version.sql"),
    include_str!("migrations/0003_has_query.sql"),
    concat!(
        include_str!("migrations/0004_tag_counts.sql"),
        include_str!("migrations/count_triggers.sql"),
        include_str!("migrations/0004_skeletons.sql"),
    ),
    // Version 5: skeletons keep each join's name (resolution hops by it); the rows are
    // rewritten from the full models by `catalog::rewrite_skeletons`.
    "",
    include_str!("migrations/0006_embeddings_changes.sql"),
    include_str!("migrations/0007_memory_tags_changes.sql"),
    include_str!("migrations/0008_standing.sql"),
    include_str!("migrations/0009_proposed.sql"),
    include_str!("migrations/0010_vector_changes.sql"),
    // Version 11: skeletons keep join pairs and primary keys (search gives the keys that
    // connect two models evidence); the rows are rewritten as for version 5.
    "",
    include_str!("migrations/0012_docs_changes.sql"),
    include_str!("migrations/0013_occasion.sql"),
];

/// The versions whose migration rewrites every model skeleton (they gained join names, then
/// join pairs and primary keys).
const SKELETON_REWRITES: [usize; 2] = [5, 11];

/// The version that adds the memories' standing columns and the embeddings' revision.
const STANDING_COLUMNS: usize = 8;

/// `(table, column, definition)` of the columns version 8 adds.
const STANDING_COLUMN_DEFINITIONS: &[(&str, &str, &str)] = &[
    ("memories", "tier", "TEXT NOT NULL DEFAULT 'lesson'"),
    ("memories", "confidence", "REAL NOT NULL DEFAULT 1"),
    ("memories", "strength", "REAL NOT NULL DEFAULT 1"),
    ("memories", "project", "TEXT"),
    ("memories", "agent", "TEXT"),
    ("memories", "deleted", "INTEGER NOT NULL DEFAULT 0"),
    ("embeddings", "model_revision", "TEXT NOT NULL DEFAULT ''"),
];

/// The version that adds `memories.proposed` (review of agent memories).
const PROPOSED_COLUMN: usize = 9;

/// `(table, column, definition)` of the column version 9 adds.
const PROPOSED_COLUMN_DEFINITIONS: &[(&str, &str, &str)] =
    &[("memories", "proposed", "INTEGER NOT NULL DEFAULT 0")];

/// The version that adds `memories.event_time` and `memories.session`.
const OCCASION_COLUMNS: usize = 13;

/// `(table, column, definition)` of the columns version 13 adds.
const OCCASION_COLUMN_DEFINITIONS: &[(&str, &str, &str)] = &[
    ("memories", "event_time", "TEXT"),
    ("memories", "session", "TEXT"),
];

/// Adds each column a table lacks: SQLite has no `ADD COLUMN IF NOT EXISTS`, and a store whose
/// version number was lowered by hand must still migrate.
fn add_missing_columns(tx: &Connection, columns: &[(&str, &str, &str)]) -> Result<(), StoreError> {
    for (table, column, definition) in columns {
        let present: bool = tx.query_row(
            &format!("SELECT EXISTS (SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1)"),
            [column],
            |r| r.get(0),
        )?;
        if !present {
            tx.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition};"
            ))?;
        }
    }
    Ok(())
}

/// The schema version of the open file.
pub(crate) fn schema_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Brings the schema to [`SCHEMA_VERSION`] in one `BEGIN IMMEDIATE` transaction.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    if schema_version(conn)? == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have migrated while we waited for the lock.
    let now = schema_version(&tx)?;
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(now as usize) {
        if version + 1 == STANDING_COLUMNS {
            add_missing_columns(&tx, STANDING_COLUMN_DEFINITIONS)?;
        }
        if version + 1 == PROPOSED_COLUMN {
            add_missing_columns(&tx, PROPOSED_COLUMN_DEFINITIONS)?;
        }
        if version + 1 == OCCASION_COLUMNS {
            add_missing_columns(&tx, OCCASION_COLUMN_DEFINITIONS)?;
        }
        tx.execute_batch(sql)?;
        // Later rewrites write the same rows: one is enough, the last.
        if SKELETON_REWRITES
            .iter()
            .rev()
            .find(|v| **v > now as usize)
            .is_some_and(|v| *v == version + 1)
        {
            catalog::rewrite_skeletons(&tx)?;
        }
        tx.pragma_update(None, "user_version", version as i64 + 1)?;
    }
    tx.commit()?;
    Ok(())
}
