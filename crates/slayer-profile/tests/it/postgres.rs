//! slayer-profile against a real PostgreSQL server (pg_server/ starts one per test process on
//! a unix socket in a temp dir): introspection of the fixture's every kind of object, the same
//! records as DuckDB and SQLite, read-only transactions and the statement timeout, one
//! connection per worker, refresh mode, the libpq environment, TLS, and the password kept out
//! of every output stream.

use serde_json::{json, Value};

use crate::pg_server::{self, PgServer, READER_PASSWORD};
use crate::support::{duckdb_file, orders_sql, path, sqlite_file, Run};

/// Runs slayer-profile with only `env` of libpq's variables (none inherited, no ~/.pgpass), and
/// checks that the reader's password is in no output stream, whatever happened.
fn profile(args: &[&str], env: &[(String, String)], stdin: Option<&str>) -> Run {
    let mut cmd = crate::kit::command("slayer-profile");
    for var in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
        "PGSSLMODE",
        "PGSSLROOTCERT",
        "PGPASSFILE",
        "PGCONNECT_TIMEOUT",
        "PGAPPNAME",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", "/nonexistent");
    cmd.envs(env.iter().map(|(k, v)| (k, v))).args(args);
    let out = crate::kit::output(cmd, stdin.map(str::as_bytes));
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        for secret in [
            READER_PASSWORD.to_owned(),
            pg_server::percent_encode(READER_PASSWORD),
        ] {
            assert!(
                !text.contains(&secret),
                "the password appears on {stream}:\n{text}"
            );
        }
    }
    Run::of(out, args)
}

fn fixture_run() -> (&'static PgServer, Run) {
    let server = pg_server::shared();
    let db = server.fixture();
    let run = profile(&[&server.url(db), "--no-progress"], &[], None);
    (server, run)
}

#[test]
fn the_fixture_becomes_one_model_per_table_and_view() {
    let (server, r) = fixture_run();
    // The erroring view is the one warning of the profile (the first is the password the URL
    // carries); everything else profiled.
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr
            .lines()
            .filter(|l| l.starts_with("warning:") && !l.starts_with("warning: the password"))
            .collect::<Vec<_>>(),
        ["warning: fixture.broken_view: profiling unavailable: this view always fails"]
    );
    assert_eq!(
        r.records[0],
        json!({"kind": "datasource", "name": "fixture", "type": "postgres",
               "host": server.dir.to_str().unwrap(), "port": server.port,
               "database": "fixture", "username": "slayer_reader"})
    );
    // Sorted by schema, then name; the partitioned table once, its partitions never; the
    // materialized view as a view; `public` tables unqualified.
    assert_eq!(
        r.model_names(),
        [
            "Mixed Case",
            "Café Ünïcode",
            "a/b",
            "all_types",
            "big_strings",
            "broken_view",
            "customers",
            "events",
            "select",
            "vip_customers",
            "weird \"quoted\" table",
            "customer_totals",
            "empty_table",
            "orders",
            "regions",
            "stores"
        ]
    );
    let sql_table = |m: &str| r.model(m)["sql_table"].clone();
    assert_eq!(sql_table("Mixed Case"), "\"Odd Schema\".\"Mixed Case\"");
    assert_eq!(
        sql_table("weird \"quoted\" table"),
        "\"weird \"\"quoted\"\" table\""
    );
    assert_eq!(sql_table("select"), "\"select\"");
    assert_eq!(sql_table("orders"), "sales.orders");
    assert_eq!(r.model("events")["source_kind"], "table");
    assert_eq!(r.model("customer_totals")["source_kind"], "view");
    assert_eq!(
        r.model("customer_totals")["description"],
        "Orders and revenue per customer"
    );
}

#[test]
fn postgres_types_map_through_domains_enums_and_arrays() {
    let (_, r) = fixture_run();
    let types = r.column_types("all_types");
    let type_of = |name: &str| {
        types
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no column {name} in {types:?}"))
            .1
            .clone()
    };
    for (column, want) in [
        ("big_n", "INT"),
        ("double_n", "DOUBLE"),
        ("price", "DOUBLE"),          // numeric(12,2)
        ("whole", "INT"),             // numeric(10,0)
        ("happened_at", "TIMESTAMP"), // timestamptz
        ("clock", "TIMESTAMP"),       // time
        ("day", "DATE"),
        ("span", "UNKNOWN"),       // interval
        ("uid", "TEXT"),           // uuid
        ("cash", "DOUBLE"),        // money
        ("raw", "UNKNOWN"),        // bytea
        ("span_range", "UNKNOWN"), // int4range
        ("feeling", "TEXT"),       // enum
        ("qty", "INT"),            // domain over integer
        ("contact", "TEXT"),       // domain over text
        ("int_list", "UNKNOWN"),   // integer[]
        ("tag_list", "UNKNOWN"),   // text[]
        ("doc", "TEXT"),           // jsonb, as the reference maps it
        ("doc_json", "UNKNOWN"),   // json
    ] {
        assert_eq!(type_of(column), want, "{column}");
    }
    // Values print the common way: ISO dates, UTC timestamps, Python floats, True/False.
    assert_eq!(
        r.column("all_types", "happened_at")["sampled"],
        "2024-03-11 13:00:00 .. 2024-03-31 08:00:00"
    );
    assert_eq!(
        r.column("all_types", "clock")["sampled"],
        "08:17:00 .. 13:40:00"
    );
    assert_eq!(r.column("all_types", "cash")["sampled"], "9.99 .. 199.8");
    assert_eq!(
        r.column("all_types", "feeling")["sampled_values"],
        json!(["happy", "ok", "sad"])
    );
    assert_eq!(r.column("Café Ünïcode", "naïve")["sampled"], "False, True");
    assert!(r.column("all_types", "span").get("sampled").is_none());
}

#[test]
fn keys_comments_and_hostile_names_carry_over() {
    let (_, r) = fixture_run();
    // Composite foreign key, and one across schemas (sales.orders → public.customers).
    assert_eq!(
        r.model("stores")["joins"],
        json!([{"target_model": "regions", "join_pairs": [["country", "country"], ["region_code", "region_code"]]}])
    );
    assert_eq!(
        r.model("orders")["joins"],
        json!([{"target_model": "customers", "join_pairs": [["customer_id", "id"]]},
               {"target_model": "stores", "join_pairs": [["store_id", "id"]]}])
    );
    assert_eq!(
        r.model("Mixed Case")["joins"],
        json!([{"target_model": "weird \"quoted\" table", "join_pairs": [["Weird Ref", "id"]]}])
    );
    // A composite primary key: both members flagged, both profiled.
    let regions = r.model("regions")["columns"].as_array().unwrap();
    assert_eq!(regions[0]["primary_key"], true);
    assert_eq!(regions[1]["primary_key"], true);
    assert_eq!(r.column("regions", "country")["sampled"], "DE, FR, US");
    assert_eq!(
        r.column("Mixed Case", "Weird Ref")["description"],
        "Points at public.\"weird \"\"quoted\"\" table\""
    );
    let weird = "weird \"quoted\" table";
    assert_eq!(
        r.column(weird, "quote\"col")["sampled"],
        "say \"bye\", say \"hi\", say \"ok\""
    );
    assert_eq!(r.column(weird, "Ünïcode 名前")["distinct_count"], 5);
    assert_eq!(r.column("select", "where")["sampled"], "here, there");
    assert_eq!(r.column("a/b", "x/y")["distinct_count"], 10);
    // The empty table and the million distinct strings.
    assert_eq!(r.column("empty_table", "created_at")["sampled"], "all NULL");
    assert_eq!(r.column("empty_table", "note")["distinct_count"], 0);
    let big = r.column("big_strings", "s");
    assert_eq!(big["distinct_count"], 1_000_000);
    assert_eq!(big["sampled_values"].as_array().unwrap().len(), 50);
    assert_eq!(big["sampled_values"][0], "value-0000001");
    assert!(big["sampled"]
        .as_str()
        .unwrap()
        .ends_with("value-0000020 ... (1000000 distinct)"));
}

#[test]
fn one_table_gives_equal_records_in_duckdb_sqlite_and_postgres() {
    let server = pg_server::shared();
    server.create_database("orders_equal");
    server.psql("orders_equal", &orders_sql("TIMESTAMP"));
    server.grant_reader("orders_equal");
    let dir = tempfile::tempdir().unwrap();
    let duck = duckdb_file(dir.path(), "wh.duckdb", &orders_sql("TIMESTAMP"));
    let lite = sqlite_file(dir.path(), "wh.sqlite", &orders_sql("DATETIME"));
    let d = profile(&[path(&duck), "--datasource", "wh"], &[], None);
    let s = profile(&[path(&lite), "--datasource", "wh"], &[], None);
    let p = profile(
        &[
            &server.url("orders_equal"),
            "--datasource",
            "wh",
            "--no-progress",
        ],
        &[],
        None,
    );
    for run in [&d, &s, &p] {
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    assert_eq!(p.records[0]["type"], "postgres");
    assert_eq!(d.records[1..], s.records[1..]);
    assert_eq!(d.records[1..], p.records[1..]);
}

#[test]
fn a_statement_timeout_is_a_warning_and_the_rest_goes_on() {
    let server = pg_server::shared();
    server.create_database("slow");
    server.psql(
        "slow",
        "CREATE TABLE quick (id int PRIMARY KEY, colour text);
         INSERT INTO quick VALUES (1, 'red'), (2, 'blue');
         CREATE VIEW sleepy AS SELECT q.colour FROM quick q, LATERAL (SELECT pg_sleep(60)) AS s;",
    );
    server.grant_reader("slow");
    let url = server.url("slow");
    let started = std::time::Instant::now();
    let r = profile(
        &[&url, "--statement-timeout", "300ms", "--no-progress"],
        &[],
        None,
    );
    assert!(
        started.elapsed().as_secs() < 5,
        "the timeout did not stop the query"
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "warning: slow.sleepy: profiling unavailable: canceling statement due to statement timeout"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(r.column("quick", "colour")["sampled"], "blue, red");
    // A bad value is a usage error.
    let bad = profile(&[&url, "--statement-timeout", "soon"], &[], None);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("not a duration"), "{}", bad.stderr);
}

#[test]
fn every_query_is_read_only() {
    let server = pg_server::shared();
    server.create_database("readonly");
    server.psql(
        "readonly",
        "CREATE TABLE victims (n int);
         CREATE TABLE things (id int PRIMARY KEY, colour text);
         INSERT INTO things VALUES (1, 'red'), (2, 'red');
         CREATE FUNCTION sneaky() RETURNS text LANGUAGE sql
             AS 'INSERT INTO victims VALUES (1) RETURNING ''x''';
         GRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC;",
    );
    server.grant_reader("readonly");
    // A model whose column is the author's own SQL that writes: refused by the transaction.
    let models = r#"{"kind":"model","name":"things","data_source":"readonly","sql_table":"things","columns":[{"name":"id","type":"INT","primary_key":true},{"name":"colour","type":"TEXT"},{"name":"write","sql":"sneaky()","type":"TEXT"}]}"#;
    let r = profile(
        &[&server.url("readonly"), "--models", "-", "--no-progress"],
        &[],
        Some(models),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "warning: readonly.things.write: cannot execute INSERT in a read-only transaction"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(r.records[0]["columns"][1]["sampled"], "red");
    assert_eq!(
        server
            .query("readonly", "SELECT count(*) FROM victims")
            .trim(),
        "0"
    );
}

#[test]
fn threads_open_one_connection_each_and_agree() {
    let server = pg_server::shared();
    let db = server.fixture();
    server.psql(
        "postgres",
        &format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'two_at_most') THEN
                 CREATE ROLE two_at_most LOGIN PASSWORD '{READER_PASSWORD}' CONNECTION LIMIT 2;
             END IF; END $$;"
        ),
    );
    server.psql(
        db,
        "GRANT USAGE ON SCHEMA public, sales, \"Odd Schema\" TO two_at_most;
         GRANT SELECT ON ALL TABLES IN SCHEMA public, sales, \"Odd Schema\" TO two_at_most;",
    );
    // Backends of an earlier run leave asynchronously; each run starts with none.
    let idle = || {
        for _ in 0..100 {
            let n = server.query(
                "postgres",
                "SELECT count(*) FROM pg_stat_activity WHERE usename = 'two_at_most'",
            );
            if n.trim() == "0" {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("two_at_most's connections did not go away");
    };
    let url = server.url(db).replace(pg_server::READER, "two_at_most");
    let run = |threads: &str| {
        idle();
        profile(
            &[&url, "--threads", threads, "--exclude", "broken_view"],
            &[],
            None,
        )
    };
    let two = run("2");
    assert_eq!(two.code, 0, "{}", two.stderr);
    let one = run("1");
    assert_eq!(one.stdout, two.stdout);
    // Three workers need three connections at once; the role allows two.
    let three = run("3");
    assert_eq!(three.code, 2, "{}", three.stderr);
    assert!(
        three
            .stderr
            .contains("too many connections for role \"two_at_most\""),
        "{}",
        three.stderr
    );
    assert!(
        three.stderr.contains("postgres://two_at_most:****@"),
        "{}",
        three.stderr
    );
}

#[test]
fn refresh_mode_fills_the_samples_from_postgres() {
    let (server, full) = fixture_run();
    let bare = profile(&[&server.url("fixture"), "--no-samples"], &[], None);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    let input: Vec<String> = bare.records.iter().map(Value::to_string).collect();
    let refreshed = profile(
        &[&server.url("fixture"), "--models", "-", "--no-progress"],
        &[],
        Some(&input.join("\n")),
    );
    assert_eq!(refreshed.code, 1, "{}", refreshed.stderr);
    assert_eq!(refreshed.records[1..], full.records[1..]);
    assert!(
        refreshed
            .stderr
            .contains("refreshed the samples of 16 models"),
        "{}",
        refreshed.stderr
    );
}

#[test]
fn the_libpq_environment_and_keyword_strings_name_the_server() {
    let (server, by_url) = fixture_run();
    let env = server.env("fixture");
    let by_env = profile(&["postgres://", "--no-progress"], &env, None);
    assert_eq!(by_env.stdout, by_url.stdout);
    let keywords = format!(
        "host='{}' port={} user=slayer_reader dbname=fixture",
        server.dir.display(),
        server.port
    );
    let password = [("PGPASSWORD".to_owned(), READER_PASSWORD.to_owned())];
    let by_keywords = profile(&[&keywords, "--no-progress"], &password, None);
    assert_eq!(by_keywords.stdout, by_url.stdout);
}

#[test]
fn schemas_and_tables_select_what_is_profiled() {
    let server = pg_server::shared();
    let url = server.url(server.fixture());
    let sales = profile(&[&url, "--schema", "sales"], &[], None);
    assert_eq!(sales.code, 0, "{}", sales.stderr);
    assert_eq!(
        sales.model_names(),
        [
            "customer_totals",
            "empty_table",
            "orders",
            "regions",
            "stores"
        ]
    );
    // A join to a schema that is not profiled would dangle, so it is left out.
    assert_eq!(
        sales.model("orders")["joins"]
            .as_array()
            .map_or(0, Vec::len),
        1
    );
    let two = profile(
        &[
            &url,
            "--schema",
            "Odd Schema",
            "--schema",
            "sales",
            "--tables",
            "sales.orders,Mixed Case",
        ],
        &[],
        None,
    );
    assert_eq!(two.model_names(), ["Mixed Case", "orders"]);
    let unknown = profile(&[&url, "--schema", "nope"], &[], None);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("no schema named 'nope' with tables or views in the source; it has: Odd Schema, public, sales"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn connection_errors_name_the_server_without_the_password() {
    let server = pg_server::shared();
    let wrong = server.url("fixture").replace(
        &pg_server::percent_encode(READER_PASSWORD),
        "not-the-password",
    );
    let r = profile(&[&wrong], &[], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("password authentication failed for user \"slayer_reader\""),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("not-the-password"), "{}", r.stderr);
    // Issue 65: a password in the source (an argument `ps` shows) is warned about.
    let warning = "warning: the password in the source can be read by every user of this machine (`ps`); put it in PGPASSWORD or ~/.pgpass instead";
    assert!(r.stderr.starts_with(warning), "{}", r.stderr);
    let password = [("PGPASSWORD".to_owned(), READER_PASSWORD.to_owned())];
    let keywords = format!(
        "host='{}' port={} user=slayer_reader dbname=no_such_db",
        server.dir.display(),
        server.port
    );
    let from_env = profile(&[&keywords, "--no-progress"], &password, None);
    assert_eq!(from_env.code, 2, "{}", from_env.stderr);
    assert!(
        !from_env.stderr.contains("warning: the password"),
        "{}",
        from_env.stderr
    );
    let missing = profile(&[&server.url("no_such_db")], &[], None);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains(&format!(
            "cannot open postgres://slayer_reader:****@{}:{}/no_such_db: database \"no_such_db\" does not exist",
            pg_server::percent_encode(server.dir.to_str().unwrap()),
            server.port
        )),
        "{}",
        missing.stderr
    );
    // A mistyped source that holds a password is parsed as a connection, never echoed.
    for source in [
        "Postgres://u:n0t-echoed@h/d",
        "postgres://u:n0t/echoed@h/d",
        "hostaddr=10.0.0.5 password=n0t-echoed dbname=d",
    ] {
        let r = profile(&[source], &[], None);
        assert_eq!(r.code, 2, "{source}: {}", r.stderr);
        assert!(!r.stderr.contains("n0t"), "{source}: {}", r.stderr);
    }
    let bad = profile(&["postgres://u@h/d?sslmode=maybe"], &[], None);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("invalid sslmode 'maybe'"),
        "{}",
        bad.stderr
    );
}

#[test]
fn tls_encrypts_and_verify_full_checks_the_certificate() {
    let server = pg_server::tls();
    let db = server.db();
    // The server accepts TLS connections only.
    let verified = profile(&[&server.verify_full_url(db), "--no-progress"], &[], None);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    assert_eq!(verified.column("t", "colour")["distinct_count"], 3);
    let require = profile(&[&format!("{}?sslmode=require", server.url(db))], &[], None);
    assert_eq!(require.code, 0, "{}", require.stderr);
    assert_eq!(require.stdout, verified.stdout);
    let plain = profile(&[&format!("{}?sslmode=disable", server.url(db))], &[], None);
    assert_eq!(plain.code, 2);
    assert!(plain.stderr.contains("no encryption"), "{}", plain.stderr);
    // A certificate from another authority is refused under verify-full.
    let dir = tempfile::tempdir().unwrap();
    let other_ca = dir.path().join("other.pem");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["other".to_owned()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&other_ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        server.url(db),
        pg_server::percent_encode(other_ca.to_str().unwrap())
    );
    let refused = profile(&[&url], &[], None);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("certificate"), "{}", refused.stderr);
    // verify-full without a root certificate says how to give one.
    let no_root = profile(
        &[&format!("{}?sslmode=verify-full", server.url(db))],
        &[],
        None,
    );
    assert_eq!(no_root.code, 2);
    assert!(
        no_root.stderr.contains("needs a root certificate"),
        "{}",
        no_root.stderr
    );
}
