//! The command-line plumbing every binary shares: the `--store`, `--format` and `-q` flags, the
//! one `main` skeleton (error → exit code, broken pipe = success, one error style) and the one
//! [`Output`] that decides what reaches stdout and stderr.
//!
//! This is the one module of the library side that speaks `anyhow`: it is `main`'s skeleton,
//! and the errors it reports are whatever the binaries' `run` functions returned.
#![allow(clippy::print_stderr)]

use std::cell::{Cell, RefCell};
use std::io::{self, BufWriter, IsTerminal, Stdout, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::exit::{is_broken_pipe, ExitStatus};
use crate::jsonl::{write_line, ReadError};

/// The variable that sets a person's default format at a terminal.
pub const FORMAT_ENV: &str = crate::env::FORMAT;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One pretty JSON document.
    Json,
    /// One JSON record per line.
    Jsonl,
    /// Text for people.
    Text,
}

/// The flags of every binary that reads or writes the store: `--store` and [`OutputArgs`].
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// The store: an SQLite file, or a PostgreSQL database shared by many hosts
    /// (postgres://USER@HOST/DB?schema=NAME, or libpq's key=value form; PG* variables and
    /// ~/.pgpass apply)
    #[arg(
        long,
        global = true,
        env = "SLAYER_STORE",
        hide_env_values = true,
        default_value = crate::store::DEFAULT_STORE
    )]
    pub store: PathBuf,
    /// Seconds what is under way may take after SIGTERM or SIGINT (a write, the requests a
    /// server is answering) before the process stops; a second signal stops it at once
    #[arg(long, global = true, value_name = "SECS", default_value = "10", value_parser = crate::shutdown::parse_drain)]
    pub drain: std::time::Duration,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: OutputArgs,
}

impl CommonArgs {
    /// Handles SIGTERM and SIGINT as `mode` says, with `--drain` (docs/spec/limits.md §16.9); a
    /// failure to install leaves the default actions, with a warning.
    pub fn handle_signals(&self, name: &'static str, mode: crate::shutdown::Mode) {
        if let Err(e) = crate::shutdown::install(name, mode, self.drain) {
            eprintln!(
                "warning: {name}: cannot handle SIGTERM and SIGINT ({e}); they end it at once"
            );
        }
    }
}

/// `--format` and `-q`, the same in every binary.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format: json, jsonl or text (each command has its default, named in its help; at
    /// a terminal, SLAYER_FORMAT sets the default).
    #[arg(long, global = true, value_enum)]
    pub format: Option<Format>,
    /// Nothing on stderr but errors: no summary, no warnings, no progress (the exit status
    /// still tells a problem).
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

impl OutputArgs {
    /// The format: the flag, else `SLAYER_FORMAT` at a terminal, else the command's default.
    ///
    /// The variable applies only when stdout is a terminal: a shell that exports
    /// `SLAYER_FORMAT=text` must not change what a pipe carries (`slayer-index load |
    /// slayer-embed refresh` reads records).
    pub fn format_or(&self, default: Format) -> Result<Format, UsageError> {
        if let Some(format) = self.format {
            return Ok(format);
        }
        if !io::stdout().is_terminal() {
            return Ok(default);
        }
        match std::env::var(FORMAT_ENV).ok().filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(name) => <Format as clap::ValueEnum>::from_str(&name, true).map_err(|_| {
                UsageError(format!(
                    "{FORMAT_ENV}={name} is not a format; use json, jsonl or text"
                ))
            }),
        }
    }

    /// The [`Output`] for a command whose default format is `default`.
    pub fn output(&self, default: Format) -> Result<Output, UsageError> {
        Ok(Output::new(self.format_or(default)?, self.quiet))
    }
}

/// The command line of a binary with subcommands: [`CommonArgs`] and the binary's commands.
#[derive(Debug, clap::Parser)]
pub struct Cli<C: clap::Subcommand> {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
    /// The binary's command.
    #[command(subcommand)]
    pub command: C,
}

/// What `--help` and `--version` say of a binary.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The binary's name.
    pub name: &'static str,
    /// One paragraph on what it does.
    pub about: &'static str,
    /// Runnable examples, printed after the options.
    pub examples: &'static str,
}

/// The commit the binaries were built from: `SLAYER_COMMIT` at build time, which
/// `scripts/package.sh` sets for the wheel and the tarball. A build script reading git would
/// recompile every crate at each commit, so a plain `cargo build` says it is not stamped.
pub const COMMIT: Option<&str> = option_env!("SLAYER_COMMIT");

/// What `--version` prints after the binary's name, and what a store records of the build
/// that last wrote it: `0.1.0 (commit 1a2b3c4d5e6f)`, or `0.1.0 (dev build)` where no commit
/// was stamped.
pub fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| match COMMIT.filter(|c| !c.is_empty()) {
        Some(commit) => format!("{} (commit {commit})", env!("CARGO_PKG_VERSION")),
        None => format!("{} (dev build)", env!("CARGO_PKG_VERSION")),
    })
}

/// The [`About`] of the calling binary: `about!("slayer-index", ABOUT, EXAMPLES)`.
#[macro_export]
macro_rules! about {
    ($name:literal, $about:expr, $examples:expr) => {
        $crate::cli::About {
            name: $name,
            about: $about,
            examples: $examples,
        }
    };
}

impl<C: clap::Subcommand> Cli<C> {
    /// Parses the process's arguments; on bad usage, `--help` or `--version` clap prints and
    /// exits, as with a derived parser.
    pub fn parse_for(about: About) -> Cli<C> {
        let mut command = <Self as clap::CommandFactory>::command()
            .name(about.name)
            .bin_name(about.name)
            .version(version())
            .about(about.about)
            .after_help(about.examples);
        let matches = command.clone().get_matches();
        <Self as clap::FromArgMatches>::from_arg_matches(&matches)
            .unwrap_or_else(|e| e.format(&mut command).exit())
    }
}

/// Bad usage, caught after clap: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A JSON argument's text, given inline or as `@FILE`.
#[derive(Debug)]
pub struct JsonArg {
    /// The text, without the byte-order mark an editor may have put at the file's start.
    pub text: String,
    /// The file it was read from, if any.
    pub file: Option<String>,
}

impl JsonArg {
    /// Reads `arg`: `@FILE` reads the file, anything else is the JSON itself.
    pub fn read(arg: &str) -> std::io::Result<JsonArg> {
        match arg.strip_prefix('@') {
            Some(path) => {
                let text = std::fs::read_to_string(path)?;
                let text = match text.strip_prefix('\u{feff}') {
                    Some(rest) => rest.to_owned(),
                    None => text,
                };
                Ok(JsonArg {
                    text,
                    file: Some(path.to_owned()),
                })
            }
            None => Ok(JsonArg {
                text: arg.trim_start_matches('\u{feff}').to_owned(),
                file: None,
            }),
        }
    }

    /// Where the text came from, for a message about `flag`: `--inject @f.json` or `--inject`.
    pub fn source(&self, flag: &str) -> String {
        match &self.file {
            Some(path) => format!("{flag} @{path}"),
            None => flag.to_owned(),
        }
    }
}

/// Runs a binary's `run` and turns its outcome into the exit code: a closed pipe downstream is
/// success; any other error is printed once as `Error: <message>: <cause>…` and exits 2 when
/// it is bad usage or unusable input (a [`UsageError`], an input that cannot be opened or is
/// not UTF-8, or whatever
/// `is_usage` recognises) and 1 otherwise.
pub fn main_with(
    run: impl FnOnce() -> anyhow::Result<ExitStatus>,
    is_usage: impl Fn(&anyhow::Error) -> bool,
) -> ExitCode {
    finish(run(), is_usage, None)
}

/// [`main_with`] for a binary that works on the store at `store`: SQLite's bare failures on it
/// (`database is locked`, `disk I/O error`, a read-only or damaged file) are told with the
/// store's path and what to do ([`crate::store::explain_sqlite`]).
pub fn main_on_store(
    store: &std::path::Path,
    run: impl FnOnce() -> anyhow::Result<ExitStatus>,
    is_usage: impl Fn(&anyhow::Error) -> bool,
) -> ExitCode {
    // Before anything can quote the store (a password in a URL), whatever the command: a
    // connection string that does not parse is refused, masked.
    if let Err(refused) = crate::store::Location::parse(store) {
        eprintln!("Error: {}", terminal_safe(&refused.to_string()));
        return ExitStatus::Usage.into();
    }
    if crate::store::location::holds_secret(store) && on_command_line(store) {
        eprintln!(
            "warning: the password in --store can be read by every user of this machine (`ps`); \
             put it in PGPASSWORD or ~/.pgpass instead (or give the store in SLAYER_STORE)"
        );
    }
    finish(run(), is_usage, Some(store))
}

/// Warns when a source given as an argument (`slayer-profile postgres://u:pw@…`) holds a
/// password: `ps` shows arguments to every user of the machine.
pub fn warn_of_passwords_in(sources: &[std::path::PathBuf]) {
    let Some(source) = sources
        .iter()
        .find(|s| crate::store::location::holds_secret(s))
    else {
        return;
    };
    let scheme = source.to_string_lossy().to_ascii_lowercase();
    let instead = if scheme.starts_with("mysql:") || scheme.starts_with("mariadb:") {
        "MYSQL_PWD or ~/.my.cnf"
    } else {
        "PGPASSWORD or ~/.pgpass"
    };
    eprintln!(
        "warning: the password in the source can be read by every user of this machine \
         (`ps`); put it in {instead} instead"
    );
}

/// Whether `store` was given as an argument (`--store X` or `--store=X`), where `ps` shows it,
/// rather than in `SLAYER_STORE`.
fn on_command_line(store: &std::path::Path) -> bool {
    let store = store.as_os_str();
    std::env::args_os().any(|arg| {
        arg == store
            || arg
                .to_str()
                .and_then(|a| a.strip_prefix("--store="))
                .is_some_and(|a| std::ffi::OsStr::new(a) == store)
    })
}

fn finish(
    outcome: anyhow::Result<ExitStatus>,
    is_usage: impl Fn(&anyhow::Error) -> bool,
    store: Option<&std::path::Path>,
) -> ExitCode {
    match outcome {
        Ok(status) => status.into(),
        Err(err) => {
            if err.chain().any(is_broken_pipe) {
                return ExitStatus::Success.into();
            }
            eprintln!("Error: {}", terminal_safe(&error_message_on(&err, store)));
            let usage = err.downcast_ref::<UsageError>().is_some()
                || err.chain().any(|e| {
                    matches!(
                        e.downcast_ref::<ReadError>(),
                        Some(ReadError::Open { .. } | ReadError::Utf8(_))
                    )
                })
                || is_usage(&err);
            if usage {
                ExitStatus::Usage
            } else {
                ExitStatus::Failure
            }
            .into()
        }
    }
}

/// An error and its causes on one line, leaving out a cause whose text the message before it
/// already carries (many of our errors quote their cause in their own message).
pub fn error_message(err: &anyhow::Error) -> String {
    error_message_on(err, None)
}

/// The SQLite failure one link of an error chain is, if it is one.
fn sqlite_of<'e>(cause: &'e (dyn std::error::Error + 'static)) -> Option<&'e rusqlite::Error> {
    cause
        .downcast_ref::<rusqlite::Error>()
        .or_else(|| match cause.downcast_ref::<crate::store::StoreError>() {
            Some(crate::store::StoreError::Sqlite(e)) => Some(e),
            _ => None,
        })
        .or_else(|| {
            cause
                .downcast_ref::<crate::store::CommitError>()
                .and_then(|e| match &e.0 {
                    crate::store::StoreError::Sqlite(e) => Some(e),
                    _ => None,
                })
        })
}

/// [`error_message`], with SQLite's failure on the store at `store` (when given) told as
/// [`crate::store::explain_sqlite`] tells it, and nothing of the chain after it.
pub fn error_message_on(err: &anyhow::Error, store: Option<&std::path::Path>) -> String {
    // SQLite's own words and how they are told instead.
    let told = store.and_then(|store| {
        err.chain().find_map(|cause| {
            let e = sqlite_of(cause)?;
            crate::store::explain_sqlite(e, store).map(|told| (e.to_string(), told))
        })
    });
    let mut message = String::new();
    for cause in err.chain() {
        if let Some((raw, told)) = &told {
            // The first cause that is the failure, or says nothing more than it does.
            if sqlite_of(cause).is_some() || cause.to_string().ends_with(raw.as_str()) {
                if !message.is_empty() {
                    message.push_str(": ");
                }
                message.push_str(told);
                break;
            }
        }
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// Text made safe for a terminal: control characters other than newline and tab (ESC, and with
/// it every colour, cursor and OSC sequence; CR, BS, DEL, the C1 range) and the bidirectional
/// overrides that reorder what a reader sees are written as visible escapes (`\x1b`,
/// `\u{202e}`), so stored text (a memory, a description) can neither clear a reviewer's screen
/// nor hide part of itself. JSON output escapes them already.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => safe.push(c),
            c if (c as u32) < 0x80 => safe.push_str(&format!("\\x{:02x}", c as u32)),
            c => safe.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(safe)
}

/// Writes data to stdout (flushed per record when stdout is a terminal, so a person or a
/// wrapper sees each as it comes) and notes and warnings to stderr, after the data written so
/// far. `-q` silences both kinds of stderr line; a warning still counts in [`Output::warned`].
pub struct Output {
    format: Format,
    quiet: bool,
    out: RefCell<BufWriter<Stdout>>,
    flush_each: bool,
    /// json only: records collected for the one array [`Output::finish`] writes.
    array: Option<Vec<Value>>,
    warned: Cell<bool>,
}

impl Output {
    /// An output in `format`; `quiet` silences notes and warnings.
    pub fn new(format: Format, quiet: bool) -> Output {
        let stdout = io::stdout();
        Output {
            format,
            quiet,
            flush_each: stdout.is_terminal(),
            out: RefCell::new(BufWriter::new(stdout)),
            array: None,
            warned: Cell::new(false),
        }
    }

    /// The chosen format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// A one-line note for people on stderr.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            let _ = self.out.borrow_mut().flush();
            eprintln!("{}", terminal_safe(message));
        }
    }

    /// A problem that did not stop the command, on stderr as `warning: …`.
    pub fn warn(&self, message: &str) {
        self.warned.set(true);
        if !self.quiet {
            let _ = self.out.borrow_mut().flush();
            eprintln!("warning: {}", terminal_safe(message));
        }
    }

    /// Whether a warning was given (shown or silenced by `-q`).
    pub fn warned(&self) -> bool {
        self.warned.get()
    }

    /// Whether a progress bar may be drawn: stderr is a terminal and `-q` is off.
    pub fn progress_allowed(&self) -> bool {
        !self.quiet && io::stderr().is_terminal()
    }

    /// Starts a stream of records: with json, [`Output::finish`] writes them as one array (an
    /// empty one if none come).
    pub fn begin_records(&mut self) {
        if self.format == Format::Json && self.array.is_none() {
            self.array = Some(Vec::new());
        }
    }

    /// One record of a stream: a line for jsonl, `text(record)` and a newline for text,
    /// collected for the array with json.
    pub fn record(&mut self, value: &Value, text: impl FnOnce(&Value) -> String) -> io::Result<()> {
        match self.format {
            Format::Json => {
                self.begin_records();
                if let Some(array) = &mut self.array {
                    array.push(value.clone());
                }
                return Ok(());
            }
            Format::Jsonl => write_line(self.out.get_mut(), value)?,
            Format::Text => writeln!(self.out.get_mut(), "{}", terminal_safe(&text(value)))?,
        }
        self.line_done()
    }

    /// A whole stream of records (see [`Output::record`]), finished.
    pub fn records(&mut self, values: &[Value], text: impl Fn(&Value) -> String) -> io::Result<()> {
        self.begin_records();
        for value in values {
            self.record(value, &text)?;
        }
        self.finish()
    }

    /// One result: pretty JSON, one line, or `text` exactly as given (it carries its own
    /// newlines).
    pub fn result(&mut self, value: &Value, text: &str) -> io::Result<()> {
        match self.format {
            Format::Json => {
                let out = self.out.get_mut();
                serde_json::to_writer_pretty(&mut *out, value)?;
                writeln!(out)?;
            }
            Format::Jsonl => write_line(self.out.get_mut(), value)?,
            Format::Text => write!(self.out.get_mut(), "{}", terminal_safe(text))?,
        }
        self.finish()
    }

    /// Text for people, exactly as given (for commands whose text form is not one line per
    /// record).
    pub fn text(&mut self, text: &str) -> io::Result<()> {
        write!(self.out.get_mut(), "{}", terminal_safe(text))?;
        self.line_done()
    }

    /// Writes the json array of a stream, if one was begun, and flushes stdout.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(array) = self.array.take() {
            let out = self.out.get_mut();
            serde_json::to_writer_pretty(&mut *out, &array)?;
            writeln!(out)?;
        }
        self.out.get_mut().flush()
    }

    fn line_done(&mut self) -> io::Result<()> {
        if self.flush_each {
            self.out.get_mut().flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read x.db: {0}")]
    struct Quoting(#[source] io::Error);

    #[test]
    fn control_characters_and_bidi_overrides_are_written_as_escapes() {
        assert_eq!(terminal_safe("plain\n\tindented"), "plain\n\tindented");
        assert_eq!(
            terminal_safe("a\x1b[2J\x1b]0;title\x07b\rc\x08d\x7f e\u{9b}f\u{202e}g"),
            "a\\x1b[2J\\x1b]0;title\\x07b\\x0dc\\x08d\\x7f e\\u{9b}f\\u{202e}g"
        );
    }

    #[test]
    fn a_cause_already_quoted_is_not_repeated() {
        let err = anyhow::Error::new(Quoting(io::Error::other("disk on fire")));
        assert_eq!(error_message(&err), "cannot read x.db: disk on fire");
        let err = anyhow::Error::new(io::Error::other("disk on fire")).context("loading shop");
        assert_eq!(error_message(&err), "loading shop: disk on fire");
    }
}
