//! Where a PostgreSQL source is: a `postgres://` / `postgresql://` URL or a `key=value`
//! connection string, completed from libpq's environment (`PGHOST`, `PGPORT`, `PGUSER`,
//! `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGCONNECT_TIMEOUT`,
//! `PGAPPNAME`, `PGPASSFILE`) and the password file, the way libpq does.
//!
//! The password is kept out of every `Display`: [`PgTarget::masked`] is the only way the target
//! is shown, and [`PgTarget::scrub`] removes it from any text a server or library hands back.
//!
//! The two text forms are parsed in [`parse`], the password file is read in [`passfile`].

mod parse;
mod passfile;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use parse::{encode, parse_keywords, parse_url};
use passfile::password_from_file;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain text only.
    Disable,
    /// Plain text; TLS when the server insists (treated as `prefer`).
    Allow,
    /// TLS when the server offers it, certificate not checked (libpq's default).
    Prefer,
    /// TLS or nothing; the certificate is checked only when a root certificate is given.
    Require,
    /// TLS, certificate chain checked against the root certificate.
    VerifyCa,
    /// TLS, chain and host name checked.
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// One server address: a host name or IP, or a unix-socket directory (an absolute path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name, IP address, or socket directory.
    pub host: String,
    /// Port (for a socket, the number in its file name).
    pub port: u16,
}

impl Endpoint {
    /// Whether this is a unix-domain socket (libpq: a host that starts with `/`).
    pub fn is_socket(&self) -> bool {
        self.host.starts_with('/')
    }
}

/// A complete PostgreSQL connection target.
#[derive(Clone, PartialEq, Eq)]
pub struct PgTarget {
    /// Servers to try in order (libpq's comma-separated hosts).
    pub endpoints: Vec<Endpoint>,
    /// Role name.
    pub user: String,
    /// Password, if any (DSN, `PGPASSWORD` or the password file).
    password: Option<String>,
    /// Database name.
    pub dbname: String,
    /// TLS mode.
    pub sslmode: SslMode,
    /// Root certificate file (PEM), or `system` for the bundled web roots.
    pub sslrootcert: Option<String>,
    /// Connection timeout.
    pub connect_timeout: Option<Duration>,
    /// `application_name` the server shows.
    pub application_name: String,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked())
    }
}

/// Bad connection input, always naming the parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DsnError(pub String);

const ENV: &[(&str, &str)] = &[
    ("host", "PGHOST"),
    ("port", "PGPORT"),
    ("user", "PGUSER"),
    ("password", "PGPASSWORD"),
    ("dbname", "PGDATABASE"),
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("application_name", "PGAPPNAME"),
    ("passfile", "PGPASSFILE"),
];

/// Whether a command-line source names a server rather than a file: anything with `://`, or a
/// `key=value` string (a word, then `=`) that is not a file's name. Such a source is parsed as a
/// connection, so a mistyped one is an error naming the problem, never echoed as a file name
/// (it may hold a password).
pub fn looks_like_dsn(arg: &str) -> bool {
    let keyword = arg.split_once('=').is_some_and(|(key, _)| {
        let key = key.trim();
        !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    (arg.contains("://") || keyword) && !Path::new(arg).exists()
}

/// What the process environment supplies (a seam for tests).
pub trait Environment {
    /// A variable's value, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
    /// The home directory.
    fn home(&self) -> Option<PathBuf>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }
}

impl PgTarget {
    /// Parses `dsn` and completes it from `env`, like libpq.
    pub fn resolve(dsn: &str, env: &dyn Environment) -> Result<PgTarget, DsnError> {
        Self::resolve_as(dsn, env, "slayer-profile")
    }

    /// [`PgTarget::resolve`], with `application` as the `application_name` the server shows
    /// when neither the string nor `PGAPPNAME` names one.
    pub fn resolve_as(
        dsn: &str,
        env: &dyn Environment,
        application: &str,
    ) -> Result<PgTarget, DsnError> {
        Self::resolve_unredacted(dsn, env, application).map_err(|e| redact(e, dsn))
    }

    fn resolve_unredacted(
        dsn: &str,
        env: &dyn Environment,
        application: &str,
    ) -> Result<PgTarget, DsnError> {
        let mut params = if let Some((scheme, _)) = dsn.split_once("://") {
            if scheme != "postgres" && scheme != "postgresql" {
                return Err(DsnError(format!(
                    "unknown URL scheme '{scheme}': a PostgreSQL URL starts with postgres:// or postgresql://"
                )));
            }
            parse_url(dsn)?
        } else {
            parse_keywords(dsn)?
        };
        // An empty password is no password (libpq then reads the password file).
        params.retain(|k, v| k != "password" || !v.is_empty());
        let explicit_sslmode = params.contains_key("sslmode");
        for (key, var) in ENV {
            if !params.contains_key(*key) {
                if let Some(value) = env.var(var) {
                    params.insert((*key).to_owned(), value);
                }
            }
        }
        let user = match params.remove("user") {
            Some(u) => u,
            None => env.var("USER").or_else(|| env.var("LOGNAME")).ok_or_else(|| {
                DsnError("no PostgreSQL user: name one in the URL (postgres://USER@host/db) or set PGUSER".into())
            })?,
        };
        let dbname = params.remove("dbname").unwrap_or_else(|| user.clone());
        let endpoints = endpoints(
            params.remove("host").as_deref(),
            params.remove("port").as_deref(),
        )?;
        let system_roots = params.get("sslrootcert").map(String::as_str) == Some("system")
            || (!params.contains_key("sslrootcert")
                && env.var("PGSSLROOTCERT").as_deref() == Some("system"));
        let sslmode = match params.remove("sslmode") {
            // libpq 16: the public web roots prove a name, not a server; nothing less will do.
            None if system_roots => SslMode::VerifyFull,
            None => SslMode::Prefer,
            Some(m) => SslMode::parse(&m).ok_or_else(|| {
                DsnError(format!(
                    "invalid sslmode '{m}': use disable, allow, prefer, require, verify-ca or verify-full"
                ))
            })?,
        };
        if system_roots && sslmode != SslMode::VerifyFull {
            return Err(DsnError(format!(
                "weak sslmode {} may not be used with sslrootcert=system: use verify-full{}",
                sslmode.name(),
                if explicit_sslmode { "" } else { " (PGSSLMODE)" }
            )));
        }
        let connect_timeout = match params.remove("connect_timeout") {
            None => None,
            Some(t) => {
                let secs: u64 = t.trim().parse().map_err(|_| {
                    DsnError(format!("invalid connect_timeout '{t}': give whole seconds"))
                })?;
                // libpq: zero or negative means wait forever; under 2 s is raised to 2 s.
                (secs > 0).then(|| Duration::from_secs(secs.max(2)))
            }
        };
        let passfile = params.remove("passfile");
        let mut target = PgTarget {
            endpoints,
            user,
            password: params.remove("password"),
            dbname,
            sslmode,
            sslrootcert: params.remove("sslrootcert"),
            connect_timeout,
            application_name: params
                .remove("application_name")
                .unwrap_or_else(|| application.into()),
        };
        if target.password.is_none() {
            let file = passfile
                .map(PathBuf::from)
                .or_else(|| env.home().map(|h| h.join(".pgpass")));
            if let Some(file) = file {
                target.password = password_from_file(&file, &target);
            }
        }
        Ok(target)
    }

    /// The password, for the connection only.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The target as a URL with the password replaced by `****`: the only way it is shown.
    pub fn masked(&self) -> String {
        let mut url = format!("postgres://{}", encode(&self.user));
        if self.password.is_some() {
            url.push_str(":****");
        }
        url.push('@');
        let hosts: Vec<String> = self
            .endpoints
            .iter()
            .map(|e| {
                let host = if e.host.contains(':') && !e.is_socket() {
                    format!("[{}]", e.host)
                } else {
                    encode(&e.host)
                };
                format!("{host}:{}", e.port)
            })
            .collect();
        url.push_str(&hosts.join(","));
        url.push('/');
        url.push_str(&encode(&self.dbname));
        if self.sslmode != SslMode::Prefer {
            url.push_str("?sslmode=");
            url.push_str(self.sslmode.name());
        }
        url
    }

    /// `text` with every occurrence of the password (raw or URL-encoded) replaced by `****`.
    pub fn scrub(&self, text: &str) -> String {
        match self.password.as_deref().filter(|p| !p.is_empty()) {
            None => text.to_owned(),
            Some(p) => text.replace(p, "****").replace(&encode(p), "****"),
        }
    }
}

/// libpq's default host: its compiled-in socket directory (Debian's, else upstream's).
fn default_host() -> String {
    let debian = "/var/run/postgresql";
    if Path::new(debian).is_dir() {
        debian.into()
    } else {
        "/tmp".into()
    }
}

fn endpoints(hosts: Option<&str>, ports: Option<&str>) -> Result<Vec<Endpoint>, DsnError> {
    let hosts: Vec<String> = match hosts {
        None => vec![default_host()],
        Some(h) => h
            .split(',')
            .map(|h| {
                if h.trim().is_empty() {
                    default_host()
                } else {
                    h.trim().to_owned()
                }
            })
            .collect(),
    };
    let ports: Vec<u16> = match ports {
        None => vec![5432],
        Some(p) => p
            .split(',')
            .map(|p| {
                let p = p.trim();
                if p.is_empty() {
                    return Ok(5432);
                }
                p.parse().map_err(|_| {
                    DsnError(format!("invalid port '{p}': give a number from 1 to 65535"))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    if ports.len() != 1 && ports.len() != hosts.len() {
        return Err(DsnError(format!(
            "{} hosts but {} ports: give one port, or one per host",
            hosts.len(),
            ports.len()
        )));
    }
    Ok(hosts
        .into_iter()
        .enumerate()
        .map(|(i, host)| Endpoint {
            host,
            port: ports[if ports.len() == 1 { 0 } else { i }],
        })
        .collect())
}

/// A parse error of a source that may hold a password keeps no quoted text of it.
fn redact(error: DsnError, dsn: &str) -> DsnError {
    let userinfo_password = dsn.split_once("://").is_some_and(|(_, rest)| {
        rest.contains('@') && rest.split('@').next().is_some_and(|u| u.contains(':'))
    });
    if !userinfo_password && !dsn.to_ascii_lowercase().contains("password") {
        return error;
    }
    // Every value a message quotes is in single quotes: keep the quotes, drop what is inside.
    let mut out = String::new();
    let mut quoted = false;
    for c in error.0.chars() {
        if c == '\'' {
            if !quoted {
                out.push_str("'…'");
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(c);
        }
    }
    DsnError(out)
}
