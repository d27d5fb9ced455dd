//! What the binary's process sets up once, for `main` and for the MCP server's store thread
//! alike: the global thread pool, and the memory filter's defaults from the environment.

use slayer_common::env;
use slayer_search::request::MemoryDefaults;
use slayer_search::SearchError;

/// Whether this process sizes the global pool (every core) rather than the caller's
/// `RAYON_NUM_THREADS`.
static POOL_OF_EVERY_CORE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Builds the global pool with the calling thread as one of its threads (see `main`): once,
/// from the thread that will search, before anything else uses the pool. Leaves a pool the
/// caller sized with `RAYON_NUM_THREADS` to rayon.
pub(crate) fn join_the_pool() {
    if !POOL_OF_EVERY_CORE.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    pool_here(cores);
}

/// The global pool of `threads` threads, the calling thread one of them. Fails only when the
/// pool already exists, which then keeps its size.
pub(crate) fn pool_here(threads: usize) {
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .use_current_thread()
        .build_global();
}

/// This process sizes the global pool (every core), the caller having left
/// `RAYON_NUM_THREADS` unset.
pub(crate) fn pool_of_every_core() {
    POOL_OF_EVERY_CORE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The memory filter's defaults from `SLAYER_CONFIDENCE_FLOOR` and `SLAYER_HIGH_ORDER_SEARCH`.
pub(crate) fn memory_defaults() -> Result<MemoryDefaults, SearchError> {
    MemoryDefaults::from_values(
        env::var(env::CONFIDENCE_FLOOR).as_deref(),
        env::var(env::HIGH_ORDER_SEARCH).as_deref(),
    )
}
