//! The local embedding model for the test kit (`mod.rs` beside this file), for the binaries'
//! tests that link the `slayer-embed` library.

// Not every binary's tests use every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The folder holding `all-MiniLM-L6-v2` (what `scripts/fetch-model.sh` fills); panics saying
/// how to fetch it when it is missing.
pub fn models_dir() -> PathBuf {
    let dir = slayer_embed::local::models_dir();
    let model = dir.join(slayer_embed::local::DEFAULT_MODEL);
    slayer_embed::local::check_folder(&model).unwrap_or_else(|why| panic!("{why}"));
    dir
}

/// A models folder holding `all-MiniLM-L6-v2` under its own name: the weights and tokenizer
/// linked, `config.json` copied so a test can change it.
pub fn model_copy(into: &Path) -> PathBuf {
    let source = models_dir().join(slayer_embed::local::DEFAULT_MODEL);
    let copy = into.join(slayer_embed::local::DEFAULT_MODEL);
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(source.join("config.json"), copy.join("config.json")).unwrap();
    for name in ["tokenizer.json", "model.safetensors"] {
        std::os::unix::fs::symlink(source.join(name), copy.join(name)).unwrap();
    }
    copy
}

/// Another revision of the same model: a key no loader reads, set to `note`, added to its
/// configuration.
pub fn change_revision(model: &Path, note: &str) {
    let path = model.join("config.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&text).unwrap();
    config["slayer_test_note"] = serde_json::Value::from(note);
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}
