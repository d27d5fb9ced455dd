//! `slayer-index`: see `slayer-index --help`.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod output;
mod store_ops;

use std::process::ExitCode;

use slayer_index::IndexError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_for(cli::ABOUT_CLI);
    cli.common
        .handle_signals("slayer-index", slayer_common::shutdown::Mode::Writer);
    let store = cli.common.store.clone();
    slayer_common::cli::main_on_store(&store, || commands::run(cli), is_usage)
}

/// Bad input is a usage error (2); anything else that stopped the run is a failure (1).
fn is_usage(err: &anyhow::Error) -> bool {
    matches!(
        err.downcast_ref::<IndexError>(),
        Some(
            IndexError::Input(_)
                | IndexError::Read(_)
                | IndexError::Project { .. }
                | IndexError::BadTarget(_)
                | IndexError::UnknownDatasource { .. },
        )
    )
}
