//! Links the binary position-dependent on Linux: a PIE's ~50,000 start-up relocations cost a
//! one-shot call ~0.9 ms of its ~7 (docs/performance/startup.md).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
