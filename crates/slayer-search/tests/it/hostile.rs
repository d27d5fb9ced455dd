//! Hostile and unlucky input (docs/spec/limits.md §16): every field an agent sends is bounded, a
//! request over a limit is refused naming the limit, a long question is cut with a warning,
//! and a long-lived process answers every such request in bounded memory.

use std::path::Path;

use serde_json::{json, Value};

use crate::long_lived::Coprocess;
use crate::support::{run, Fixture};

/// A formula nested `depth` calls deep around `amount`.
fn nested(function: &str, depth: usize) -> String {
    format!(
        "{}amount{}",
        format!("{function}(").repeat(depth),
        ")".repeat(depth)
    )
}

fn query(formula: &str) -> String {
    json!({"source_model": "orders", "measures": [{"name": "x", "formula": formula}]}).to_string()
}

#[test]
fn a_formula_nested_past_the_limit_is_refused_by_search_and_by_save() {
    let f = Fixture::new();
    let deep = query(&nested("sum", 2_000));
    let out = f.raw(&["--query", &deep], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr.trim(),
        "Error: a formula of query nests parentheses 2000 deep; the limit is 32 (limits.formula_depth in slayer.toml)."
    );
    let out = f.raw(&["--query", &query(&nested("sum", 5))], None);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let out = run(
        "slayer-memory",
        &f.store,
        &["save", "--learning", "deep", "--query", &deep],
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("nests parentheses 2000 deep; the limit is 32"),
        "{}",
        out.stderr
    );
    let listed = f.memory(&["list", "--format", "json"]);
    assert!(!listed.stdout.contains("deep"), "nothing was saved");
}

#[test]
fn every_field_an_agent_sends_has_a_limit_and_slayer_toml_sets_them() {
    let f = Fixture::new();
    let long_learning = "x".repeat(70_000);
    let out = f.memory(&["save", "--learning", &long_learning, "--entities", "orders"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr.trim(),
        "Error: learning is 70000 bytes; the limit is 65536 (limits.learning_bytes in slayer.toml)."
    );
    let long_ref = "a".repeat(2_000);
    let out = f.raw(&["--entity", &long_ref], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("an item of entities is 2000 bytes; the limit is 1024"),
        "{}",
        out.stderr
    );

    let config = f.store.parent().unwrap().join("slayer.toml");
    std::fs::write(
        &config,
        "[limits]\nlearning_bytes = 20\nquestion_bytes = 12\n",
    )
    .unwrap();
    let out = f.memory(&[
        "save",
        "--learning",
        "twenty-one characters",
        "--entities",
        "orders",
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("the limit is 20"), "{}", out.stderr);
    let cut = f.search(&[
        "--question",
        "refunded orders revenue",
        "--channels",
        "text",
    ]);
    assert_eq!(
        cut["warnings"][0],
        "question cut to its first 12 bytes of 23; the limit is 12 (limits.question_bytes in slayer.toml)."
    );

    std::fs::write(&config, "[limits]\nlearning_bytes = 0\n").unwrap();
    let out = f.raw(&["--question", "orders"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("limits.learning_bytes must be at least 1"),
        "{}",
        out.stderr
    );
}

/// A small deterministic generator, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random formulas: calls of random functions nested up to 60,000 deep, arithmetic, quotes
/// and unbalanced parentheses.
fn random_formula(rng: &mut Rng) -> String {
    const FUNCTIONS: [&str; 6] = ["sum", "cumsum", "avg", "lag", "count", "coalesce"];
    let depth = match rng.below(4) {
        0 => rng.below(8),
        1 => rng.below(64),
        _ => rng.below(60_000),
    } as usize;
    let mut formula = String::new();
    for _ in 0..depth {
        formula.push_str(FUNCTIONS[rng.below(6) as usize]);
        formula.push(if rng.below(50) == 0 { '\'' } else { '(' });
    }
    formula.push_str(["amount", "*", "quantity - amount", "x:sum"][rng.below(4) as usize]);
    for _ in 0..depth.saturating_sub(rng.below(3) as usize) {
        formula.push_str([")", ", 2)", ") * 3"][rng.below(3) as usize].trim_end_matches(')'));
        formula.push(')');
    }
    formula
}

/// Up to a megabyte of question (under the line limit, over the question limit): repeated and
/// distinct words.
fn random_question(rng: &mut Rng) -> String {
    let words = 3_000 + rng.below(120_000);
    (0..words)
        .map(|i| match rng.below(3) {
            0 => "revenue".to_owned(),
            1 => format!("w{i}"),
            _ => format!("Order{}", rng.below(1_000)),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_batch_process_answers_random_hostile_requests_in_bounded_memory() {
    let f = Fixture::new();
    let mut search = Coprocess::start_with(
        &f,
        Path::new("/nonexistent/slayer-models"),
        &["--channels", "entities,text"],
    );
    let normal = r#"{"question": "refunded orders revenue"}"#;
    let expected = search.ask(normal);
    let mut rng = Rng(0x5eed_1e55);
    let (mut refused, mut answered, mut cut) = (0, 0, 0);
    for round in 0..40 {
        let request = match round % 4 {
            0 | 1 => json!({"query": query(&random_formula(&mut rng))
                .parse::<Value>()
                .unwrap()})
            .to_string(),
            2 => json!({"question": random_question(&mut rng)}).to_string(),
            _ => format!(r#"{{"question": "{}"}}"#, "y".repeat(1_200_000)),
        };
        let reply = search.ask(&request);
        if reply["kind"] == "error" {
            refused += 1;
            let error = reply["error"].as_str().unwrap();
            assert!(
                error.contains("limits."),
                "a refusal names its limit: {error}"
            );
        } else {
            answered += 1;
            let first = reply["warnings"][0].as_str().unwrap_or_default();
            cut += usize::from(first.starts_with("question cut to its first 16384 bytes"));
        }
        assert_eq!(search.ask(normal), expected, "round {round}");
    }
    let peak = search.peak_mib();
    let seen = format!("{refused} refused, {answered} answered ({cut} cut), peak {peak:.1} MiB");
    assert!(refused > 0 && cut > 0 && answered > cut, "{seen}");
    // The stated bound (docs/spec/limits.md §16): a --batch process stays under 64 MiB whatever it
    // is sent.
    assert!(peak < 64.0, "{seen}");
    assert_eq!(
        search.close(),
        Some(1),
        "refused lines make the exit status 1"
    );
}

/// The vector sidecar's one file, and where its sections start (from its own header).
fn sidecar(f: &Fixture) -> (std::path::PathBuf, Value) {
    let dir = std::path::PathBuf::from(format!("{}.vectors", f.store.display()));
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "bin"))
        .expect("a sidecar file");
    let bytes = std::fs::read(&file).unwrap();
    let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[12..12 + len]).unwrap();
    (file, header)
}

/// The header (less its random build number and section offsets) and every section of a
/// sidecar file.
fn sidecar_content(bytes: &[u8]) -> (Value, Vec<u8>) {
    let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&bytes[12..12 + len]).unwrap();
    let at = |s: &str| header["sections"][s].as_u64().unwrap() as usize;
    let sections = bytes[at("id_ends")..at("end")].to_vec();
    header.as_object_mut().unwrap().remove("build");
    header.as_object_mut().unwrap().remove("sections");
    (header, sections)
}

/// A sidecar rebuilt as `want` was: the same header and sections, another build number.
fn assert_same_build(got: &[u8], want: &[u8], what: &str) {
    assert!(
        sidecar_content(got) == sidecar_content(want),
        "{what}: rebuilt in place"
    );
}

/// Writes `value` over `count` bytes at `at`.
fn overwrite(file: &Path, at: u64, count: usize, value: u8) {
    use std::io::{Seek, SeekFrom, Write};
    let mut handle = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    handle.seek(SeekFrom::Start(at)).unwrap();
    handle.write_all(&vec![value; count]).unwrap();
}

#[test]
fn a_corrupt_vector_sidecar_is_rebuilt_and_never_panics() {
    let f = Fixture::new();
    let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let question = [
        "--question",
        "order amount in dollars",
        "--max-entities",
        "5",
    ];
    let expected = f.dense_search(&question);
    let (file, header) = sidecar(&f);
    let intact = std::fs::read(&file).unwrap();
    let at = |section: &str| header["sections"][section].as_u64().unwrap();
    let corruptions: [(&str, &dyn Fn()); 5] = [
        ("id ends past the ids", &|| {
            overwrite(&file, at("id_ends"), 16, 0xff)
        }),
        ("datasource sets the header lacks", &|| {
            overwrite(&file, at("sets"), 8, 0xee)
        }),
        ("a truncated file", &|| {
            std::fs::write(&file, &intact[..intact.len() / 2]).unwrap()
        }),
        ("a header that says more rows", &|| {
            let text = String::from_utf8_lossy(&intact).replacen("\"rows\":", "\"rows\":9", 1);
            std::fs::write(&file, text.as_bytes()).unwrap()
        }),
        ("garbage", &|| {
            std::fs::write(&file, b"SLAYVEC1\xff\xff\xff\xff").unwrap()
        }),
    ];
    for (what, corrupt) in corruptions {
        corrupt();
        let out = f.with_model("slayer-search", &question, None);
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        let got: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(got, expected, "{what}");
        assert_same_build(&std::fs::read(&file).unwrap(), &intact, what);
    }
    // `slayer-embed refresh --all` rebuilds a corrupt one too.
    overwrite(&file, at("id_ends"), 16, 0xff);
    let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_same_build(
        &std::fs::read(&file).unwrap(),
        &intact,
        "refresh rebuilt it",
    );

    // A --batch process whose map goes bad under it keeps answering.
    let mut search = Coprocess::start_with(&f, &crate::support::models_dir(), &[]);
    let request = r#"{"question": "order amount in dollars", "max_entities": 5}"#;
    let before = search.ask(request);
    overwrite(&file, at("id_ends"), 64, 0xff);
    overwrite(&file, at("sets"), 64, 0xee);
    let after = search.ask(request);
    assert!(after.get("entities").is_some(), "{after}");
    assert_eq!(search.close(), Some(0));
    assert!(before.get("entities").is_some());
}

/// Overwrites the start of every term dictionary and doc store of the full-text index.
fn corrupt_segments(f: &Fixture) {
    let dir = std::path::PathBuf::from(format!("{}.index", f.store.display()));
    let mut hit = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|e| e == "term" || e == "store")
        {
            overwrite(&path, 0, 16, 0xa5);
            std::fs::write(&path, &std::fs::read(&path).unwrap()[..24]).unwrap();
            hit += 1;
        }
    }
    assert!(hit > 0, "segment files in {}", dir.display());
}

#[test]
fn a_corrupt_full_text_segment_is_rebuilt_by_the_next_command() {
    let f = Fixture::new();
    let question = [
        "--question",
        "refunded orders revenue",
        "--channels",
        "text",
    ];
    let expected = f.search(&question);
    let check = || run("slayer-index", &f.store, &["stats", "--check"], None);
    corrupt_segments(&f);
    let saved = f.memory(&[
        "save",
        "--learning",
        "Refunds post a day late.",
        "--entities",
        "mydb.orders",
        "--no-embed",
    ]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    assert!(!saved.stdout.contains("Warning"), "{}", saved.stdout);
    assert_eq!(
        check().code,
        0,
        "the save rebuilt the index: {}",
        check().stdout
    );
    corrupt_segments(&f);
    let found = f.search(&question);
    assert_eq!(found["warnings"], expected["warnings"]);
    assert_eq!(
        check().code,
        0,
        "the search rebuilt the index: {}",
        check().stdout
    );
}

#[test]
fn a_store_url_slayer_cannot_use_is_refused_with_its_password_masked() {
    // A PostgreSQL URL with a parameter libpq has but slayer does not take, and a server of
    // another kind: both refused before anything is opened, exit 2, secrets masked.
    let refusals = [
        (
            "postgresql://ann:S3CRET-PW@db.example:5432/slayer?sslpassword=S3CRET-KEY",
            "postgresql://***:***@db.example:5432/slayer?sslpassword=***: unknown connection parameter",
        ),
        (
            "mysql://ann:S3CRET-PW@db.example:3306/slayer",
            "mysql://***:***@db.example:3306/slayer: a store is an SQLite file",
        ),
        (
            "host=db.example user=ann password=S3CRET-PW sslmode=sometimes",
            "host=db.example user=ann password=**** sslmode=sometimes: invalid sslmode",
        ),
    ];
    for (url, told) in refusals {
        for (bin, args) in [
            ("slayer-index", &["stats"][..]),
            (
                "slayer-index",
                &["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"][..],
            ),
            (
                "slayer-memory",
                &["save", "--learning", "x", "--entities", "orders"][..],
            ),
            ("slayer-memory", &["list"][..]),
            ("slayer-embed", &["status"][..]),
            ("slayer-search", &["--question", "orders"][..]),
            ("slayer-search", &["mcp"][..]),
        ] {
            let out = crate::kit::run(bin, None, args, &[("SLAYER_STORE", url)], Some(""));
            assert_eq!(out.code, 2, "{bin} {args:?}: {}", out.stderr);
            assert!(
                !out.stderr.contains("S3CRET") && !out.stdout.contains("S3CRET"),
                "{bin} {args:?}: {}",
                out.stderr
            );
            assert!(out.stderr.contains(told), "{bin} {args:?}: {}", out.stderr);
        }
    }
}

#[test]
fn help_never_shows_the_store_s_password_from_the_environment() {
    let url = "postgres://ann:S3CRET-PW@db.example:5432/slayer";
    for (bin, args) in [
        ("slayer-index", &["--help"][..]),
        ("slayer-index", &["stats", "--help"][..]),
        ("slayer-memory", &["save", "--help"][..]),
        ("slayer-embed", &["status", "--help"][..]),
        ("slayer-search", &["--help"][..]),
        ("slayer-search", &["mcp", "--help"][..]),
    ] {
        let out = crate::kit::run(bin, None, args, &[("SLAYER_STORE", url)], None);
        assert_eq!(out.code, 0, "{bin} {args:?}: {}", out.stderr);
        assert!(
            !out.stdout.contains("S3CRET") && !out.stderr.contains("S3CRET"),
            "{bin} {args:?}: {}",
            out.stdout
        );
    }
}

/// Issue 49: a password written into `--store` is visible in `ps`; every binary says so (and
/// where to put it), never showing it, while the same URL in SLAYER_STORE is taken quietly.
#[test]
fn a_password_on_the_command_line_is_warned_about_never_shown() {
    // Port 1 on loopback: nothing listens, so each command fails fast after the warning.
    let url = "postgres://ann:S3CRET-PW@127.0.0.1:1/slayer";
    let warning = "warning: the password in --store can be read by every user of this machine (`ps`); put it in PGPASSWORD or ~/.pgpass instead";
    let equals = format!("--store={url}");
    for (bin, given, rest) in [
        ("slayer-index", vec!["--store", url], &["stats"][..]),
        ("slayer-memory", vec!["--store", url], &["list"][..]),
        (
            "slayer-search",
            vec![equals.as_str()],
            &["--question", "x"][..],
        ),
    ] {
        let args = [&given[..], rest].concat();
        let out = crate::kit::run(bin, None, &args, &[], None);
        assert!(out.stderr.contains(warning), "{bin}: {}", out.stderr);
        assert!(!out.stderr.contains("S3CRET"), "{bin}: {}", out.stderr);
        let out = crate::kit::run(bin, None, rest, &[("SLAYER_STORE", url)], None);
        assert!(
            !out.stderr.contains("warning: the password"),
            "{bin}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("S3CRET"), "{bin}: {}", out.stderr);
    }
    let out = crate::kit::run(
        "slayer-index",
        None,
        &["--store", "postgres://ann@127.0.0.1:1/slayer", "stats"],
        &[],
        None,
    );
    assert!(
        !out.stderr.contains("warning: the password"),
        "{}",
        out.stderr
    );
}

#[test]
fn stored_control_characters_reach_a_terminal_as_visible_escapes() {
    let f = Fixture::new();
    let hostile = "Refunds \u{1b}[2J\u{1b}]0;owned\u{7}post late\rHIDDEN\u{8}\u{202e}gnp.exe";
    let out = f.memory(&[
        "save",
        "--id",
        "trap",
        "--learning",
        hostile,
        "--entities",
        "mydb.orders",
        "--no-embed",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let visible = "Refunds \\x1b[2J\\x1b]0;owned\\x07post late\\x0dHIDDEN\\x08\\u{202e}gnp.exe";
    for (name, out) in [
        ("show", f.memory(&["show", "trap"])),
        ("list", f.memory(&["list", "--format", "text"])),
        (
            "search",
            f.raw(
                &["--question", "refunds post late", "--format", "text"],
                None,
            ),
        ),
    ] {
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert!(
            !out.stdout
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t')
                && !out.stdout.contains('\u{202e}'),
            "{name}: {:?}",
            out.stdout
        );
        assert!(out.stdout.contains(visible), "{name}: {}", out.stdout);
    }
    // JSON carries the text as it was saved.
    let json = f.search(&["--question", "refunds post late"]);
    let hit = json["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "trap")
        .unwrap();
    assert!(hit["text"].as_str().unwrap().starts_with(hostile), "{hit}");
}

/// Issue 65: a response over `limits.response_bytes` loses its lowest-ranked hits, with a
/// warning naming the limit, and still leads with the best.
#[test]
fn a_response_over_its_bound_is_cut_from_the_end_with_a_warning() {
    let f = Fixture::new();
    let ask = || {
        f.search(&[
            "--question",
            "orders customers amount status",
            "--channels",
            "text",
            "--max-entities",
            "50",
        ])
    };
    let whole = ask();
    let whole_size = whole.to_string().len();
    assert!(whole_size > 2_000, "{whole_size}");
    let limit = whole_size / 2;
    let config = f.store.parent().unwrap().join("slayer.toml");
    std::fs::write(&config, format!("[limits]\nresponse_bytes = {limit}\n")).unwrap();
    let cut = ask();
    let entities = |v: &Value| v["entities"].as_array().unwrap().len();
    assert!(entities(&cut) < entities(&whole), "{cut}");
    assert_eq!(cut["entities"][0], whole["entities"][0], "the best stays");
    let warning = cut["warnings"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap();
    assert!(
        warning.starts_with(&format!(
            "response cut to {} of {} entities",
            entities(&cut),
            entities(&whole)
        )) && warning.ends_with(&format!(
            "the limit is {limit} (limits.response_bytes in slayer.toml)."
        )),
        "{warning}"
    );
    // The warning itself comes on top of the bound.
    assert!(
        cut.to_string().len() <= limit + 300,
        "{}",
        cut.to_string().len()
    );
}
