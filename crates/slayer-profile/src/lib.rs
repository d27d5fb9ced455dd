//! slayer-profile: turn a real database into catalog records with sample values.
//!
//! - [`source`]: what the user pointed at (DuckDB file, SQLite file, CSV / Parquet files, a
//!   PostgreSQL or MySQL / MariaDB server).
//! - [`table`]: what a source holds (tables, views, columns, keys, comments), whatever the
//!   engine.
//! - [`names`]: the model and column names records give the source's objects.
//! - [`catalog`]: introspected tables → `datasource` and `model` records.
//! - [`profile`]: sample values of one table, with the fault rules.
//! - [`refresh`]: fill only the sample fields of existing model records.
//! - [`db`]: one connection, whichever the engine; each engine has a folder, [`duckdb`],
//!   [`sqlite`], [`pg`] and [`mysql`], with its catalog reading and its profiling queries ([`query`] says
//!   what they ask).
//! - [`sample`], [`typemap`], [`ident`]: value printing, type mapping, quoting.
//! - [`budget`]: the threads, memory and spill folder the connections may use.
//!
//! Engine-independent modules depend on [`table`] and [`query`], never on an engine; engines
//! depend on those two and [`budget`], never on each other; only [`db`] and [`source`] know
//! every engine.
//!
//! Rules: sources are opened read-only; every identifier reaches SQL quoted; a failing table or
//! column is a warning and the rest goes on; nothing here prints or exits.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod budget;
pub mod catalog;
pub mod db;
pub mod duckdb;
pub mod error;
pub mod ident;
pub mod mysql;
pub mod names;
pub mod pg;
pub mod profile;
pub mod query;
pub mod refresh;
pub mod sample;
pub mod source;
pub mod sqlite;
pub mod table;
pub mod typemap;

use std::sync::Mutex;

pub use error::ProfileError;

use budget::Budget;
use db::{Conn, DbError, Opener};
use profile::{Limits, TableJob, TableProfile};
use source::Source;
use table::{TableInfo, TableRef};

/// Opens `budget.threads` connections to the source (DuckDB connections share one database,
/// and its memory limit; a server gets one connection per worker).
pub fn connect(source: &Source, budget: &Budget) -> Result<Vec<Conn>, ProfileError> {
    let open_err = |cause: DbError| ProfileError::Open {
        cause: Box::new(cause),
        what: match &source.opener {
            Opener::DuckDbFile(p) | Opener::Sqlite(p) => p.display().to_string(),
            Opener::DuckDbMemory => "(in-memory DuckDB)".into(),
            Opener::Postgres(pg) => pg.target.masked(),
            Opener::Mysql(my) => my.target.masked(),
        },
    };
    let first = source.opener.open(budget).map_err(open_err)?;
    let mut conns = Vec::with_capacity(budget.threads);
    for _ in 1..budget.threads.max(1) {
        let next = first.another(&source.opener, budget);
        conns.push(next.map_err(open_err)?);
    }
    conns.insert(0, first);
    Ok(conns)
}

/// The tables and views of the source, in introspection order, every one named
/// ([`names::assign_names`]). A source that cannot be listed, or a file of it that cannot be
/// read, is bad input rather than a table to skip: it is what the user pointed at.
pub fn tables(
    source: &Source,
    conn: &Conn,
    source_name: &str,
) -> Result<Vec<TableInfo>, ProfileError> {
    let mut tables = if source.files.is_empty() {
        conn.list_tables()
            .map_err(|cause| ProfileError::Introspect {
                source_name: source_name.to_owned(),
                cause: Box::new(cause),
            })?
    } else {
        let mut tables = Vec::with_capacity(source.files.len());
        for (name, table_ref) in &source.files {
            let mut t = conn.describe_file(name.clone(), table_ref.clone());
            if let Some(cause) = t.error.take() {
                let path = match table_ref {
                    TableRef::File { path, .. } => path.clone(),
                    TableRef::Table { .. } => name.clone(),
                };
                return Err(ProfileError::Unreadable { path, cause });
            }
            tables.push(t);
        }
        tables
    };
    names::assign_names(&mut tables);
    Ok(tables)
}

/// Profiles tables on a pool of `conns.len()` workers, within `limits`; results come back in
/// job order. `on_done` is called with each table's label as it finishes (for a progress bar).
pub fn profile_all(
    conns: Vec<Conn>,
    jobs: &[TableJob],
    limits: Limits,
    on_done: &(dyn Fn(&str) + Sync),
) -> Result<Vec<TableProfile>, ProfileError> {
    use rayon::prelude::*;
    let threads = conns.len().max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|cause| ProfileError::Threads { threads, cause })?;
    let idle = Mutex::new(conns);
    Ok(pool.install(|| {
        jobs.par_iter()
            .with_max_len(1)
            .map(|job| {
                let conn = idle.lock().map(|mut v| v.pop()).ok().flatten();
                let result = match &conn {
                    Some(c) => {
                        let result = profile::profile_table(c, job, limits);
                        c.finish();
                        result
                    }
                    None => TableProfile {
                        failure: Some(format!(
                            "{}: profiling unavailable: no free connection",
                            job.label
                        )),
                        ..TableProfile::default()
                    },
                };
                if let (Some(c), Ok(mut v)) = (conn, idle.lock()) {
                    v.push(c);
                }
                on_done(&job.label);
                result
            })
            .collect()
    }))
}
