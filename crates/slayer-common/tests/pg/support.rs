//! Stores on the test server: one database, a fresh schema per test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use slayer_common::store::postgres::{PgEndpoint, PgStore};
use slayer_common::store::{OpenMode, StoreError};

use crate::pg_server::{SocketServer, ADMIN};

/// The database every test's schema lives in.
pub const DB: &str = "slayer_store";

/// The shared server, with [`DB`] created.
pub fn server() -> &'static SocketServer {
    let server = SocketServer::shared();
    server.create_database(DB);
    server
}

/// A schema name no other test of this process uses.
pub fn fresh_schema(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{tag}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// How a test names the store in messages.
pub fn shown(schema: &str) -> String {
    format!("postgres://test/{DB}#{schema}")
}

/// The store `schema` on `server`, connecting as `user` (with `password`; none for [`ADMIN`]).
pub fn endpoint(
    server: &SocketServer,
    schema: &str,
    user: &str,
    password: Option<&str>,
) -> PgEndpoint {
    let conninfo = server.conninfo(DB, user, password);
    let shown = shown(schema);
    let server_name = shown.clone();
    let secret = password.unwrap_or("").to_owned();
    PgEndpoint {
        connect: Box::new(move || {
            let mut config: postgres::Config =
                conninfo
                    .parse()
                    .map_err(|e: postgres::Error| StoreError::Postgres {
                        server: server_name.clone(),
                        message: e.to_string(),
                    })?;
            config.connect_timeout(Duration::from_secs(5));
            config
                .connect(postgres::NoTls)
                .map_err(|e| StoreError::Postgres {
                    server: server_name.clone(),
                    message: e.to_string(),
                })
        }),
        schema: schema.to_owned(),
        shown,
        scrub: Box::new(move |text| {
            if secret.is_empty() {
                text.to_owned()
            } else {
                text.replace(&secret, "***")
            }
        }),
    }
}

/// Opens `schema` on `server` as [`ADMIN`].
pub fn open_admin(
    server: &SocketServer,
    schema: &str,
    mode: OpenMode,
) -> Result<PgStore, StoreError> {
    PgStore::open(endpoint(server, schema, ADMIN, None), mode)
}

/// A new store in a fresh schema on the shared server.
pub fn new_store(tag: &str) -> (PgStore, String) {
    let schema = fresh_schema(tag);
    let store = open_admin(server(), &schema, OpenMode::CreateIfMissing)
        .unwrap_or_else(|e| panic!("creating store {schema}: {e}"));
    (store, schema)
}
