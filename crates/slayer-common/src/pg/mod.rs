//! PostgreSQL connections, as libpq makes them: where the server is ([`dsn`]: a URL or a
//! `key=value` string, libpq's environment and password file), TLS with libpq's `sslmode`
//! meanings ([`tls`]), and [`connect`], which opens one synchronous client. Shared by
//! slayer-profile's PostgreSQL source and the store on a server.

pub mod dsn;
pub mod tls;

use postgres::{Client, NoTls};

use dsn::{PgTarget, SslMode};

/// Connects to `target`, trying each host in turn. The error is one line with the password
/// scrubbed out: the message is the value (the driver's error types carry the password, so
/// only the scrubbed text may leave here).
pub fn connect(target: &PgTarget) -> Result<Client, String> {
    let mut config = postgres::Config::new();
    for endpoint in &target.endpoints {
        if endpoint.is_socket() {
            config.host_path(&endpoint.host);
        } else {
            config.host(&endpoint.host);
        }
        config.port(endpoint.port);
    }
    config
        .user(&target.user)
        .dbname(&target.dbname)
        .application_name(&target.application_name);
    if let Some(password) = target.password() {
        config.password(password);
    }
    if let Some(timeout) = target.connect_timeout {
        config.connect_timeout(timeout);
    }
    // libpq ignores sslmode on unix-domain sockets, where the server offers no TLS.
    let all_sockets = target.endpoints.iter().all(|e| e.is_socket());
    if all_sockets || target.sslmode == SslMode::Disable {
        config.ssl_mode(postgres::config::SslMode::Disable);
        config.connect(NoTls)
    } else {
        config.ssl_mode(match target.sslmode {
            SslMode::Disable | SslMode::Allow | SslMode::Prefer => {
                postgres::config::SslMode::Prefer
            }
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        });
        let connector = tls::connector(target).map_err(|e| target.scrub(&e.to_string()))?;
        config.connect(connector)
    }
    .map_err(|e| target.scrub(&describe(&e)))
}

/// A driver error as one line: the server's own message when there is one, else the driver's
/// text followed by each cause it does not already name (a TLS failure says why only there).
pub fn describe(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => {
            let mut text = e.to_string();
            for cause in std::iter::successors(std::error::Error::source(e), |c| c.source()) {
                let cause = cause.to_string();
                if !text.contains(&cause) {
                    text.push_str(": ");
                    text.push_str(&cause);
                }
            }
            text
        }
    };
    text.lines().next().unwrap_or("").to_owned()
}
