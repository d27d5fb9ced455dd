//! `slayer-profile`: see `slayer-profile --help`.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;
use slayer_profile::ProfileError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    slayer_common::cli::warn_of_passwords_in(&cli.sources);
    slayer_common::cli::main_with(|| commands::run(cli), is_usage)
}

/// Bad usage or input is 2 (see [`ProfileError::is_usage`]); anything else that stopped the run
/// is 1. A closed stdout (`| head`) ends the run quietly, as in every binary.
fn is_usage(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ProfileError>()
        .is_some_and(ProfileError::is_usage)
}
