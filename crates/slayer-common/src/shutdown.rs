//! Clean shutdown on SIGTERM and SIGINT (docs/spec/limits.md §16.9): the first signal asks the
//! process to stop taking new work and gives what is under way a bounded drain; a second
//! signal, or the drain running out, ends the process at once.
//!
//! What "under way" means is the process's own:
//!
//! - a writer ([`Mode::Writer`]: import, load, refresh, ingest, any command) is busy while a
//!   write transaction is open ([`Busy`], held by the store's write transaction). A signal
//!   while none is open ends the process at once, as the default action would (nothing is
//!   half-written: there is no transaction); one while a transaction is open lets the command
//!   finish (commit, print what it wrote) within the drain;
//! - a server ([`Mode::Server`]: `slayer-search mcp`, `--batch`) stops reading requests
//!   itself ([`requested`]), answers those under way, and returns; the drain bounds it;
//!   `--batch` waiting for its next line with none under way ([`Busy`] around each request)
//!   ends at once, with status 0: every request it read was answered.
//!
//! When the drain runs out, or at a second signal (one at least 100 ms after the first: a
//! signal sooner is the same request delivered twice), the process ends with status 128 + the
//! signal's number (130, 143) without running destructors: a transaction not yet committed is
//! rolled back (SQLite never commits a write-ahead log frame that was not committed; a server
//! rolls back a transaction whose connection closes).
//!
//! This module is the library's only code that may end the process, and with [`crate::mapped`]
//! and [`crate::simd`] its only `unsafe`: registering a signal handler and what the handler may
//! call (an atomic, `write(2)` to a pipe, `_exit(2)`).
#![allow(unsafe_code)]

use std::io::Write as _;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// How long what is under way may take after the first signal, unless `--drain` says.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(10);

/// What the process does with a first signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Finish an open write transaction within the drain; with none open, end at once.
    Writer,
    /// The server stops taking requests itself and returns; the drain is its bound.
    Server,
    /// As a server, but ends with status 0 as soon as no request is under way (waiting for a
    /// next line it will not take).
    Batch,
}

/// The first signal's number, 0 before any.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);
/// Signals received.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);
/// When the first signal came (milliseconds on the monotonic clock, plus one; 0 before any).
static FIRST_AT: AtomicU64 = AtomicU64::new(0);
/// A signal this soon after the first is the same request delivered twice, not a second one:
/// `timeout` signals its child and then its process group, and a terminal's Ctrl-C reaches a
/// whole pipeline. A person asking twice takes longer than this.
const SAME_REQUEST_MS: u64 = 100;
/// Units of work under way ([`Busy`]).
static BUSY: AtomicUsize = AtomicUsize::new(0);
/// The write end of the pipe the handler wakes the watchdog with.
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// Installed once per process.
static INSTALLED: OnceLock<()> = OnceLock::new();

/// Whether a first signal has come: stop taking new work.
pub fn requested() -> bool {
    SIGNALLED.load(Ordering::SeqCst) != 0
}

/// One unit of work under way (a write transaction, a `--batch` request): while any is held, a
/// first signal waits for it (within the drain) instead of ending the process.
#[derive(Debug)]
pub struct Busy(());

impl Busy {
    /// Marks work under way until the guard is dropped.
    pub fn start() -> Busy {
        BUSY.fetch_add(1, Ordering::SeqCst);
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Handles SIGTERM and SIGINT from now on, for a process called `name` (the prefix of its one
/// line on stderr). A second call does nothing. `Err` when the handlers cannot be installed
/// (then the default actions stay).
pub fn install(name: &'static str, mode: Mode, drain: Duration) -> std::io::Result<()> {
    if INSTALLED.set(()).is_err() {
        return Ok(());
    }
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    WAKE.store(write_end, Ordering::SeqCst);
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the action only touches atomics and calls write(2) and _exit(2), which are
        // async-signal-safe; it allocates nothing and takes no lock.
        unsafe { signal_hook_registry::register(signal, move || on_signal(signal)) }?;
    }
    std::thread::Builder::new()
        .name("shutdown".into())
        .spawn(move || watch(read_end, name, mode, drain))?;
    Ok(())
}

/// The handler: the first signal is noted and wakes the watchdog; the second ends the process.
fn on_signal(signal: i32) {
    let now = monotonic_ms().saturating_add(1);
    if RECEIVED.fetch_add(1, Ordering::SeqCst) > 0 {
        let first = FIRST_AT.load(Ordering::SeqCst);
        // `first` is 0 while the first signal's handler has not yet noted its time: that is
        // the same request too.
        if first != 0 && now.saturating_sub(first) >= SAME_REQUEST_MS {
            // SAFETY: _exit(2) is async-signal-safe.
            unsafe { libc::_exit(128 + signal) };
        }
        return;
    }
    FIRST_AT.store(now, Ordering::SeqCst);
    SIGNALLED.store(signal, Ordering::SeqCst);
    let fd = WAKE.load(Ordering::SeqCst);
    // SAFETY: one byte from a live buffer to the pipe; write(2) is async-signal-safe.
    let _ = unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
}

/// Milliseconds on the monotonic clock; clock_gettime(2) is async-signal-safe.
fn monotonic_ms() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the live `now`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let millis = u64::try_from(now.tv_nsec / 1_000_000).unwrap_or(0);
    secs.saturating_mul(1000).saturating_add(millis)
}

/// The watchdog: waits for the first signal, then for the drain.
fn watch(read_end: i32, name: &'static str, mode: Mode, drain: Duration) {
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reads one byte into a live buffer from the pipe made by `install`.
        let n = unsafe { libc::read(read_end, byte.as_mut_ptr().cast(), 1) };
        if n == 1
            || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
        {
            break;
        }
    }
    let signal = SIGNALLED.load(Ordering::SeqCst);
    let idle = BUSY.load(Ordering::SeqCst) == 0;
    match mode {
        Mode::Writer if idle => end(128 + signal),
        Mode::Batch if idle => end(0),
        _ => {}
    }
    // One write: stderr is unbuffered, and the process may end between the pieces of a
    // formatted line.
    let line = format!(
        "{name}: {}: finishing what is under way (at most {} s; a second signal stops at once)\n",
        signal_name(signal),
        drain.as_secs_f64()
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    let deadline = std::time::Instant::now() + drain;
    if mode == Mode::Batch {
        // The request under way is answered, then the loop waits for a line it will not take
        // (the client may keep its end open): end as soon as nothing is under way.
        while std::time::Instant::now() < deadline {
            if BUSY.load(Ordering::SeqCst) == 0 {
                end(0);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    std::thread::sleep(deadline.saturating_duration_since(std::time::Instant::now()));
    let _ = writeln!(
        std::io::stderr(),
        "{name}: stopped after the {} s drain; what was not committed is rolled back",
        drain.as_secs_f64()
    );
    end(128 + signal);
}

/// Ends the process. Stdout is not flushed here: another thread may hold its lock (a
/// `--batch` loop writes through a locked handle, and flushes after every answer).
fn end(status: i32) -> ! {
    // SAFETY: _exit(2) ends the process without running other threads' destructors, which is
    // the point: an open transaction must not be committed by a destructor.
    unsafe { libc::_exit(status) }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "signal",
    }
}

/// Parses `--drain`'s value: seconds, a decimal number (`0` ends at the first signal).
pub fn parse_drain(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds (e.g. 10, 0.5)"))?;
    if !secs.is_finite() || !(0.0..=3600.0).contains(&secs) {
        return Err(format!("'{text}' must be between 0 and 3600 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drain_is_seconds_within_bounds() {
        assert_eq!(parse_drain("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_drain("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_drain("0"), Ok(Duration::ZERO));
        assert!(parse_drain("-1")
            .unwrap_err()
            .contains("between 0 and 3600"));
        assert!(parse_drain("ten")
            .unwrap_err()
            .contains("not a number of seconds"));
        assert!(parse_drain("inf").is_err());
    }

    #[test]
    fn busy_counts_work_under_way() {
        let before = BUSY.load(Ordering::SeqCst);
        let a = Busy::start();
        let b = Busy::start();
        assert_eq!(BUSY.load(Ordering::SeqCst), before + 2);
        drop((a, b));
        assert_eq!(BUSY.load(Ordering::SeqCst), before);
    }
}
