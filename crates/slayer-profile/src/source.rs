//! Recognising what the user pointed at: a DuckDB file, a SQLite file, CSV / Parquet files,
//! globs or a folder of them, a PostgreSQL server (a `postgres://` URL or a `key=value`
//! connection string, completed from the libpq environment), or a MySQL / MariaDB server (a
//! `mysql://` or `mariadb://` URL, completed from `MYSQL_PWD` and `~/.my.cnf`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::db::Opener;
use crate::error::ProfileError;
use crate::mysql::dsn::{is_mysql_url, MyTarget};
use crate::mysql::MySource;
use crate::names::sanitize;
use crate::pg::dsn::{looks_like_dsn, PgTarget, ProcessEnv};
use crate::pg::PgSource;
use crate::table::TableRef;

/// A source to introspect.
#[derive(Debug, Clone)]
pub struct Source {
    /// How to connect.
    pub opener: Opener,
    /// The datasource `type` recorded by default.
    pub default_type: &'static str,
    /// The datasource name used when `--datasource` is not given.
    pub default_name: Option<String>,
    /// The datasource record's connection fields: `database` (the file, or the server's
    /// database), and for a server `host`, `port` and `username`.
    pub connection: Vec<(&'static str, Value)>,
    /// For file sources: one `(model name, file)` per file or glob.
    pub files: Vec<(String, TableRef)>,
}

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

fn file_kind(path: &str) -> Option<bool> {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".parquet") || lower.ends_with(".pq") {
        Some(true)
    } else if [".csv", ".tsv", ".csv.gz", ".tsv.gz", ".txt"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        Some(false)
    } else {
        None
    }
}

fn stem(path: &str) -> String {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path);
    let base = name.split('.').next().unwrap_or(name);
    let cleaned: String = base
        .chars()
        .filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}'))
        .collect();
    let trimmed = cleaned.trim_matches(|c| c == '_' || c == '-');
    if trimmed.is_empty() { "files" } else { trimmed }.to_owned()
}

/// Identifies the source from the command-line arguments; `statement_timeout` limits each
/// query on a server.
pub fn identify(
    args: &[PathBuf],
    statement_timeout: Option<Duration>,
) -> Result<Source, ProfileError> {
    let [first, ..] = args else {
        return Err(ProfileError::Source(
            "no source given; pass a DuckDB or SQLite file, CSV / Parquet files, or a postgres:// or mysql:// URL".into(),
        ));
    };
    let text = |p: &PathBuf| p.to_string_lossy().into_owned();
    if args.iter().any(|a| is_mysql_url(&text(a))) {
        if args.len() > 1 {
            return Err(ProfileError::Source(
                "a MySQL / MariaDB source is profiled on its own; give one URL and no files".into(),
            ));
        }
        return mysql(&text(first), statement_timeout);
    }
    if args.iter().any(|a| looks_like_dsn(&text(a))) {
        if args.len() > 1 {
            return Err(ProfileError::Source(
                "a PostgreSQL source is profiled on its own; give one URL and no files".into(),
            ));
        }
        return postgres(&text(first), statement_timeout);
    }
    if args.len() == 1 && first.is_dir() {
        return folder(first);
    }
    if args.iter().all(|a| file_kind(&text(a)).is_some()) {
        let mut files = Vec::new();
        for a in args {
            let path = text(a);
            let is_glob = path.contains(['*', '?', '[']);
            if !is_glob {
                readable_file(a)?;
            }
            let parquet = file_kind(&path) == Some(true);
            files.push((stem(&path), TableRef::File { path, parquet }));
        }
        let default_name = (files.len() == 1).then(|| sanitize(&files[0].0));
        return Ok(Source {
            opener: Opener::DuckDbMemory,
            default_type: "duckdb",
            default_name,
            connection: vec![],
            files,
        });
    }
    if args.len() > 1 {
        return Err(ProfileError::Source(
            "several sources given; only CSV / Parquet files can be profiled together (one model each)".into(),
        ));
    }
    database_file(first)
}

fn cannot_read(path: &Path, cause: impl std::fmt::Display) -> ProfileError {
    ProfileError::Source(format!("cannot read {}: {cause}", path.display()))
}

/// Opens a source file, so a missing or unreadable one is bad input before anything runs.
fn readable_file(path: &Path) -> Result<std::fs::File, ProfileError> {
    let file = std::fs::File::open(path).map_err(|e| cannot_read(path, e))?;
    let meta = file.metadata().map_err(|e| cannot_read(path, e))?;
    if meta.is_file() {
        Ok(file)
    } else {
        Err(cannot_read(path, "not a file"))
    }
}

fn folder(dir: &Path) -> Result<Source, ProfileError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| cannot_read(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && file_kind(&p.to_string_lossy()).is_some())
        .collect();
    entries.sort();
    if entries.is_empty() {
        return Err(ProfileError::Source(format!(
            "{}: no CSV or Parquet files in this folder",
            dir.display()
        )));
    }
    let mut source = identify(&entries, None)?;
    source.default_name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| sanitize(&n.to_string_lossy())));
    Ok(source)
}

fn postgres(dsn: &str, statement_timeout: Option<Duration>) -> Result<Source, ProfileError> {
    let target = PgTarget::resolve(dsn, &ProcessEnv)
        .map_err(|e| ProfileError::Source(format!("PostgreSQL source: {e}")))?;
    let endpoint = target.endpoints.first();
    let connection = vec![
        (
            "host",
            Value::String(endpoint.map(|e| e.host.clone()).unwrap_or_default()),
        ),
        ("port", Value::from(endpoint.map_or(5432, |e| e.port))),
        ("database", Value::String(target.dbname.clone())),
        ("username", Value::String(target.user.clone())),
    ];
    Ok(Source {
        default_name: Some(sanitize(&target.dbname)),
        opener: Opener::Postgres(Box::new(PgSource {
            target,
            statement_timeout,
        })),
        default_type: "postgres",
        connection,
        files: vec![],
    })
}

fn mysql(url: &str, statement_timeout: Option<Duration>) -> Result<Source, ProfileError> {
    let target = MyTarget::resolve(url, &ProcessEnv)
        .map_err(|e| ProfileError::Source(format!("MySQL / MariaDB source: {e}")))?;
    let target_is_mariadb = target.scheme == "mariadb";
    let mut connection = match &target.socket {
        Some(socket) => vec![("socket", Value::String(socket.display().to_string()))],
        None => vec![
            ("host", Value::String(target.host.clone())),
            ("port", Value::from(target.port)),
        ],
    };
    connection.push((
        "database",
        Value::String(target.database.clone().unwrap_or_default()),
    ));
    connection.push(("username", Value::String(target.user.clone())));
    Ok(Source {
        default_name: Some(sanitize(target.database.as_deref().unwrap_or("mysql"))),
        opener: Opener::Mysql(Box::new(MySource {
            target,
            statement_timeout,
        })),
        default_type: if target_is_mariadb {
            "mariadb"
        } else {
            "mysql"
        },
        connection,
        files: vec![],
    })
}

fn database_file(path: &Path) -> Result<Source, ProfileError> {
    let mut head = [0u8; 16];
    let n = readable_file(path)?
        .read(&mut head)
        .map_err(|e| cannot_read(path, e))?;
    let display = path.to_string_lossy().into_owned();
    let default_name = Some(sanitize(&stem(&display)));
    let (opener, default_type) = if n == 16 && head == *SQLITE_MAGIC {
        (Opener::Sqlite(path.to_owned()), "sqlite")
    } else if n >= 12 && &head[8..12] == b"DUCK" {
        (Opener::DuckDbFile(path.to_owned()), "duckdb")
    } else {
        return Err(ProfileError::Source(format!(
            "{display}: not a DuckDB or SQLite database, and not a .csv / .parquet file (a server is a postgres:// or mysql:// URL)"
        )));
    };
    Ok(Source {
        opener,
        default_type,
        default_name,
        connection: vec![("database", Value::String(display))],
        files: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_model_names_come_from_stems() {
        assert_eq!(stem("data/orders.csv"), "orders");
        assert_eq!(stem("data/orders_*.parquet"), "orders");
        assert_eq!(stem("x/*.csv"), "files");
    }
}
