//! slayer-profile against a real MariaDB server (mariadb_server.rs starts one per test process
//! in a temp dir): introspection of the fixture (the shop's tables and the odd cases), MySQL's
//! types, the same samples as the CSV files, one connection per worker, the password's
//! sources and its absence from every output stream, TLS, and every bad input the issue names:
//! a wrong password, an unreachable host, a missing privilege, a table dropped and a connection
//! killed while profiling, a statement past its timeout.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mariadb_server::{MariaServer, FIXTURE_DB, PARTIAL_READER, READER, READER_PASSWORD};
use crate::pg_server::percent_encode;
use crate::support::Run;

/// Runs slayer-profile with no MySQL variables of the caller's and no option file (HOME is
/// empty), plus `env`; checks that the reader's password is in no output stream.
fn profile(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = crate::kit::command("slayer-profile");
    cmd.env_remove("MYSQL_PWD")
        .env("HOME", "/nonexistent")
        .envs(env.iter().copied())
        .args(args);
    let out = crate::kit::output(cmd, None);
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        for secret in [READER_PASSWORD.to_owned(), percent_encode(READER_PASSWORD)] {
            assert!(
                !text.contains(&secret),
                "the password appears on {stream}:\n{text}"
            );
        }
    }
    Run::of(out, args)
}

fn reader_url(server: &MariaServer) -> String {
    server.socket_url(FIXTURE_DB, READER, None)
}

/// The fixture profiled over the socket, the password from MYSQL_PWD.
fn fixture_run(extra: &[&str]) -> (&'static MariaServer, Run) {
    let server = MariaServer::shared();
    let url = reader_url(server);
    let mut args = vec![url.as_str(), "--no-progress"];
    args.extend_from_slice(extra);
    let run = profile(&args, &[("MYSQL_PWD", READER_PASSWORD)]);
    (server, run)
}

fn warnings(r: &Run) -> Vec<&str> {
    r.stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect()
}

#[test]
fn the_fixture_becomes_one_model_per_table_and_view() {
    let (server, r) = fixture_run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.records[0],
        json!({"kind": "datasource", "name": "fixture", "type": "mysql",
               "socket": server.socket.to_str().unwrap(),
               "database": "fixture", "username": "slayer_reader"})
    );
    assert_eq!(
        r.model_names(),
        [
            "Order",
            "customers",
            "dated",
            "kinds",
            "no_key",
            "order_items",
            "orders",
            "payments",
            "products",
            "red_kinds",
            "secret",
            "stores",
            "supplies"
        ]
    );
    assert_eq!(r.model("red_kinds")["source_kind"], "view");
    assert_eq!(r.model("orders")["source_kind"], "table");
    assert_eq!(
        r.model("customers")["description"],
        "One row per customer of the shop"
    );
    assert_eq!(
        r.column("customers", "name")["description"],
        "Full name as given at sign-up"
    );
    // Keys become the primary-key flags and joins.
    assert_eq!(r.column("orders", "order_id")["primary_key"], true);
    let joins = &r.model("orders")["joins"];
    assert_eq!(
        joins,
        &json!([
            {"target_model": "customers", "join_pairs": [["customer_id", "customer_id"]]},
            {"target_model": "stores", "join_pairs": [["store_id", "store_id"]]}
        ]),
        "{joins}"
    );
    assert!(r.model("no_key").get("joins").is_none());
    assert!(r.model("supplies")["columns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c.get("primary_key").is_none() || c["primary_key"] == false));
}

#[test]
fn mysql_types_and_odd_names_profile_as_the_other_engines_print() {
    let (_, r) = fixture_run(&["--tables", "Order,dated,kinds,no_key"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.column_types("kinds"),
        [
            ("id", "INT"),
            ("flag", "BOOLEAN"),
            ("colour", "TEXT"),
            ("tags", "TEXT"),
            ("price", "DOUBLE"),
            ("ratio", "DOUBLE"),
            ("big_number", "INT"),
            ("raw", "UNKNOWN"),
            ("doc", "TEXT"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    let sampled = |m: &str, c: &str| r.column(m, c)["sampled"].clone();
    assert_eq!(sampled("kinds", "flag"), "True, False");
    assert_eq!(sampled("kinds", "colour"), "red, green");
    assert_eq!(sampled("kinds", "tags"), ", x,y, z");
    assert_eq!(sampled("kinds", "price"), "0.0 .. 100.5");
    assert_eq!(sampled("kinds", "big_number"), "0 .. 18446744073709551615");
    // Zero dates are no dates; times of day print as text, timestamps as the other engines.
    assert_eq!(sampled("dated", "d"), "1969-07-20 .. 2021-03-04");
    assert_eq!(
        sampled("dated", "ts"),
        "1969-07-20 20:17:40 .. 2022-12-31 23:59:59"
    );
    assert_eq!(sampled("dated", "t"), "00:00:01 .. 23:59:59");
    assert_eq!(sampled("dated", "y"), "1999 .. 2030");
    // Values are told apart by their bytes, as DuckDB and PostgreSQL tell them: a
    // case-insensitive, space-padding collation does not merge them.
    let mixed = r.column("Order", "MixedCase");
    assert_eq!(mixed["distinct_count"], 4, "{mixed}");
    assert_eq!(
        mixed["sampled_values"],
        json!(["Alpha", "Alpha ", "Beta", "alpha"])
    );
    assert_eq!(
        r.column("Order", "Note")["sampled_values"],
        json!(["naïve café 🍰", "日本語のテキスト"])
    );
    assert_eq!(r.column("Order", "select")["sampled"], "a, b");
    // Written as MySQL writes a name that needs quoting.
    assert_eq!(r.model("Order")["sql_table"], "`Order`");
    assert_eq!(sampled("no_key", "amount"), "-2.25 .. 1.5");
}

/// The shop's tables in MariaDB give the samples the CSV files give through DuckDB, column for
/// column (the key columns aside: a primary key is not profiled).
#[test]
fn the_shop_tables_sample_as_the_csv_files_do() {
    let shop = ["orders", "payments", "stores", "supplies", "order_items"];
    let (_, my) = fixture_run(&["--tables", &shop.join(",")]);
    assert_eq!(my.code, 0, "{}", my.stderr);
    let data = crate::kit::workspace_root().join("examples/shop/data");
    let csv = profile(
        &[
            data.to_str().unwrap(),
            "--no-progress",
            "--datasource",
            "fixture",
            "--tables",
            &shop.join(","),
        ],
        &[],
    );
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    let mut compared = 0;
    for model in shop {
        for column in my.model(model)["columns"].as_array().unwrap() {
            if column["primary_key"] == true {
                continue;
            }
            let name = column["name"].as_str().unwrap();
            let theirs = csv.column(model, name);
            for field in ["type", "sampled", "sampled_values", "distinct_count"] {
                assert_eq!(
                    column.get(field),
                    theirs.get(field),
                    "{model}.{name} {field}"
                );
            }
            compared += 1;
        }
    }
    assert!(compared >= 20, "{compared}");
}

#[test]
fn threads_open_one_connection_each_and_agree() {
    let (_, one) = fixture_run(&["--threads", "1"]);
    let (_, four) = fixture_run(&["--threads", "4"]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(one.records, four.records);
}

#[test]
fn the_password_comes_from_the_url_mysql_pwd_or_an_option_file() {
    let server = MariaServer::shared();
    let with_password = server.socket_url(FIXTURE_DB, READER, Some(READER_PASSWORD));
    let r = profile(&[&with_password, "--tables", "stores"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("put it in MYSQL_PWD or ~/.my.cnf instead"),
        "{}",
        r.stderr
    );
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".my.cnf"),
        format!("[client]\npassword = \"{READER_PASSWORD}\"\n"),
    )
    .unwrap();
    let url = reader_url(server);
    let r = profile(
        &[&url, "--tables", "stores"],
        &[("HOME", home.path().to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.model_names(), ["stores"]);
}

#[test]
fn a_wrong_password_or_an_unreachable_host_reads_nothing_and_exits_2() {
    let server = MariaServer::shared();
    let url = server.tcp_url(FIXTURE_DB, READER, "not-the-password");
    let r = profile(&[&url], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains(&format!(
            "cannot open mysql://slayer_reader@127.0.0.1:{}/fixture: ",
            server.port
        )) && r.stderr.contains("Access denied"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("not-the-password"), "{}", r.stderr);
    let started = Instant::now();
    let r = profile(
        &["mysql://someone@127.0.0.1:1/db?connect-timeout=5"],
        &[("MYSQL_PWD", READER_PASSWORD)],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot open mysql://someone@127.0.0.1:1/db: "),
        "{}",
        r.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(8));
    let r = profile(&["mysql://someone@host/db?sslmode=sometimes"], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("ssl-mode=sometimes"), "{}", r.stderr);
}

#[test]
fn a_table_the_user_may_not_read_is_a_warning_and_the_rest_is_written() {
    let server = MariaServer::shared();
    let url = server.socket_url(FIXTURE_DB, PARTIAL_READER, None);
    let r = profile(&[&url, "--no-progress"], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("warning: fixture.secret: profiling unavailable: ")
            && w[0].contains("SELECT command denied"),
        "{w:?}"
    );
    assert!(r.model_names().contains(&"secret"));
    assert!(r.column("orders", "status")["sampled"]
        .as_str()
        .unwrap()
        .contains("completed"));
}

/// A client session holding `LOCK TABLES <table> WRITE` in `db`: profiling that table waits
/// for it, so a test can act while the profiler is in the middle.
struct Locker {
    child: Child,
}

impl Locker {
    fn lock(server: &MariaServer, db: &str, table: &str) -> Locker {
        // --unbuffered: each answer is flushed, so the line below arrives.
        let mut child = Command::new("mariadb")
            .args(["--no-defaults", "--unbuffered", "-N", "-B", "-uroot", "-S"])
            .arg(&server.socket)
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.as_mut().unwrap();
        writeln!(stdin, "LOCK TABLES {table} WRITE; SELECT 'locked';").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Locker { child }
    }

    fn send(&mut self, sql: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}").unwrap();
        stdin.flush().unwrap();
    }

    fn finish(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The id of the reader's connection that waits for a lock, once it does.
fn waiting_connection(server: &MariaServer, db: &str) -> String {
    let started = Instant::now();
    loop {
        let ids = server.run(
            None,
            &format!(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{db}' \
                 AND STATE LIKE 'Waiting for table metadata lock%'"
            ),
        );
        if let Some(id) = ids.lines().next() {
            return id.trim().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no query waits"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A database of its own with three small tables, for a test that changes it.
fn scratch_db(server: &MariaServer, db: &str) -> String {
    server.run(
        None,
        &format!(
            "CREATE DATABASE {db};
             CREATE TABLE {db}.a (id INT PRIMARY KEY, v VARCHAR(5));
             CREATE TABLE {db}.b (id INT PRIMARY KEY, v VARCHAR(5));
             CREATE TABLE {db}.c (id INT PRIMARY KEY, v VARCHAR(5));
             INSERT INTO {db}.a VALUES (1, 'x'); INSERT INTO {db}.b VALUES (1, 'y');
             INSERT INTO {db}.c VALUES (1, 'z');
             CREATE USER IF NOT EXISTS '{READER}'@'localhost' IDENTIFIED BY '{READER_PASSWORD}';
             GRANT SELECT ON {db}.* TO '{READER}'@'localhost';"
        ),
    );
    server.socket_url(db, READER, None)
}

fn spawn_profile(url: &str) -> Child {
    crate::kit::command("slayer-profile")
        .env("MYSQL_PWD", READER_PASSWORD)
        .env("HOME", "/nonexistent")
        .args([url, "--no-progress", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finished(child: Child) -> Run {
    let out = child.wait_with_output().unwrap();
    Run::of(
        crate::kit::Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        },
        &[],
    )
}

#[test]
fn a_table_dropped_while_profiling_is_named_and_the_rest_is_written() {
    let server = MariaServer::shared();
    let url = scratch_db(server, "dropping");
    let mut locker = Locker::lock(server, "dropping", "b");
    let child = spawn_profile(&url);
    waiting_connection(server, "dropping");
    locker.send("DROP TABLE b;");
    locker.finish();
    let r = finished(child);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("warning: dropping.b: ") && w[0].contains("doesn't exist"),
        "{w:?}"
    );
    assert_eq!(r.model_names(), ["a", "b", "c"]);
    assert_eq!(r.column("c", "v")["sampled"], "z");
}

/// A connection killed in the middle fails the query under way; the next query connects again,
/// so the table is read after all.
#[test]
fn a_connection_killed_while_profiling_reconnects_and_reads_the_table() {
    let server = MariaServer::shared();
    let url = scratch_db(server, "killing");
    let locker = Locker::lock(server, "killing", "b");
    let child = spawn_profile(&url);
    let id = waiting_connection(server, "killing");
    server.run(None, &format!("KILL CONNECTION {id}"));
    locker.finish();
    let r = finished(child);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (table, value) in [("a", "x"), ("b", "y"), ("c", "z")] {
        assert_eq!(r.column(table, "v")["sampled"], value, "{table}");
    }
}

/// A server gone for good in the middle: the tables not yet read are named, each, and the
/// rest is written (exit 1).
#[test]
fn a_server_stopped_while_profiling_names_each_table_it_could_not_read() {
    let server = MariaServer::start("").unwrap_or_else(|e| panic!("{e}"));
    let url = scratch_db(&server, "stopping");
    let locker = Locker::lock(&server, "stopping", "b");
    let child = spawn_profile(&url);
    waiting_connection(&server, "stopping");
    server.stop();
    locker.finish();
    let r = finished(child);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let w = warnings(&r);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("warning: stopping.b: profiling unavailable: "),
        "{w:?}"
    );
    assert!(
        w[1].starts_with("warning: stopping.c: profiling unavailable: "),
        "{w:?}"
    );
    assert_eq!(r.model_names(), ["a", "b", "c"]);
    assert_eq!(r.column("a", "v")["sampled"], "x");
}

#[test]
fn a_statement_past_its_timeout_is_a_warning_and_the_rest_goes_on() {
    let server = MariaServer::shared();
    let url = scratch_db(server, "timing");
    server.run(
        None,
        "CREATE VIEW timing.slow AS SELECT SLEEP(5) AS pause, 'v' AS label",
    );
    let started = Instant::now();
    let r = profile(
        &[&url, "--no-progress", "--statement-timeout", "500ms"],
        &[("MYSQL_PWD", READER_PASSWORD)],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let w = warnings(&r);
    assert!(
        w.iter().all(|l| l.starts_with("warning: timing.slow")) && !w.is_empty(),
        "{w:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.column("a", "v")["sampled"], "x");
}

#[test]
fn tls_encrypts_and_verify_identity_checks_the_certificate() {
    let server = MariaServer::tls();
    let ca = server
        .ca_path
        .as_ref()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let base = format!("mysql://{READER}@127.0.0.1:{}/tls", server.port);
    let env = [("MYSQL_PWD", READER_PASSWORD)];
    // PREFERRED (the default) encrypts when the server offers it; the server takes nothing else.
    for url in [
        base.clone(),
        format!("{base}?ssl-mode=REQUIRED"),
        format!(
            "{base}?ssl-mode=VERIFY_IDENTITY&ssl-ca={}",
            percent_encode(&ca)
        ),
    ] {
        let r = profile(&[&url, "--no-progress"], &env);
        assert_eq!(r.code, 0, "{url}: {}", r.stderr);
        assert_eq!(r.column("t", "colour")["sampled"], "red, blue");
    }
    // Refused: no TLS, or a certificate no trusted authority signed.
    for (url, says) in [
        // MariaDB answers a plain connection that require_secure_transport refuses with
        // "Access denied".
        (format!("{base}?ssl-mode=DISABLED"), "access denied"),
        (format!("{base}?ssl-mode=VERIFY_CA"), "certificate"),
    ] {
        let r = profile(&[&url], &env);
        assert_eq!(r.code, 2, "{url}: {}", r.stderr);
        assert!(
            r.stderr.to_lowercase().contains(says),
            "{url}: {}",
            r.stderr
        );
    }
}

/// A million rows: every column profiled, the counts exact.
#[test]
fn a_million_row_table_is_profiled_exactly() {
    let server = MariaServer::shared();
    server.run(None, "CREATE DATABASE million");
    server.run(
        Some("million"),
        &format!(
            "CREATE TABLE million.events (id INT PRIMARY KEY, category VARCHAR(8), \
                 amount DOUBLE, created DATETIME);
             INSERT INTO million.events SELECT seq, CONCAT('c', seq % 1000), seq / 4, \
                 '2024-01-01' + INTERVAL seq SECOND FROM seq_1_to_1000000;
             GRANT SELECT ON million.* TO '{READER}'@'localhost';"
        ),
    );
    let url = server.socket_url("million", READER, None);
    let r = profile(&[&url, "--no-progress"], &[("MYSQL_PWD", READER_PASSWORD)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.column("events", "category")["distinct_count"], 1000);
    assert!(r.column("events", "category")["sampled"]
        .as_str()
        .unwrap()
        .ends_with("... (1000 distinct)"));
    assert_eq!(r.column("events", "amount")["sampled"], "0.25 .. 250000.0");
    assert_eq!(
        r.column("events", "created")["sampled"],
        "2024-01-01 00:00:01 .. 2024-01-12 13:46:40"
    );
}

#[test]
fn refresh_mode_fills_the_samples_from_mariadb() {
    let (_, profiled) = fixture_run(&["--tables", "stores,Order", "--no-samples"]);
    let models: String = profiled
        .records
        .iter()
        .filter(|r| r["kind"] == "model")
        .map(|r| format!("{r}\n"))
        .collect();
    let server = MariaServer::shared();
    let url = reader_url(server);
    let mut cmd = crate::kit::command("slayer-profile");
    cmd.env("MYSQL_PWD", READER_PASSWORD)
        .env("HOME", "/nonexistent")
        .args([url.as_str(), "--models", "-"]);
    let out = crate::kit::output(cmd, Some(models.as_bytes()));
    let r = Run::of(out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (_, full) = fixture_run(&["--tables", "stores"]);
    for column in ["name", "opened_at", "tax_rate"] {
        assert_eq!(
            r.column("stores", column)["sampled"],
            full.column("stores", column)["sampled"],
            "{column}"
        );
    }
    assert!(r.column("stores", "name")["sampled"]
        .as_str()
        .unwrap()
        .contains("Brooklyn"));
    // A backquoted sql_table finds its table too.
    assert_eq!(r.column("Order", "select")["sampled"], "a, b");
}

/// The example starts its own server, runs the demo's pipeline on it, and checks that the
/// answers equal the CSV-profiled store's (it exits 1 when they do not).
#[test]
fn the_mariadb_example_answers_as_the_csv_demo_does() {
    let bin = crate::kit::bin_dir();
    if !bin.join("slayer-search").exists() || !bin.join("slayer-memory").exists() {
        return; // built by `cargo test --workspace`; absent when this crate is tested alone
    }
    let out = Command::new("bash")
        .arg(crate::kit::workspace_root().join("examples/mariadb.sh"))
        .env("SLAYER_BIN", &bin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("the two stores' model records are equal"),
        "{stdout}"
    );
    assert!(stdout.contains("every answer is the same"), "{stdout}");
    assert!(
        stdout.contains("customer_id            INT         1 .. 104"),
        "{stdout}"
    );
}

/// A URL without a database lists every database the user can see, each table named
/// `database.table`; `--schema` picks databases.
#[test]
fn a_url_without_a_database_lists_every_database_the_user_can_see() {
    let server = MariaServer::shared();
    let url = format!(
        "mysql://{READER}@{}/",
        percent_encode(server.socket.to_str().unwrap())
    );
    let env = [("MYSQL_PWD", READER_PASSWORD)];
    let r = profile(
        &[
            &url,
            "--schema",
            "fixture",
            "--tables",
            "fixture.dated,Order",
            "--no-samples",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.records[0]["name"], "mysql");
    // (Names unique to the fixture: other tests add databases the reader sees, and a name
    // two databases share is told apart, as for any source.)
    assert_eq!(r.model_names(), ["Order", "dated"]);
    assert_eq!(r.model("Order")["sql_table"], "fixture.`Order`");
    assert_eq!(r.model("dated")["sql_table"], "fixture.dated");
    let r = profile(&[&url, "--schema", "mysql"], &env);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("no schema named 'mysql'") && r.stderr.contains("fixture"),
        "{}",
        r.stderr
    );
}
