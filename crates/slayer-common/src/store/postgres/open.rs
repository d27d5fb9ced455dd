//! Opening a PostgreSQL store: is the schema a store (checked before anything is written), and
//! the forward-only migrations (`migrations/*.sql`) that bring it to [`PG_SCHEMA_VERSION`],
//! run by a writer under the store's advisory lock so two hosts migrating at once do not
//! collide.

use std::path::PathBuf;

use super::{lock_key, quote_ident, PgEndpoint, PgResult, Session};
use crate::store::{OpenMode, StoreError};

/// The PostgreSQL schema version this build writes (its own numbering, not SQLite's).
pub const PG_SCHEMA_VERSION: i64 = 6;

/// Each entry upgrades the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_tables.sql"),
    include_str!("migrations/0002_proposed.sql"),
    include_str!("migrations/0003_skeleton_keys.sql"),
    include_str!("migrations/0004_compact_changes.sql"),
    include_str!("migrations/0005_occasion.sql"),
    include_str!("migrations/0006_statement_triggers.sql"),
];

/// The version from which skeletons keep join pairs and primary keys: a store created before
/// it has its skeletons rewritten.
const SKELETON_KEYS: i64 = 3;

/// The tables every slayer store has, whatever its version.
const CORE_TABLES: [&str; 6] = [
    "schema_version",
    "datasources",
    "models",
    "memories",
    "docs",
    "settings",
];

/// What the schema holds.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// No such schema.
    Absent,
    /// The schema exists and holds nothing.
    Empty,
    /// A store of this version.
    Store(i64),
}

/// What the schema holds; `NotAStore` when it holds something else.
fn inspect(s: &mut Session, endpoint: &PgEndpoint) -> PgResult<Found> {
    let shown = &endpoint.shown;
    let exists = s
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
            &[&endpoint.schema],
        )?
        .get::<_, bool>(0);
    if !exists {
        return Ok(Found::Absent);
    }
    let mut tables: Vec<String> = s
        .query(
            "SELECT c.relname::text FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
             ORDER BY 1",
            &[&endpoint.schema],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if tables.is_empty() {
        return Ok(Found::Empty);
    }
    let not_a_store = |why: String| StoreError::NotAStore {
        path: PathBuf::from(shown),
        why,
    };
    if !tables.iter().any(|t| t == "schema_version") {
        tables.truncate(6);
        let more = if tables.len() > 5 { " …" } else { "" };
        tables.truncate(5);
        return Err(not_a_store(format!(
            "schema {} has other tables: {}{more}",
            quote_ident(&endpoint.schema),
            tables.join(", ")
        ))
        .into());
    }
    let version = schema_version(s)?;
    if let Some(missing) = CORE_TABLES.iter().find(|t| !tables.iter().any(|x| x == *t)) {
        return Err(
            not_a_store(format!("schema version {version} but no '{missing}' table")).into(),
        );
    }
    Ok(Found::Store(version))
}

/// The version the store records.
pub(super) fn schema_version(s: &mut Session) -> PgResult<i64> {
    Ok(s.query_opt("SELECT max(version) FROM schema_version", &[])?
        .and_then(|r| r.get::<_, Option<i64>>(0))
        .unwrap_or(0))
}

/// Refuses a schema that is not a store (or, for a reader, not a current one); a writer
/// creates an absent or empty one and migrates an older one.
pub(super) fn check_and_migrate(
    s: &mut Session,
    endpoint: &PgEndpoint,
    mode: OpenMode,
) -> PgResult<()> {
    let path = || PathBuf::from(&endpoint.shown);
    let found = inspect(s, endpoint)?;
    match (&found, mode) {
        (Found::Absent, OpenMode::ReadOnly | OpenMode::MustExist)
        | (Found::Empty, OpenMode::ReadOnly) => Err(StoreError::Missing(path()).into()),
        (Found::Store(v), _) if *v > PG_SCHEMA_VERSION => Err(StoreError::TooNew {
            path: path(),
            found: *v,
            supported: PG_SCHEMA_VERSION,
        }
        .into()),
        (Found::Store(v), OpenMode::ReadOnly) if *v < PG_SCHEMA_VERSION => {
            Err(StoreError::Outdated {
                path: path(),
                found: *v,
                supported: PG_SCHEMA_VERSION,
            }
            .into())
        }
        (Found::Store(PG_SCHEMA_VERSION), _) | (_, OpenMode::ReadOnly) => Ok(()),
        _ => migrate(s, endpoint),
    }
}

/// Creates or upgrades the store in one transaction, under the store's write lock; what
/// another host did while this one waited for it is looked at again.
fn migrate(s: &mut Session, endpoint: &PgEndpoint) -> PgResult<()> {
    s.batch(&format!(
        "BEGIN; SELECT pg_advisory_xact_lock({})",
        lock_key(&endpoint.schema)
    ))?;
    let result = migrate_locked(s, endpoint);
    match result {
        Ok(()) => s.batch("COMMIT"),
        Err(e) => {
            let _ = s.batch("ROLLBACK");
            Err(e)
        }
    }
}

fn migrate_locked(s: &mut Session, endpoint: &PgEndpoint) -> PgResult<()> {
    let from = match inspect(s, endpoint)? {
        Found::Absent => {
            s.batch(&format!("CREATE SCHEMA {}", quote_ident(&endpoint.schema)))?;
            0
        }
        Found::Empty => 0,
        Found::Store(v) if v > PG_SCHEMA_VERSION => {
            return Err(StoreError::TooNew {
                path: PathBuf::from(&endpoint.shown),
                found: v,
                supported: PG_SCHEMA_VERSION,
            }
            .into())
        }
        Found::Store(v) => v,
    };
    for sql in MIGRATIONS.iter().skip(from as usize) {
        s.batch(sql)?;
    }
    if from > 0 && from < SKELETON_KEYS {
        super::catalog::rewrite_skeletons(s)?;
    }
    if from < PG_SCHEMA_VERSION {
        s.batch(&format!(
            "DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES ({PG_SCHEMA_VERSION})"
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_migration_per_version() {
        assert_eq!(MIGRATIONS.len() as i64, PG_SCHEMA_VERSION);
        for table in CORE_TABLES {
            assert!(
                MIGRATIONS[0].contains(&format!("CREATE TABLE {table} (")),
                "{table}"
            );
        }
    }
}
