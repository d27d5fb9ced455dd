//! What a search process keeps open between requests: the store connection, the catalog and
//! memories ([`Corpus`]), the full-text index, the dense channel, the planner, the limits and
//! the time spent per stage. The stages themselves live in [`crate::pipeline`] and below; a
//! context only holds what they read, and knows when it went stale.

use slayer_common::store::{Store, StoreRead};

use crate::channels::dense::Dense;
use crate::channels::lexical::TextIndex;
use crate::corpus::Corpus;
use crate::plan::Planner;
use crate::request::MemoryDefaults;
use crate::timings::Timings;
use crate::SearchError;

/// Everything a search reads, opened once and kept while the store does not change.
pub struct Context<'a> {
    /// The store, read through its interface.
    pub conn: &'a dyn StoreRead,
    /// The full-text index, opened on the first question.
    pub text: TextIndex,
    /// Catalog and memories, read as needed.
    pub corpus: Corpus<'a>,
    /// Channel 3, opened on the first question.
    pub dense: Dense,
    /// The query planner (`--plan auto`): its configuration and LLM settings.
    pub(crate) planner: Planner,
    /// What one request may carry (`[limits]` in slayer.toml; the defaults until the binary
    /// sets them).
    pub limits: slayer_common::limits::Limits,
    /// Time per stage, summed over the process's searches (`SLAYER_TIMINGS=1`); the dense
    /// channel adds its own stages through a handle to the same laps.
    pub timings: Timings,
    /// The memory filter's defaults the process's environment set (the binary reads them).
    pub memory_defaults: MemoryDefaults,
    /// SQLite's `data_version` when the caches above were filled.
    data_version: Option<i64>,
    /// The caches above must be read afresh, changed store or not.
    stale: bool,
}

impl<'a> Context<'a> {
    /// A context on an open store, planning with `planner`.
    pub fn on(store: &'a Store, planner: Planner) -> Result<Context<'a>, SearchError> {
        let timings = Timings::default();
        let cache = store.is_server().then(|| store.index_dir());
        Ok(Context {
            conn: store,
            text: TextIndex::new(store.path().to_owned(), cache),
            corpus: Corpus::load(store)?,
            dense: Dense::at(store.vectors_dir(), timings.clone()),
            planner,
            limits: Default::default(),
            timings,
            memory_defaults: MemoryDefaults::default(),
            data_version: None,
            stale: false,
        })
    }

    /// For a process that stays open (`--batch`): when another connection has committed since
    /// the caches were filled (SQLite's `PRAGMA data_version`, one cheap read), drops what may
    /// be stale (the catalog, the memory cache and query-bearing ids, the index searcher, the
    /// embedding rows) and keeps what cannot be (the loaded embedding model, question
    /// embeddings). Whether anything was dropped.
    pub fn refresh_if_changed(&mut self) -> Result<bool, SearchError> {
        let now = self.conn.data_version()?;
        let before = self.data_version.replace(now);
        let forced = std::mem::take(&mut self.stale);
        if !forced && before.is_none_or(|b| b == now) {
            return Ok(false);
        }
        self.corpus = Corpus::load(self.conn)?;
        self.text = self.text.reopened();
        self.dense.forget_rows();
        Ok(true)
    }

    /// For a process that answers many requests (`--batch`, MCP): keeps what every question
    /// reads in memory of its own ([`Dense::serve`], [`TextIndex::serve`]).
    pub fn serve(&mut self) {
        self.dense.serve();
        self.text.serve();
    }

    /// Makes the next [`Context::refresh_if_changed`] read everything afresh (after a call
    /// that stopped half way through filling the caches).
    pub fn forget_caches(&mut self) {
        self.stale = true;
    }
}
