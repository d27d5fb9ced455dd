//! `slayer-embed`: see `slayer-embed --help`.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use slayer_embed::EmbedError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_for(cli::ABOUT_CLI);
    cli.common
        .handle_signals("slayer-embed", slayer_common::shutdown::Mode::Writer);
    let store = cli.common.store.clone();
    slayer_common::cli::main_on_store(&store, || commands::run(cli), is_usage)
}

/// Bad input is a usage error (2); anything else that stopped the run is a failure (1).
fn is_usage(err: &anyhow::Error) -> bool {
    matches!(err.downcast_ref::<EmbedError>(), Some(EmbedError::Input(_)))
}
