//! `import-slayer`: a SLayer YAML project into the store, memories out as records.

use slayer_common::store::catalog;

use crate::kit::assert_success;
use crate::support::{json_lines, workspace_root, TempStore};

#[test]
fn imports_the_catalog_and_prints_memories_in_id_order() {
    let s = TempStore::new();
    let out = s
        .cmd(&["import-slayer", "tests/fixtures/slayer-project"])
        .output()
        .unwrap();
    assert_success(&out);
    let memories = json_lines(&out.stdout);
    assert_eq!(memories.len(), 2);
    assert_eq!(memories[0]["kind"], "memory");
    assert_eq!(memories[0]["id"], "1");
    assert_eq!(
        memories[0]["learning"],
        "Refunded orders keep their original amount; filter status = 'paid' for revenue.\n"
    );
    assert_eq!(memories[0]["entities"][0], "warehouse.orders.status");
    assert_eq!(memories[0]["created_at"], "2026-01-05T09:30:00Z");
    assert_eq!(memories[1]["id"], "kb.policy.42");
    assert_eq!(
        memories[1]["description"],
        "Guest checkouts have no e-mail."
    );
    assert_eq!(memories[1]["query"]["source_model"], "customers");

    let store = s.open();
    let ds = catalog::datasource(store.conn(), "warehouse")
        .unwrap()
        .unwrap();
    assert_eq!(ds.extra["port"], 5432, "connection fields are kept");
    let customers = catalog::model(store.conn(), "warehouse", "customers")
        .unwrap()
        .unwrap();
    assert_eq!(
        customers.data_source, "warehouse",
        "data_source comes from the folder"
    );
    let orders = catalog::model(store.conn(), "warehouse", "orders")
        .unwrap()
        .unwrap();
    assert_eq!(
        orders.extra["meta"]["owner"], "finance",
        "meta is kept, though never rendered"
    );
    assert_eq!(
        orders.joins[0].join_pairs,
        [("customer_id".to_owned(), "id".to_owned())]
    );
    let stats = s.stats_json();
    assert_eq!(stats["docs"]["column"], 8);
    assert_eq!(stats["docs"]["measure"], 1);

    let again = s
        .cmd(&["import-slayer", "tests/fixtures/slayer-project"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 docs changed, 0 removed"));
}

#[test]
fn a_bad_project_file_is_named_and_nothing_is_written() {
    let s = TempStore::new();
    let dir = s.dir.path().join("project");
    let src = workspace_root().join("tests/fixtures/slayer-project");
    for sub in ["datasources", "models/warehouse", "memories"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for entry in std::fs::read_dir(src.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(
        dir.join("models/warehouse/bad.yaml"),
        "name: bad\ncolumns:\n  - name: x\n    type: varchar\n",
    )
    .unwrap();
    s.cmd(&["import-slayer", dir.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "bad.yaml: model record: field 'columns[0].type': unknown column type 'varchar'",
        ));
    assert!(!s.store.exists(), "nothing may be written");
    s.cmd(&["import-slayer", s.dir.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a SLayer project folder"));
}

/// Issue 49's hostile project files: each is refused or named at once, bounded in memory.
mod hostile {
    use crate::support::{import, write_files, TempStore};

    #[test]
    fn symlink_loops_and_links_out_of_the_project_are_not_followed() {
        let s = TempStore::new();
        let dir = s.dir.path().join("proj");
        let outside = s.dir.path().join("outside");
        write_files(
            &dir,
            &[
                ("dbt_project.yml", "name: p\n"),
                ("models/m.yml", "semantic_models:\n  - name: m\n    model: ref('m')\n    measures:\n      - name: n\n        agg: count\n        expr: id\n"),
            ],
        );
        write_files(
            &outside,
            &[(
                "secret.yml",
                "semantic_models:\n  - name: secret\n    model: ref('s')\n",
            )],
        );
        std::os::unix::fs::symlink(".", dir.join("models/a")).unwrap();
        std::os::unix::fs::symlink(".", dir.join("models/b")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("models/elsewhere")).unwrap();
        let (code, records, stderr) = import(&s, &["import", "dbt", dir.to_str().unwrap()]);
        assert_eq!(code, 1, "{stderr}");
        let models: Vec<&str> = records
            .iter()
            .filter(|r| r["kind"] == "model")
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(models, ["m"], "read once, nothing from outside: {stderr}");
        assert!(
            stderr.contains("models/a:0: file 'models/a' skipped: a symbolic link to"),
            "{stderr}"
        );
        assert!(
            stderr.contains("a folder already read (a loop); not followed"),
            "{stderr}"
        );
        assert!(
            stderr.contains(
                "models/elsewhere:0: file 'models/elsewhere' skipped: a symbolic link to"
            ) && stderr.contains("outside the project; not followed"),
            "{stderr}"
        );
        assert!(!stderr.contains("second semantic model"), "{stderr}");
    }

    #[test]
    fn deep_nesting_and_oversized_files_are_skipped_named() {
        let s = TempStore::new();
        let dir = s.dir.path().join("m");
        let deep_js = format!(
            "cube(`deep`, {{ sql: `x`, meta: {}1{} }});\n",
            "[".repeat(6000),
            "]".repeat(6000)
        );
        let deep_yaml = format!(
            "cubes:\n  - name: flow\n    sql_table: t\n    meta: {}{}\n",
            "[".repeat(40_000),
            "]".repeat(40_000)
        );
        write_files(
            &dir,
            &[
                ("deep.js", &deep_js),
                ("flow.yml", &deep_yaml),
                ("ok.yml", "cubes:\n  - name: ok\n    sql_table: t\n"),
            ],
        );
        let started = std::time::Instant::now();
        let (code, records, stderr) = import(&s, &["import", "cube", dir.to_str().unwrap()]);
        assert!(started.elapsed().as_secs() < 10);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains("deep.js:0: file 'deep.js' skipped: its brackets nest 6002 deep, over limits.import_depth (256) in slayer.toml; not read"), "{stderr}");
        assert!(
            stderr.contains("flow.yml:0: file 'flow.yml' skipped: its brackets nest 40000 deep"),
            "{stderr}"
        );
        assert!(records.iter().any(|r| r["name"] == "ok"));
        // The limits are the store's: a smaller file cap names the limit.
        std::fs::write(
            s.dir.path().join("slayer.toml"),
            "[limits]\nimport_file_bytes = 100\n",
        )
        .unwrap();
        let (code, _, stderr) = import(
            &s,
            &["import", "cube", dir.join("flow.yml").to_str().unwrap()],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("no Cube model could be read"), "{stderr}");
        assert!(
            stderr.contains("bytes, over limits.import_file_bytes (100) in slayer.toml; not read"),
            "{stderr}"
        );
    }

    /// Issue 49: a description of megabytes is cut by the importers (named as a loss, as every
    /// lossy mapping is, exit 0) and
    /// refused by `load` (exit 2, nothing written), within `limits.description_bytes`.
    #[test]
    fn descriptions_over_the_limit_are_cut_on_import_and_refused_on_load() {
        let s = TempStore::new();
        let dir = s.dir.path().join("proj");
        let long = "word ".repeat(20_000);
        write_files(
            &dir,
            &[
                ("dbt_project.yml", "name: p\n"),
                (
                    "models/m.yml",
                    &format!("semantic_models:\n  - name: m\n    model: ref('m')\n    description: {long}\n    dimensions:\n      - name: d\n        type: categorical\n        description: short\n"),
                ),
            ],
        );
        let (code, records, stderr) = import(&s, &["import", "dbt", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains("models/m.yml:2: semantic model 'm' mapped with a loss: its description is 99999 bytes, cut to its first 65536 (limits.description_bytes in slayer.toml)"), "{stderr}");
        let model = records.iter().find(|r| r["kind"] == "model").unwrap();
        assert_eq!(model["description"].as_str().unwrap().len(), 65536);
        assert_eq!(model["columns"][0]["description"], "short");

        // `load` takes the cut record, and refuses the whole one, naming line and field.
        let mut whole = model.clone();
        whole["columns"][0]["description"] = long.clone().into();
        let lines = |model: &serde_json::Value| format!("{}\n{model}\n", records[0]);
        let file = s.dir.path().join("in.jsonl");
        std::fs::write(&file, lines(&whole)).unwrap();
        let out = s.cmd(&["load", file.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("line 2: model 'm': its column 'd' description is 100000 bytes; the limit is 65536 (limits.description_bytes in slayer.toml): shorten it, or raise the limit"), "{stderr}");
        assert!(
            !s.store.exists()
                || s.open()
                    .conn()
                    .query_row("SELECT count(*) FROM models", [], |r| r.get::<_, i64>(0))
                    .unwrap()
                    == 0
        );
        std::fs::write(&file, lines(model)).unwrap();
        let out = s.cmd(&["load", file.to_str().unwrap()]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_nested_manifest_is_read_in_bounded_memory() {
        let s = TempStore::new();
        let dir = s.dir.path().join("proj");
        write_files(
            &dir,
            &[
                ("dbt_project.yml", "name: p\n"),
                ("models/m.yml", "semantic_models:\n  - name: m\n    model: ref('m')\n    dimensions:\n      - name: d\n        type: categorical\n"),
            ],
        );
        // 100-deep arrays under a key no reader uses, repeated to ~10 MB.
        let chunk = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let junk: Vec<String> = (0..50_000).map(|_| chunk.clone()).collect();
        let manifest = format!(
            "{{\"nodes\": {{\"model.p.m\": {{\"resource_type\": \"model\", \"name\": \"m\", \"relation_name\": \"db.s.m\", \"config\": [{}], \"columns\": {{\"d\": {{\"description\": \"From the manifest.\"}}}}}}}}}}",
            junk.join(",")
        );
        write_files(&dir, &[("target/manifest.json", &manifest)]);
        // Under a 1 GB address-space cap (the whole tree of that manifest took 1.5 GiB).
        let bin = assert_cmd::cargo::cargo_bin("slayer-index");
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v 1000000; exec '{}' import dbt '{}'",
                bin.display(),
                dir.display()
            ))
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.contains("\"sql_table\":\"db.s.m\""), "{stdout}");
        assert!(stdout.contains("From the manifest."), "{stdout}");
    }
}

#[test]
fn a_file_whose_name_is_not_utf8_is_named() {
    use std::os::unix::ffi::OsStrExt;
    let s = TempStore::new();
    let dir = s.dir.path().join("m");
    crate::support::write_files(
        &dir,
        &[("ok.yml", "cubes:\n  - name: ok\n    sql_table: t\n")],
    );
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"bad\xff.yml"));
    std::fs::write(&odd, "cubes:\n  - name: odd\n    sql_table: t\n").unwrap();
    let (code, records, stderr) =
        crate::support::import(&s, &["import", "cube", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("skipped: its name is not valid UTF-8; rename it to have it read"),
        "{stderr}"
    );
    assert!(records.iter().any(|r| r["name"] == "ok"));
}
