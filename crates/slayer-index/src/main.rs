//! `slayer-index`: see `slayer-index --help`.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;
use slayer_common::exit::{is_broken_pipe, ExitStatus};
use slayer_index::IndexError;

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

/// Bad input is a usage error (2); anything else that stopped the run is a failure (1).
fn exit_status_of(err: &anyhow::Error) -> ExitStatus {
    match err.downcast_ref::<IndexError>() {
        Some(
            IndexError::Input(_)
            | IndexError::Read(_)
            | IndexError::Project { .. }
            | IndexError::Usage(_)
            | IndexError::BadTarget(_),
        ) => ExitStatus::Usage,
        _ => ExitStatus::Failure,
    }
}
