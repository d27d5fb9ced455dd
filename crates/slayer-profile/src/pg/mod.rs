//! The PostgreSQL connector: where the server is ([`dsn`]), TLS ([`tls`]), one connection and
//! its read-only transactions ([`session`]), the catalog ([`introspect`]) and the profiling
//! queries ([`queries`]).

pub mod introspect;
pub mod queries;
pub mod session;

pub use slayer_common::pg::{dsn, tls};

pub use session::{PgConn, PgError, PgSource};
