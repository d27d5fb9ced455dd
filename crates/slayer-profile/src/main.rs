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
    // A source is an argument, which `ps` shows every user: say where a password belongs.
    if cli
        .sources
        .iter()
        .any(|s| slayer_common::store::location::holds_secret(s))
    {
        eprintln!(
            "warning: the password in the source can be read by every user of this machine \
             (`ps`); put it in PGPASSWORD or ~/.pgpass instead"
        );
    }
    slayer_common::cli::main_with(|| commands::run(cli), is_usage)
}

/// Bad usage or input is 2 (see [`ProfileError::is_usage`]); anything else that stopped the run
/// is 1. A closed stdout (`| head`) ends the run quietly, as in every binary.
fn is_usage(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ProfileError>()
        .is_some_and(ProfileError::is_usage)
}
