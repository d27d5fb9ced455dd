//! The PostgreSQL store against a throwaway server: every read answers as SQLite's after the
//! same writes (parity.rs), and what only a server has: refusing a foreign schema, readers
//! never writing, writers serialized across connections, reconnecting after the server went
//! away, a read-only role, the change log (behaviour.rs); the vector change log (vectors.rs).

mod behaviour;
mod parity;
#[path = "../../../../tests/kit/pg_server/mod.rs"]
mod pg_server;
mod support;
mod vectors;
