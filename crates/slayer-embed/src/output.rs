//! The one place that decides what reaches stdout and stderr, and in which format.
#![allow(clippy::print_stderr)]

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use serde_json::Value;
use slayer_common::jsonl::write_line;

use crate::cli::Format;

pub struct Output {
    format: Format,
    quiet: bool,
    out: BufWriter<Stdout>,
}

impl Output {
    pub fn new(format: Format, quiet: bool) -> Output {
        Output {
            format,
            quiet,
            out: BufWriter::new(io::stdout()),
        }
    }

    /// A note for people on stderr.
    pub fn note(&mut self, message: &str) {
        if !self.quiet {
            let _ = self.out.flush();
            eprintln!("{message}");
        }
    }

    /// A warning on stderr (shown even with `--quiet`).
    pub fn warn(&mut self, message: &str) {
        let _ = self.out.flush();
        eprintln!("warning: {message}");
    }

    /// Records: an array for json, lines for jsonl, `text` lines for text.
    pub fn records(&mut self, values: &[Value], text: impl Fn(&Value) -> String) -> io::Result<()> {
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut self.out, values)?;
                writeln!(self.out)?;
            }
            Format::Jsonl => {
                for v in values {
                    write_line(&mut self.out, v)?;
                }
            }
            Format::Text => {
                for v in values {
                    writeln!(self.out, "{}", text(v))?;
                }
            }
        }
        self.out.flush()
    }

    /// One result: pretty JSON, one line, or its text form.
    pub fn result(&mut self, value: &Value, text: &str) -> io::Result<()> {
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut self.out, value)?;
                writeln!(self.out)?;
            }
            Format::Jsonl => write_line(&mut self.out, value)?,
            Format::Text => write!(self.out, "{text}")?,
        }
        self.out.flush()
    }

    /// Whether a progress bar may be drawn.
    pub fn progress_allowed(&self) -> bool {
        !self.quiet && io::stderr().is_terminal()
    }
}

/// `Error: <message>` on stderr.
pub fn report_error(err: &anyhow::Error) {
    eprintln!("Error: {err:#}");
}
