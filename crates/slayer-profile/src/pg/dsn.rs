//! Where a PostgreSQL source is: a `postgres://` / `postgresql://` URL or a `key=value`
//! connection string, completed from libpq's environment (`PGHOST`, `PGPORT`, `PGUSER`,
//! `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGCONNECT_TIMEOUT`,
//! `PGAPPNAME`, `PGPASSFILE`) and the password file, the way libpq does.
//!
//! The password is kept out of every `Display`: [`PgTarget::masked`] is the only way the target
//! is shown, and [`PgTarget::scrub`] removes it from any text a server or library hands back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

const KEYS: &[&str] = &[
    "host",
    "port",
    "user",
    "password",
    "dbname",
    "sslmode",
    "sslrootcert",
    "connect_timeout",
    "application_name",
    "passfile",
];

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
        Self::resolve_unredacted(dsn, env).map_err(|e| redact(e, dsn))
    }

    fn resolve_unredacted(dsn: &str, env: &dyn Environment) -> Result<PgTarget, DsnError> {
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
                .unwrap_or_else(|| "slayer-profile".into()),
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

fn decode(text: &str, what: &str) -> Result<String, DsnError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| DsnError(format!("invalid percent-encoding in the URL's {what}")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        DsnError(format!(
            "the URL's {what} is not UTF-8 after percent-decoding"
        ))
    })
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn check_key(key: &str) -> Result<(), DsnError> {
    if KEYS.contains(&key) {
        Ok(())
    } else {
        Err(DsnError(format!(
            "unknown connection parameter '{key}': use {}",
            KEYS.join(", ")
        )))
    }
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

/// `postgres[ql]://[user[:password]@][host][:port][,…][/dbname][?key=value&…]`.
fn parse_url(url: &str) -> Result<BTreeMap<String, String>, DsnError> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    if let Some(at) = rest.rfind('@') {
        if rest[..at].contains(['/', '?']) {
            return Err(DsnError(
                "the URL has a / or ? before its @: percent-encode them in the user name and \
                 password (/ is %2F, ? is %3F, @ is %40, : is %3A)"
                    .into(),
            ));
        }
    }
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut params = BTreeMap::new();
    let (userinfo, hostlist) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        if !user.is_empty() {
            params.insert("user".into(), decode(user, "user")?);
        }
        if let Some(p) = password {
            params.insert("password".into(), decode(p, "password")?);
        }
    }
    if !hostlist.is_empty() {
        let mut hosts = Vec::new();
        let mut ports = Vec::new();
        for item in hostlist.split(',') {
            let (host, port) = if let Some(v6) = item.strip_prefix('[') {
                let (h, after) = v6.split_once(']').ok_or_else(|| {
                    DsnError("unclosed '[' around an IPv6 address in the URL".into())
                })?;
                (h.to_owned(), after.strip_prefix(':').unwrap_or(""))
            } else {
                match item.rsplit_once(':') {
                    Some((h, p)) => (decode(h, "host")?, p),
                    None => (decode(item, "host")?, ""),
                }
            };
            hosts.push(host);
            ports.push(port.to_owned());
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            params.insert("host".into(), hosts.join(","));
        }
        if ports.iter().any(|p| !p.is_empty()) {
            params.insert("port".into(), ports.join(","));
        }
    }
    if !path.is_empty() {
        params.insert("dbname".into(), decode(path, "database name")?);
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| DsnError("a URL parameter has no value: write key=value".into()))?;
        let key = decode(key, "parameters")?;
        check_key(&key)?;
        params.insert(key, decode(value, "parameters")?);
    }
    Ok(params)
}

/// `key=value key2='quoted value'` with libpq's quoting (`\'` and `\\` inside quotes).
fn parse_keywords(text: &str) -> Result<BTreeMap<String, String>, DsnError> {
    let mut params = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(DsnError(format!(
                "connection string: '{key}' is not followed by '=' (write key=value)"
            )));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(DsnError(format!(
                    "connection string: the quoted value of '{key}' is not closed"
                )));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    value.extend(chars.next());
                } else {
                    value.push(c);
                    chars.next();
                }
            }
        }
        check_key(&key)?;
        params.insert(key, value);
    }
    Ok(params)
}

/// The first matching line of a libpq password file
/// (`hostname:port:database:username:password`, `*` matches anything, `\` escapes). As libpq
/// does, a file that others may read is ignored, and a socket connection matches `localhost`.
fn password_from_file(path: &Path, target: &PgTarget) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let endpoint = target.endpoints.first()?;
    // libpq: its default socket directory reads as `localhost`; any other path as itself.
    let host = if endpoint.is_socket() && endpoint.host == default_host() {
        "localhost".to_owned()
    } else {
        endpoint.host.clone()
    };
    let port = endpoint.port.to_string();
    let wanted = [host.as_str(), port.as_str(), &target.dbname, &target.user];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            if fields.len() < 5 {
                return None;
            }
            let matches = fields[..4]
                .iter()
                .zip(wanted)
                .all(|((field, escaped), want)| (field == "*" && !escaped) || field == want);
            matches.then(|| fields[4].0.clone())
        })
}

/// The fields of a password-file line, each with whether it held an escape (so `\*` is a
/// literal star, not the wildcard).
fn split_pgpass(line: &str) -> Vec<(String, bool)> {
    let mut fields = vec![(String::new(), false)];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        let Some((field, escaped)) = fields.last_mut() else {
            break;
        };
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    field.push(next);
                    *escaped = true;
                }
            }
            ':' => fields.push((String::new(), false)),
            c => field.push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct FakeEnv(HashMap<&'static str, String>, Option<PathBuf>);

    impl Environment for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn home(&self) -> Option<PathBuf> {
            self.1.clone()
        }
    }

    fn env(vars: &[(&'static str, &str)]) -> FakeEnv {
        FakeEnv(
            vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
            None,
        )
    }

    #[test]
    fn urls_parse_like_libpq() {
        let t = PgTarget::resolve(
            "postgresql://al%40ice:p%3Ass@db.example.com:6543/sales%20db?sslmode=verify-full&connect_timeout=1",
            &env(&[]),
        )
        .unwrap();
        assert_eq!(t.user, "al@ice");
        assert_eq!(t.password(), Some("p:ss"));
        assert_eq!(t.dbname, "sales db");
        assert_eq!(
            t.endpoints,
            vec![Endpoint {
                host: "db.example.com".into(),
                port: 6543
            }]
        );
        assert_eq!(t.sslmode, SslMode::VerifyFull);
        assert_eq!(t.connect_timeout, Some(Duration::from_secs(2)));
        assert_eq!(
            t.masked(),
            "postgres://al%40ice:****@db.example.com:6543/sales%20db?sslmode=verify-full"
        );
    }

    #[test]
    fn socket_hosts_and_ipv6_and_lists() {
        let t = PgTarget::resolve("postgres://u@%2Ftmp%2Fpg:5433/d", &env(&[])).unwrap();
        assert!(t.endpoints[0].is_socket());
        assert_eq!(t.endpoints[0].host, "/tmp/pg");
        assert_eq!(t.masked(), "postgres://u@%2Ftmp%2Fpg:5433/d");
        let t = PgTarget::resolve("postgres://u@[::1]:7,h2/d", &env(&[])).unwrap();
        assert_eq!(t.endpoints[0].host, "::1");
        assert_eq!(t.endpoints[1].host, "h2");
        assert_eq!(t.endpoints[1].port, 5432);
        let t = PgTarget::resolve("postgres://u@/d?host=/run/pg&port=6000", &env(&[])).unwrap();
        assert_eq!(t.endpoints[0].host, "/run/pg");
        assert_eq!(t.endpoints[0].port, 6000);
    }

    #[test]
    fn the_environment_fills_what_the_dsn_leaves_out() {
        let e = env(&[
            ("PGHOST", "/sock"),
            ("PGPORT", "5999"),
            ("PGUSER", "env_user"),
            ("PGPASSWORD", "env-secret"),
            ("PGDATABASE", "env_db"),
            ("PGSSLMODE", "require"),
        ]);
        let t = PgTarget::resolve("postgres://", &e).unwrap();
        assert_eq!((t.user.as_str(), t.dbname.as_str()), ("env_user", "env_db"));
        assert_eq!(t.password(), Some("env-secret"));
        assert_eq!(t.endpoints[0].port, 5999);
        assert_eq!(t.sslmode, SslMode::Require);
        // What the DSN says wins.
        let t = PgTarget::resolve("postgres://other@/mine", &e).unwrap();
        assert_eq!((t.user.as_str(), t.dbname.as_str()), ("other", "mine"));
        // The database defaults to the user's name.
        let t = PgTarget::resolve("user=solo host=/s", &env(&[])).unwrap();
        assert_eq!(t.dbname, "solo");
    }

    #[test]
    fn keyword_strings_quote_and_escape() {
        let t = PgTarget::resolve(
            r"host=/s user=u password='it\'s x' dbname='my db'",
            &env(&[]),
        )
        .unwrap();
        assert_eq!(t.password(), Some("it's x"));
        assert_eq!(t.dbname, "my db");
    }

    #[test]
    fn bad_input_names_the_parameter() {
        let e = env(&[("USER", "u")]);
        let err = |dsn: &str| PgTarget::resolve(dsn, &e).unwrap_err().0;
        assert!(err("postgres://h/d?sslmode=sometimes").contains("invalid sslmode 'sometimes'"));
        assert!(err("postgres://h:99999/d").contains("invalid port '99999'"));
        assert!(err("postgres://h/d?colour=red").contains("unknown connection parameter 'colour'"));
        assert!(err("host=/s dbname").contains("'dbname' is not followed by '='"));
        assert!(err("postgres://h/d?connect_timeout=soon").contains("connect_timeout"));
        assert!(PgTarget::resolve("postgres://h/d", &env(&[]))
            .unwrap_err()
            .0
            .contains("set PGUSER"));
    }

    #[test]
    fn sources_that_name_a_server() {
        assert!(looks_like_dsn("postgres://"));
        assert!(looks_like_dsn("postgresql://h/d"));
        assert!(looks_like_dsn("Postgres://u:pw@h/d"));
        assert!(looks_like_dsn("host=/s dbname=d"));
        assert!(looks_like_dsn("hostaddr=10.0.0.5 password=x"));
        assert!(looks_like_dsn("dbname = d"));
        assert!(!looks_like_dsn("data/a=b.csv"));
        assert!(!looks_like_dsn("warehouse.duckdb"));
    }

    #[test]
    fn errors_of_a_source_with_a_password_quote_nothing_from_it() {
        let e = env(&[("USER", "u")]);
        let err = |dsn: &str| PgTarget::resolve(dsn, &e).unwrap_err().0;
        for (dsn, secret) in [
            ("Postgres://u:s3cret@h/d", "s3cret"),
            ("postgres://u:qx/zy@h/d", "qx"),
            ("postgres://u:p?zq@h/d", "zq"),
            ("postgres://u:1234/5678@h/d", "5678"),
            (
                "hostaddr=10.0.0.5 user=u password=s3cret dbname=d",
                "hostaddr",
            ),
            ("host=h password=two words", "words"),
        ] {
            let message = err(dsn);
            assert!(!message.contains(secret), "{dsn}: {message}");
        }
        assert!(err("postgres://u:qx/zy@h/d").contains("percent-encode"));
        assert!(err("host=h password=x colour=red").contains("unknown connection parameter '…'"));
        // Without a password, the message quotes what it is about.
        assert!(err("host=h colour=red").contains("unknown connection parameter 'colour'"));
    }

    #[test]
    fn system_roots_demand_verify_full() {
        let e = env(&[("USER", "u")]);
        let t = PgTarget::resolve("postgres://h/d?sslrootcert=system", &e).unwrap();
        assert_eq!(t.sslmode, SslMode::VerifyFull);
        let err = PgTarget::resolve("postgres://h/d?sslrootcert=system&sslmode=require", &e)
            .unwrap_err()
            .0;
        assert!(
            err.contains("weak sslmode require may not be used with sslrootcert=system"),
            "{err}"
        );
    }

    #[test]
    fn the_password_is_never_shown() {
        let t = PgTarget::resolve("postgres://u:s%2Fe%20cret@h/d", &env(&[])).unwrap();
        assert_eq!(t.password(), Some("s/e cret"));
        assert!(!t.masked().contains("cret"));
        assert!(!format!("{t:?}").contains("cret"));
        assert_eq!(
            t.scrub("failed for postgres://u:s%2Fe%20cret@h and s/e cret"),
            "failed for postgres://u:****@h and ****"
        );
    }

    #[test]
    fn the_password_file_is_read_like_libpq() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".pgpass");
        std::fs::write(
            &file,
            "# comment\nother:*:*:*:nope\n/sock:5432:d:u:first\\:part:ignored\n\
             star\\*:*:*:*:literal\nlocalhost:*:*:*:default-socket\n*:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = FakeEnv(HashMap::new(), Some(dir.path().to_owned()));
        // A socket directory matches its own path; the password ends at the first bare `:`.
        let t = PgTarget::resolve("host=/sock user=u dbname=d", &e).unwrap();
        assert_eq!(t.password(), Some("first:part"));
        // Only the default socket directory reads as `localhost`.
        let t = PgTarget::resolve("host=/elsewhere user=u dbname=d", &e).unwrap();
        assert_eq!(t.password(), Some("fallback"));
        let t = PgTarget::resolve(&format!("host={} user=u dbname=d", default_host()), &e).unwrap();
        assert_eq!(t.password(), Some("default-socket"));
        // `\*` is a literal star.
        let t = PgTarget::resolve("host=star* user=u dbname=d", &e).unwrap();
        assert_eq!(t.password(), Some("literal"));
        let t = PgTarget::resolve("host=starry user=u dbname=d", &e).unwrap();
        assert_eq!(t.password(), Some("fallback"));
        // An empty password is none: the file is read.
        let t = PgTarget::resolve("postgres://u:@db/d", &e).unwrap();
        assert_eq!(t.password(), Some("fallback"));
        let t = PgTarget::resolve("host=db user=u dbname=d", &e).unwrap();
        assert_eq!(t.password(), Some("fallback"));
        // Readable by others: ignored, as libpq does.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = PgTarget::resolve("host=db user=u dbname=d", &e).unwrap();
        assert_eq!(t.password(), None);
    }
}
