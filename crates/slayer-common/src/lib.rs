//! Shared foundations of the slayer binaries, kept deliberately small.
//!
//! - [`canonical`]: canonical entity ids (`<ds>`, `<ds>.<model>`, `<ds>.<model>.<leaf>`,
//!   `memory:<id>`), the rooting and cascade rules, and the name/id charset rules.
//! - [`records`]: the JSON-lines record types, with the Python original's field names.
//! - [`jsonl`]: reading records with `line N: …` errors, writing one record per line.
//! - [`store`]: the store behind one interface ([`store::StoreRead`], [`store::StoreWrite`]),
//!   implemented by the SQLite file (WAL, busy timeout, schema version and migrations).
//! - [`pg`]: PostgreSQL connections as libpq makes them (URL or `key=value`, environment,
//!   password file, `sslmode`), for the PostgreSQL source and the store on a server.
//! - [`exit`]: the exit codes every binary uses.
//! - [`env`]: the registry of every environment variable slayer reads.
//! - [`limits`]: what one request may carry, and `slayer.toml`'s `[limits]`.
//! - [`hash_index`]: positions of ids by hash, for ids looked up many times a question.
//! - [`secrets`]: URLs shown with their secrets masked, and messages scrubbed of them.
//! - [`mapped`] and [`simd`]: read-only memory maps and the dense search's AVX2 kernels, with
//!   [`shutdown`]'s signal handler the workspace's only (audited) uses of `unsafe`.
//! - [`shutdown`]: SIGTERM and SIGINT: stop taking work, drain what is under way, then end
//!   (the only code here that may end the process).
//! - [`cli`]: the shared flags (with `SLAYER_FORMAT`, which applies at a terminal only), the
//!   `main` skeleton and the one stdout/stderr [`cli::Output`].
//!
//! Nothing here but [`cli`] prints, and nothing exits; errors are typed and read as sentences a user can act on.
#![warn(missing_docs)]

pub mod canonical;
pub mod cli;
pub mod env;
pub mod exit;
pub mod hash_index;
pub mod jsonl;
pub mod limits;
pub mod mapped;
pub mod pg;
pub mod records;
pub mod secrets;
pub mod shutdown;
pub mod simd;
pub mod store;
