//! Model revisions: a model changed under the same name leaves its rows stale, `status` counts
//! them, and `refresh` re-embeds exactly the stale and missing docs.

use std::path::Path;

use serde_json::Value;

use crate::model::{change_revision, model_copy};
use crate::support::{Out, TempStore};

fn embed(s: &TempStore, models: &Path, args: &[&str]) -> Out {
    s.run(
        "slayer-embed",
        args,
        &[("SLAYER_MODEL_DIR", models.to_str().unwrap())],
        None,
    )
}

fn statuses(out: &Out, status: &str) -> Vec<String> {
    out.lines()
        .iter()
        .filter(|r| r["status"] == status)
        .map(|r| r["canonical_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_changed_model_under_the_same_name_is_re_embedded_exactly_where_stale() {
    let s = TempStore::with_catalog();
    let models = tempfile::tempdir().unwrap();
    let model = model_copy(models.path());
    let docs = s.count("SELECT count(*) FROM docs");
    let first = embed(&s, models.path(), &["refresh", "--all"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(statuses(&first, "embedded").len() as i64, docs);
    let status = |models: &Path| -> Value {
        let out = embed(&s, models, &["status", "--format", "json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()
    };
    let before = status(models.path());
    let revision_a = before["active_revision"].as_str().unwrap().to_owned();
    assert_eq!(revision_a.len(), 16);
    assert_eq!(
        (&before["docs_current"], &before["docs_stale"]),
        (&Value::from(docs), &Value::from(0))
    );
    // The revision is cached in the folder, keyed by the files.
    assert!(model.join(".slayer-revision").is_file());
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM embeddings WHERE model_revision = '{revision_a}'"
        )),
        docs
    );

    // Same name, changed model; and two docs the old revision never saw.
    change_revision(&model, "another revision");
    let memories = "{\"kind\":\"memory\",\"id\":\"late1\",\"learning\":\"Refunds post on Mondays.\",\"entities\":[]}\n\
                    {\"kind\":\"memory\",\"id\":\"late2\",\"learning\":\"Churn is monthly.\",\"entities\":[]}\n";
    let out = s.run("slayer-memory", &["import", "-"], &[], Some(memories));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after = status(models.path());
    let revision_b = after["active_revision"].as_str().unwrap().to_owned();
    assert_ne!(revision_b, revision_a);
    assert_eq!(after["docs_current"], 0);
    assert_eq!(after["docs_stale"], docs);
    assert_eq!(after["docs_lacking_active"], 2);

    // Refresh re-embeds the stale rows and the two missing ones, nothing else.
    let refreshed = embed(&s, models.path(), &["refresh", "--all"]);
    assert_eq!(refreshed.code, 0, "{}", refreshed.stderr);
    assert_eq!(statuses(&refreshed, "embedded").len() as i64, docs + 2);
    assert!(refreshed
        .stderr
        .contains(&format!("{} embedded, 0 unchanged, 0 failed", docs + 2)));
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM embeddings WHERE model_revision = '{revision_b}'"
        )),
        docs + 2
    );
    let done = status(models.path());
    assert_eq!(
        (
            &done["docs_current"],
            &done["docs_stale"],
            &done["docs_lacking_active"]
        ),
        (&Value::from(docs + 2), &Value::from(0), &Value::from(0))
    );
    let again = embed(&s, models.path(), &["refresh", "--all"]);
    assert!(statuses(&again, "embedded").is_empty(), "{}", again.stdout);
    assert_eq!(statuses(&again, "unchanged").len() as i64, docs + 2);

    // Named docs follow the same rule: a stale row is re-embedded though its text is the same.
    change_revision(&model, "another revision");
    let config = model.join("config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("another revision", "a third revision"),
    )
    .unwrap();
    let named = s.run(
        "slayer-embed",
        &["refresh", "-"],
        &[("SLAYER_MODEL_DIR", models.path().to_str().unwrap())],
        Some("{\"kind\":\"doc\",\"canonical_id\":\"memory:late1\"}\n"),
    );
    assert_eq!(named.code, 0, "{}", named.stderr);
    assert_eq!(statuses(&named, "embedded"), ["memory:late1"]);
}
