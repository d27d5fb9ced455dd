//! The MySQL / MariaDB connector: where the server is ([`dsn`]), one connection and its
//! read-only session ([`session`]), the catalog ([`introspect`]) and the profiling queries
//! ([`queries`]). Why this client crate: docs/internals/profile.md.

pub mod dsn;
pub mod introspect;
pub mod queries;
pub mod session;

pub use session::{MyConn, MyError, MySource};
