//! One module per subcommand (`save`, `forget`, `list`, `show`, `export`, `review` with
//! `approve` and `reject`, `import`, `ingest`): each opens the store, does its work in one
//! transaction, brings the index up to date and reports. This module only dispatches.

use anyhow::Result;
use slayer_common::cli::Format;
use slayer_common::exit::ExitStatus;

use crate::cli::{Cli, Command, OnOff};

mod export;
mod forget;
mod import;
mod ingest;
mod list;
mod review;
mod save;
mod show;

use import::Writing;

pub fn run(cli: Cli) -> Result<ExitStatus> {
    let default_format = match cli.command {
        Command::Export | Command::Import { .. } | Command::Ingest { .. } => Format::Jsonl,
        _ => Format::Text,
    };
    let mut out = cli.common.output.output(default_format)?;
    let store = &cli.common.store;
    let status = match cli.command {
        Command::Save(args) => save::save(store, args, &mut out),
        Command::Forget { id, soft } => forget::forget(store, &id, soft, &mut out),
        Command::List {
            entity,
            tiers,
            deleted,
        } => list::list(store, entity.as_deref(), &tiers, deleted, &mut out),
        Command::Show { ids } => show::show(store, &ids, &mut out),
        Command::Review {
            require,
            project,
            agent,
        } => match require {
            Some(on) => review::require(store, on == OnOff::On, &mut out),
            None => {
                let owners = slayer_memory::review::Owners {
                    project: project.as_deref(),
                    agent: agent.as_deref(),
                };
                review::list(store, &owners, &mut out)
            }
        },
        Command::Approve { ids } => review::approve(store, &ids, &mut out),
        Command::Reject { ids } => review::reject(store, &ids, &mut out),
        Command::Export => export::export(store, &mut out),
        Command::Import {
            file,
            keep_going,
            no_embed,
            sync,
            dry_run,
            allow_shrink,
        } => {
            let writing = Writing {
                sync,
                dry_run,
                allow_shrink,
                embed: !no_embed,
            };
            import::import(store, &file, keep_going, &writing, &mut out)
        }
        Command::Ingest {
            paths,
            split,
            no_sync,
            dry_run,
            allow_shrink,
            no_embed,
        } => {
            let writing = Writing {
                sync: (!no_sync).then(|| slayer_memory::kb::PREFIX.to_owned()),
                dry_run,
                allow_shrink,
                embed: !no_embed,
            };
            ingest::ingest(store, &paths, split, &writing, &mut out)
        }
    }?;
    out.finish()?;
    Ok(status)
}
