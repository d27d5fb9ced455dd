//! `slayer-memory`: see `slayer-memory --help`.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod opening;

use std::process::ExitCode;

use slayer_memory::MemoryError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_for(cli::ABOUT_CLI);
    cli.common
        .handle_signals("slayer-memory", slayer_common::shutdown::Mode::Writer);
    let store = cli.common.store.clone();
    slayer_common::cli::main_on_store(&store, || commands::run(cli), is_usage)
}

/// Bad lines, unreadable input and malformed or over-limit fields are 2; a request that cannot
/// be done (bad id, unresolvable entity, missing memory) is 1, as in the original; so is
/// anything that failed while running.
fn is_usage(err: &anyhow::Error) -> bool {
    matches!(
        err.downcast_ref::<MemoryError>(),
        Some(MemoryError::Line { .. } | MemoryError::Read(_) | MemoryError::Input(_))
    )
}
