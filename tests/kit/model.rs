//! The local embedding model for the test kit (`mod.rs` beside this file), for the binaries'
//! tests that link the `slayer-embed` library.

use std::path::PathBuf;

/// The folder holding `all-MiniLM-L6-v2` (what `scripts/fetch-model.sh` fills); panics saying
/// how to fetch it when it is missing.
pub fn models_dir() -> PathBuf {
    let dir = slayer_embed::local::models_dir();
    let model = dir.join(slayer_embed::local::DEFAULT_MODEL);
    slayer_embed::local::check_folder(&model).unwrap_or_else(|why| panic!("{why}"));
    dir
}
