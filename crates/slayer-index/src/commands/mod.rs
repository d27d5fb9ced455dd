//! One module per subcommand: each opens what it needs, does its work in one transaction and
//! reports. This module only dispatches.

use anyhow::Result;
use slayer_common::cli::Format;
use slayer_common::exit::ExitStatus;

use crate::cli::{Cli, Command};

mod export;
mod import;
mod import_slayer;
mod load;
mod migrate;
mod rebuild;
mod remove;
mod render;
mod show;
mod stats;

use load::LoadMode;

pub fn run(cli: Cli) -> Result<ExitStatus> {
    let default_format = match cli.command {
        Command::Stats { .. } => Format::Text,
        _ => Format::Jsonl,
    };
    let mut out = cli.common.output.output(default_format)?;
    let store = &cli.common.store;
    match cli.command {
        Command::Load {
            file,
            sync,
            dry_run,
            allow_shrink,
        } => load::load(
            store,
            &file,
            LoadMode {
                sync,
                dry_run,
                allow_shrink,
            },
            &mut out,
        ),
        Command::Render { file } => render::render(&file, &mut out),
        Command::ImportSlayer { dir } => import_slayer::import_slayer(store, &dir, &mut out),
        Command::Import {
            layer,
            path,
            datasource,
            load,
            report,
            memories,
            dialect,
        } => import::run(
            store,
            import::Source {
                layer,
                path: &path,
                datasource: datasource.as_deref(),
                dialect: &dialect,
            },
            load,
            report.as_deref(),
            memories.as_deref(),
            &mut out,
        ),
        Command::Remove { canonical } => remove::remove_entity(store, &canonical, &mut out),
        Command::Show { canonical } => show::show(store, &canonical, &mut out),
        Command::Export { datasource } => export::export(store, datasource.as_deref(), &mut out),
        Command::Rebuild => rebuild::rebuild(store, &mut out),
        Command::Stats { check } => stats::stats(store, check, &mut out),
        Command::Migrate => migrate::migrate(store, &mut out),
    }
}
