//! Links DuckDB. By default that is the prebuilt library `scripts/fetch-duckdb.sh` installs
//! (libduckdb-sys, built without `bundled`, asks for `-l duckdb`; this script says where it is
//! and writes that folder into the binaries' run path, so they run with no environment
//! variables; `SLAYER_DUCKDB_RUNPATH` replaces that run path for a relocatable build). With
//! the `bundled-duckdb` feature libduckdb-sys compiles DuckDB from source and there is nothing
//! to do here. On Linux the binary links position-dependent, as every slayer binary does
//! (docs/performance/startup.md).

use std::collections::HashMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
    if env::var_os("CARGO_FEATURE_BUNDLED_DUCKDB").is_some() {
        return;
    }
    // A relocatable build (scripts/package.sh: the wheel and the tarball) names the library's
    // folder relative to the binary, e.g. `$ORIGIN/../lib/slayer`, instead of this machine's
    // cache folder.
    println!("cargo::rerun-if-env-changed=SLAYER_DUCKDB_RUNPATH");
    match prebuilt_dir() {
        Ok(dir) => {
            println!("cargo::rustc-link-search=native={}", dir.display());
            let runpath = env::var("SLAYER_DUCKDB_RUNPATH")
                .ok()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| dir.display().to_string());
            println!("cargo::rustc-link-arg=-Wl,-rpath,{runpath}");
        }
        Err(message) => println!("cargo::error={message}"),
    }
}

/// The installed library's folder, checked against the pin it was installed from.
fn prebuilt_dir() -> Result<PathBuf, String> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let pin_path = manifest_dir.join("../../scripts/duckdb-prebuilt.pin");
    println!("cargo::rerun-if-changed={}", pin_path.display());
    let pin = read_pin(&pin_path)?;
    let version = pin_value(&pin, "DUCKDB_VERSION", &pin_path)?;
    let sha256 = pin_value(&pin, "DUCKDB_WHEEL_SHA256", &pin_path)?;

    for var in ["SLAYER_DUCKDB_DIR", "XDG_CACHE_HOME", "HOME"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    // The same default as scripts/fetch-duckdb.sh.
    let dir = match env::var_os("SLAYER_DUCKDB_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let cache = env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
                .ok_or("neither XDG_CACHE_HOME nor HOME is set, so the prebuilt DuckDB cannot be found; set SLAYER_DUCKDB_DIR")?;
            cache.join("slayer/duckdb").join(version)
        }
    };
    let stamp_path = dir.join("slayer-duckdb.stamp");
    println!("cargo::rerun-if-changed={}", stamp_path.display());
    let fix = "run scripts/fetch-duckdb.sh (it installs it once per machine), or build with \
               --features slayer-profile/bundled-duckdb to compile DuckDB from source";
    let stamp = fs::read_to_string(&stamp_path).map_err(|_| {
        format!(
            "the prebuilt DuckDB {version} is not installed in {}: {fix}",
            dir.display()
        )
    })?;
    if stamp.trim() != format!("{version} {sha256}") {
        return Err(format!(
            "{} holds another DuckDB ({}) than scripts/duckdb-prebuilt.pin pins ({version}): {fix}",
            dir.display(),
            stamp.trim()
        ));
    }
    Ok(dir)
}

fn read_pin(path: &Path) -> Result<HashMap<String, String>, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect())
}

fn pin_value<'a>(
    pin: &'a HashMap<String, String>,
    key: &str,
    path: &Path,
) -> Result<&'a str, String> {
    pin.get(key)
        .map(String::as_str)
        .ok_or_else(|| format!("{} has no {key}", path.display()))
}
