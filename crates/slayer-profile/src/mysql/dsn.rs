//! Where a MySQL / MariaDB server is: `mysql://user:password@host:port/database?options` (or
//! `mariadb://`), completed as the server's own clients complete it: a URL without a host
//! (`mysql:///shop`) takes `MYSQL_HOST`, else the socket `MYSQL_UNIX_PORT`, else localhost, and
//! its port from `MYSQL_TCP_PORT`; the password from the URL, else `MYSQL_PWD`, else an option
//! file (`~/.my.cnf`, or `option-file=PATH`); the user from the URL, else the option file,
//! else the login name.
//!
//! Options: `socket=PATH` (a unix socket; also a host that is a percent-encoded path),
//! `ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY` (default PREFERRED: TLS
//! when the server offers it, over TCP), `ssl-ca=PATH` (the certificate authority the
//! VERIFY modes trust, else the web's roots), `connect-timeout=SECS` (default 10),
//! `option-file=PATH`. Anything else is an error naming it: a typo must not be ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use slayer_common::pg::dsn::Environment;

/// How TLS is used, as the MySQL clients' `--ssl-mode` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never.
    Disabled,
    /// When the server offers it (the certificate is not checked), else plain.
    Preferred,
    /// Always (the certificate is not checked).
    Required,
    /// Always, the certificate signed by a trusted authority.
    VerifyCa,
    /// Always, the certificate trusted and naming the host.
    VerifyIdentity,
}

/// A MySQL / MariaDB server, user and database. Its `Debug` is the masked URL: the password
/// is never shown.
#[derive(Clone)]
pub struct MyTarget {
    /// The URL's scheme (`mysql` or `mariadb`), kept for messages.
    pub scheme: String,
    /// The host name or address (empty over a unix socket).
    pub host: String,
    /// The TCP port.
    pub port: u16,
    /// The unix socket, when the server is reached through one.
    pub socket: Option<PathBuf>,
    /// The user.
    pub user: String,
    password: Option<String>,
    /// The database profiled; `None`: every database the user can see.
    pub database: Option<String>,
    /// TLS.
    pub ssl_mode: SslMode,
    /// The authority the VERIFY modes trust.
    pub ssl_ca: Option<PathBuf>,
    /// How long connecting may take.
    pub connect_timeout: Duration,
}

/// Why a URL cannot name a server.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MyDsnError(pub String);

/// The default port.
pub const DEFAULT_PORT: u16 = 3306;

/// Whether a command-line source is a MySQL / MariaDB URL.
pub fn is_mysql_url(arg: &str) -> bool {
    let lower = arg.trim_start().to_ascii_lowercase();
    lower.starts_with("mysql://") || lower.starts_with("mariadb://")
}

impl MyTarget {
    /// Reads `url`, completing it from `env` (`MYSQL_PWD`, the home directory's option file).
    pub fn resolve(url: &str, env: &dyn Environment) -> Result<MyTarget, MyDsnError> {
        let parsed = url::Url::parse(url.trim()).map_err(|e| {
            MyDsnError(format!(
                "not a valid URL ({e}); write mysql://user@host:port/database"
            ))
        })?;
        let scheme = parsed.scheme().to_ascii_lowercase();
        if scheme != "mysql" && scheme != "mariadb" {
            return Err(MyDsnError(format!("unknown scheme '{scheme}://'")));
        }
        let mut options = UrlOptions::default();
        for (key, value) in parsed.query_pairs() {
            options.set(&key, &value)?;
        }
        let host = decode(parsed.host_str().unwrap_or(""))?;
        let mut socket = options.socket.clone();
        let host = if host.starts_with('/') {
            socket.get_or_insert_with(|| PathBuf::from(&host));
            String::new()
        } else if !host.is_empty() || socket.is_some() {
            host
        } else if let Some(host) = env.var("MYSQL_HOST") {
            host
        } else if let Some(path) = env.var("MYSQL_UNIX_PORT") {
            socket = Some(PathBuf::from(path));
            String::new()
        } else {
            "localhost".to_owned()
        };
        let port = match (parsed.port(), env.var("MYSQL_TCP_PORT")) {
            (Some(port), _) => port,
            (None, Some(text)) => text
                .trim()
                .parse()
                .map_err(|_| MyDsnError(format!("MYSQL_TCP_PORT={text}: not a port number")))?,
            (None, None) => DEFAULT_PORT,
        };
        let option_file = options
            .option_file
            .clone()
            .or_else(|| env.home().map(|h| h.join(".my.cnf")));
        let from_file = match &option_file {
            Some(path) => read_option_file(path, options.option_file.is_some())?,
            None => ClientOptions::default(),
        };
        let url_user = decode(parsed.username())?;
        let user = Some(url_user)
            .filter(|u| !u.is_empty())
            .or(from_file.user)
            .or_else(|| env.var("USER"))
            .or_else(|| env.var("LOGNAME"))
            .ok_or_else(|| MyDsnError("no user: write mysql://USER@host/database".into()))?;
        let password = match parsed.password() {
            Some(p) => Some(decode(p)?),
            None => env.var("MYSQL_PWD").or(from_file.password),
        };
        let database = decode(parsed.path().trim_start_matches('/'))?;
        let database = Some(database)
            .filter(|d| !d.is_empty())
            .or(from_file.database);
        Ok(MyTarget {
            scheme,
            host,
            port,
            socket,
            user,
            password,
            database,
            ssl_mode: options.ssl_mode,
            ssl_ca: options.ssl_ca,
            connect_timeout: options.connect_timeout,
        })
    }

    /// The password, if any.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The URL without the password, for messages and the datasource record.
    pub fn masked(&self) -> String {
        let place = match &self.socket {
            Some(socket) => encode(&socket.to_string_lossy()),
            None => format!("{}:{}", self.host, self.port),
        };
        format!(
            "{}://{}@{place}/{}",
            self.scheme,
            encode(&self.user),
            self.database.as_deref().map(encode).unwrap_or_default()
        )
    }

    /// `text` with the password (plain or percent-encoded) replaced by `****`.
    pub fn scrub(&self, text: &str) -> String {
        match self.password.as_deref().filter(|p| !p.is_empty()) {
            None => text.to_owned(),
            Some(p) => text.replace(p, "****").replace(&encode(p), "****"),
        }
    }
}

impl std::fmt::Debug for MyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked())
    }
}

/// The options a URL's query may set.
struct UrlOptions {
    socket: Option<PathBuf>,
    ssl_mode: SslMode,
    ssl_ca: Option<PathBuf>,
    connect_timeout: Duration,
    option_file: Option<PathBuf>,
}

impl Default for UrlOptions {
    fn default() -> Self {
        UrlOptions {
            socket: None,
            ssl_mode: SslMode::Preferred,
            ssl_ca: None,
            connect_timeout: Duration::from_secs(10),
            option_file: None,
        }
    }
}

impl UrlOptions {
    fn set(&mut self, key: &str, value: &str) -> Result<(), MyDsnError> {
        match key.replace('_', "-").to_ascii_lowercase().as_str() {
            "socket" => self.socket = Some(PathBuf::from(value)),
            "ssl-mode" | "sslmode" => self.ssl_mode = ssl_mode(value)?,
            "ssl-ca" => self.ssl_ca = Some(PathBuf::from(value)),
            "option-file" | "defaults-file" => self.option_file = Some(PathBuf::from(value)),
            "connect-timeout" => {
                let secs: f64 = value.trim().parse().map_err(|_| {
                    MyDsnError(format!("connect-timeout={value}: not a number of seconds"))
                })?;
                if !secs.is_finite() || secs <= 0.0 || secs > 3600.0 {
                    return Err(MyDsnError(format!(
                        "connect-timeout={value}: must be above 0 and at most 3600 seconds"
                    )));
                }
                self.connect_timeout = Duration::from_secs_f64(secs);
            }
            "password" => {
                return Err(MyDsnError(
                    "a password option in the URL's query is not read; write it as \
                     mysql://user:PASSWORD@host/…, or better set MYSQL_PWD or ~/.my.cnf"
                        .into(),
                ))
            }
            other => {
                return Err(MyDsnError(format!(
                    "unknown option '{other}' in the URL; known: socket, ssl-mode, ssl-ca, \
                     connect-timeout, option-file"
                )))
            }
        }
        Ok(())
    }
}

fn ssl_mode(value: &str) -> Result<SslMode, MyDsnError> {
    Ok(
        match value.to_ascii_uppercase().replace('-', "_").as_str() {
            "DISABLED" | "DISABLE" => SslMode::Disabled,
            "PREFERRED" | "PREFER" => SslMode::Preferred,
            "REQUIRED" | "REQUIRE" => SslMode::Required,
            "VERIFY_CA" => SslMode::VerifyCa,
            "VERIFY_IDENTITY" | "VERIFY_FULL" => SslMode::VerifyIdentity,
            _ => {
                return Err(MyDsnError(format!(
                "ssl-mode={value}: use DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
            )))
            }
        },
    )
}

/// What an option file's client groups say.
#[derive(Debug, Default, PartialEq, Eq)]
struct ClientOptions {
    user: Option<String>,
    password: Option<String>,
    database: Option<String>,
}

/// The groups the MySQL and MariaDB command-line clients read.
const CLIENT_GROUPS: &[&str] = &[
    "client",
    "mysql",
    "mariadb",
    "client-server",
    "client-mariadb",
];

/// Reads `user`, `password` and `database` from an option file's client groups. A missing
/// default file is no options; a missing file the URL named is an error.
fn read_option_file(path: &Path, named: bool) -> Result<ClientOptions, MyDsnError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if !named && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ClientOptions::default())
        }
        Err(e) => {
            return Err(MyDsnError(format!(
                "cannot read the option file {}: {e}",
                path.display()
            )))
        }
    };
    Ok(parse_option_file(&text))
}

fn parse_option_file(text: &str) -> ClientOptions {
    let mut out = ClientOptions::default();
    let mut in_client = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';', '!']) {
            continue;
        }
        if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_client = CLIENT_GROUPS.contains(&group.trim().to_ascii_lowercase().as_str());
            continue;
        }
        if !in_client {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim().replace('_', "-").to_ascii_lowercase().as_str() {
            "user" => out.user = Some(value),
            "password" => out.password = Some(value),
            "database" => out.database = Some(value),
            _ => {}
        }
    }
    out
}

fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner.to_owned();
        }
    }
    value.to_owned()
}

fn decode(text: &str) -> Result<String, MyDsnError> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| MyDsnError("the URL holds a percent-encoded byte that is not UTF-8".into()))
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Env(Vec<(&'static str, &'static str)>, Option<PathBuf>);
    impl Environment for Env {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
        fn home(&self) -> Option<PathBuf> {
            self.1.clone()
        }
    }

    #[test]
    fn a_url_names_the_server_and_the_password_never_shows() {
        let env = Env(vec![("USER", "os-user")], None);
        let t = MyTarget::resolve("mysql://ann:p%40ss@db.example:3307/shop", &env).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("db.example", 3307));
        assert_eq!((t.user.as_str(), t.password()), ("ann", Some("p@ss")));
        assert_eq!(t.database.as_deref(), Some("shop"));
        assert_eq!(t.masked(), "mysql://ann@db.example:3307/shop");
        assert_eq!(format!("{t:?}"), t.masked());
        assert_eq!(t.scrub("bad p@ss and p%40ss"), "bad **** and ****");
        let t = MyTarget::resolve("mariadb://%2Ftmp%2Fx%2Fmy.sock/shop", &env).unwrap();
        assert_eq!(t.socket.as_deref(), Some(Path::new("/tmp/x/my.sock")));
        assert_eq!(t.user, "os-user");
        assert_eq!(t.masked(), "mariadb://os-user@%2Ftmp%2Fx%2Fmy.sock/shop");
    }

    #[test]
    fn the_password_comes_from_the_url_then_mysql_pwd_then_the_option_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".my.cnf"),
            "[mysqld]\npassword=not-this\n[client]\nuser = bob\npassword = \"from file\"\n",
        )
        .unwrap();
        let home = Some(dir.path().to_owned());
        let t = MyTarget::resolve("mysql://h/db", &Env(vec![], home.clone())).unwrap();
        assert_eq!((t.user.as_str(), t.password()), ("bob", Some("from file")));
        let env = Env(vec![("MYSQL_PWD", "from-env")], home.clone());
        assert_eq!(
            MyTarget::resolve("mysql://h/db", &env).unwrap().password(),
            Some("from-env")
        );
        assert_eq!(
            MyTarget::resolve("mysql://u:url@h/db", &env)
                .unwrap()
                .password(),
            Some("url")
        );
    }

    #[test]
    fn options_are_checked_by_name() {
        let env = Env(vec![("USER", "u")], None);
        let t = MyTarget::resolve("mysql://h/db?ssl-mode=verify_ca&ssl-ca=/ca.pem", &env).unwrap();
        assert_eq!(t.ssl_mode, SslMode::VerifyCa);
        let e = MyTarget::resolve("mysql://h/db?sslmod=required", &env).unwrap_err();
        assert!(e.0.contains("unknown option 'sslmod'"), "{e}");
        let e = MyTarget::resolve("mysql://h/db?ssl-mode=sometimes", &env).unwrap_err();
        assert!(e.0.contains("ssl-mode=sometimes"), "{e}");
        let e =
            MyTarget::resolve("mysql://h/db?option-file=/nonexistent/my.cnf", &env).unwrap_err();
        assert!(e.0.contains("/nonexistent/my.cnf"), "{e}");
        assert!(is_mysql_url("MariaDB://x/y") && !is_mysql_url("postgres://x/y"));
    }

    #[test]
    fn a_url_without_a_host_takes_the_clients_variables() {
        let env = Env(
            vec![("USER", "u"), ("MYSQL_UNIX_PORT", "/run/my.sock")],
            None,
        );
        let t = MyTarget::resolve("mysql:///shop", &env).unwrap();
        assert_eq!(t.socket.as_deref(), Some(Path::new("/run/my.sock")));
        assert_eq!(t.database.as_deref(), Some("shop"));
        let env = Env(
            vec![
                ("USER", "u"),
                ("MYSQL_HOST", "db"),
                ("MYSQL_TCP_PORT", "3310"),
            ],
            None,
        );
        let t = MyTarget::resolve("mysql:///shop", &env).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.socket.is_none()),
            ("db", 3310, true)
        );
    }
}
