//! The DSN parsing, environment, password-file and redaction rules, without a server.

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
