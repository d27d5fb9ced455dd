//! `slayer-memory`: see `slayer-memory --help`.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;
use slayer_common::exit::{is_broken_pipe, ExitStatus};
use slayer_memory::MemoryError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(status) => status.into(),
        Err(err) => {
            if err.chain().any(is_broken_pipe) {
                return ExitStatus::Success.into();
            }
            output::report_error(&err);
            exit_status_of(&err).into()
        }
    }
}

/// Usage and unreadable input are 2; a request that cannot be done (bad id, unresolvable
/// entity, missing memory) is 1, as in the original; so is anything that failed while running.
fn exit_status_of(err: &anyhow::Error) -> ExitStatus {
    if err.downcast_ref::<commands::UsageError>().is_some() {
        return ExitStatus::Usage;
    }
    match err.downcast_ref::<MemoryError>() {
        Some(MemoryError::Line { .. } | MemoryError::Read(_)) => ExitStatus::Usage,
        _ => ExitStatus::Failure,
    }
}
