//! A `--batch` process that stays open sees every write made after it started: a memory
//! forgotten, a memory saved, a catalog re-loaded (docs/spec/search.md §9.1). An unchanged store is
//! never re-read.

use slayer_common::store::StoreWrite;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use slayer_common::store::{OpenMode, Store};
use slayer_search::context::Context;

use crate::support::{ids, models_dir, run, Fixture};

/// A `--batch -` coprocess: `ask` writes one request line and waits for its reply.
pub(crate) struct Coprocess {
    child: std::process::Child,
    input: std::process::ChildStdin,
    replies: mpsc::Receiver<String>,
}

impl Coprocess {
    fn start(f: &Fixture) -> Coprocess {
        Coprocess::start_with(
            f,
            Path::new("/nonexistent/slayer-models"),
            &["--channels", "entities,text", "--max-entities", "20"],
        )
    }

    pub(crate) fn start_with(f: &Fixture, models: &Path, args: &[&str]) -> Coprocess {
        let mut child = crate::kit::command("slayer-search")
            .env("SLAYER_MODEL_DIR", models)
            .env("SLAYER_STORE", &f.store)
            .args(["--batch", "-"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Coprocess {
            child,
            input,
            replies,
        }
    }

    pub(crate) fn ask(&mut self, request: &str) -> Value {
        writeln!(self.input, "{request}").unwrap();
        self.input.flush().unwrap();
        let line = self
            .replies
            .recv_timeout(Duration::from_secs(30))
            .expect("a reply");
        serde_json::from_str(&line).unwrap()
    }

    fn finish(self) {
        assert_eq!(self.close(), Some(0));
    }

    /// Closes its input and waits: the exit code.
    pub(crate) fn close(self) -> Option<i32> {
        drop(self.input);
        let mut child = self.child;
        child.wait().unwrap().code()
    }

    /// The most memory the process has held so far (`VmHWM`), in MiB.
    pub(crate) fn peak_mib(&self) -> f64 {
        crate::kit::peak_mib(self.child.id())
    }
}

fn tool(name: &str, f: &Fixture, args: &[&str], stdin: Option<&str>) {
    let out = run(name, &f.store, args, stdin);
    assert_eq!(out.code, 0, "{name} {args:?}: {}", out.stderr);
}

#[test]
fn a_batch_process_sees_forgets_saves_and_reloads_made_after_it_started() {
    let f = Fixture::new();
    let mut search = Coprocess::start(&f);
    let question = r#"{"question": "refunded orders revenue"}"#;
    let before = search.ask(question);
    assert_eq!(ids(&before, "memories")[0], "1", "{before}");

    tool("slayer-memory", &f, &["forget", "1"], None);
    let after = search.ask(question);
    assert!(
        !ids(&after, "memories").contains(&"1".to_owned()),
        "{after}"
    );
    for hit in after["memories"].as_array().unwrap() {
        assert_ne!(hit["text"], "", "{after}");
    }

    tool(
        "slayer-memory",
        &f,
        &[
            "save",
            "--id",
            "ledger-note",
            "--learning",
            "Refund ledger rows are booked nightly",
            "--entities",
            "mydb.orders",
        ],
        None,
    );
    let saved = search.ask(r#"{"question": "refund ledger"}"#);
    assert_eq!(ids(&saved, "memories")[0], "ledger-note", "{saved}");

    let model =
        r#"{"kind":"model","name":"ledger","data_source":"mydb","columns":[{"name":"booked_at"}]}"#;
    tool("slayer-index", &f, &["load", "-"], Some(model));
    let reloaded = search.ask(r#"{"question": "ledger booked"}"#);
    assert!(
        ids(&reloaded, "entities").contains(&"mydb.ledger.booked_at".to_owned()),
        "{reloaded}"
    );
    search.finish();
}

#[test]
fn an_unchanged_store_is_not_read_again_and_a_changed_one_is() {
    let f = Fixture::new();
    let store = Store::open(&f.store, OpenMode::ReadOnly).unwrap();
    let mut ctx = Context::on(&store, Default::default()).unwrap();
    assert!(
        !ctx.refresh_if_changed().unwrap(),
        "the first look fills nothing"
    );
    assert!(!ctx.refresh_if_changed().unwrap());
    let mut writer = Store::open(&f.store, OpenMode::MustExist).unwrap();
    let tx = writer.write().unwrap();
    tx.set_setting("test_marker", "1").unwrap();
    tx.commit().unwrap();
    assert!(
        ctx.refresh_if_changed().unwrap(),
        "another connection committed"
    );
    assert!(!ctx.refresh_if_changed().unwrap());
}

/// The dense channel's cached vectors follow every kind of write: a save that adds no vector,
/// one that adds a vector, a re-save that rewrites one, a forget that removes one. After each,
/// the open process answers exactly as a fresh one does.
#[test]
fn a_batch_process_ranks_dense_rows_as_a_fresh_process_after_each_write() {
    let f = Fixture::new();
    let refresh = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(refresh.code, 0, "{}", refresh.stderr);
    let flags = [
        "--channels",
        "dense",
        "--max-memories",
        "20",
        "--max-example-queries",
        "20",
        "--max-entities",
        "30",
        "--explain",
    ];
    let mut search = Coprocess::start_with(&f, &models_dir(), &flags);
    let question = "refunded order amounts in dollars";
    let check = |search: &mut Coprocess, step: &str| {
        let open = search.ask(&serde_json::json!({ "question": question }).to_string());
        let mut args = vec!["--question", question];
        args.extend(flags);
        let fresh = f.dense_search(&args);
        assert_eq!(open, fresh, "after {step}");
    };
    check(&mut search, "start");
    let models = models_dir();
    let save = |args: &[&str]| {
        // Saves embed inline here (the test kit turns that off by default).
        let env = [
            ("SLAYER_MODEL_DIR", models.to_str().unwrap()),
            ("SLAYER_NO_EMBED", "0"),
        ];
        let out = crate::kit::run("slayer-memory", Some(&f.store), args, &env, None);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("Warning"), "{args:?}: {}", out.stderr);
    };
    save(&[
        "save",
        "--no-embed",
        "--learning",
        "Order amounts are audited monthly",
        "--entities",
        "mydb.orders.amount",
    ]);
    check(&mut search, "a save without a vector");
    save(&[
        "save",
        "--id",
        "refund-cents",
        "--learning",
        "Refund amounts were in cents before 2024",
        "--entities",
        "mydb.orders.amount",
    ]);
    check(&mut search, "a save with a vector");
    save(&[
        "save",
        "--id",
        "42",
        "--learning",
        "Order totals exclude shipping fees",
        "--entities",
        "mydb.orders.amount",
    ]);
    check(&mut search, "a re-save that rewrites a vector");
    tool("slayer-memory", &f, &["forget", "1"], None);
    check(&mut search, "a forget");
    search.finish();
}

/// A long-lived search scans the sidecar as soon as a new question is embedded, beside the
/// text channel. Its answers are a fresh process's: for new questions, for a question asked
/// again under a datasource (its embedding kept, so scanned after the text channel), for a
/// new question under a datasource, and after a write.
#[test]
fn a_batch_process_scanning_beside_the_text_channel_answers_as_a_fresh_process() {
    let f = Fixture::new();
    let refresh = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(refresh.code, 0, "{}", refresh.stderr);
    let flags = ["--max-memories", "20", "--max-entities", "30", "--explain"];
    let mut search = Coprocess::start_with(&f, &models_dir(), &flags);
    let check = |search: &mut Coprocess, question: &str, datasource: Option<&str>| {
        let mut request = serde_json::json!({ "question": question });
        let mut args = vec!["--question", question];
        if let Some(ds) = datasource {
            request["datasource"] = ds.into();
            args.extend(["--datasource", ds]);
        }
        args.extend(flags);
        let open = search.ask(&request.to_string());
        assert_eq!(open, f.dense_search(&args), "{question} in {datasource:?}");
    };
    check(&mut search, "refunded order amounts in dollars", None);
    check(&mut search, "customers by region", None);
    check(
        &mut search,
        "refunded order amounts in dollars",
        Some("mydb"),
    );
    check(&mut search, "which orders were refunded", Some("prod"));
    tool(
        "slayer-memory",
        &f,
        &[
            "save",
            "--no-embed",
            "--learning",
            "Refunds by region are audited",
            "--entities",
            "mydb.orders.amount",
        ],
        None,
    );
    check(&mut search, "refunds by region", None);
    search.finish();
}
