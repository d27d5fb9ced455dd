//! The one place that decides what reaches stdout and stderr, and in which format.
#![allow(clippy::print_stderr)]

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use serde_json::Value;
use slayer_common::jsonl::write_line;

use crate::cli::Format;

pub struct Output {
    pub format: Format,
    quiet: bool,
    out: BufWriter<Stdout>,
    flush_each: bool,
}

impl Output {
    pub fn new(format: Format, quiet: bool) -> Output {
        let stdout = io::stdout();
        Output {
            format,
            quiet,
            flush_each: stdout.is_terminal(),
            out: BufWriter::new(stdout),
        }
    }

    /// A note for people on stderr.
    pub fn note(&mut self, message: &str) {
        if !self.quiet {
            let _ = self.out.flush();
            eprintln!("{message}");
        }
    }

    /// One result: a JSON object (pretty for json, one line for jsonl) or its text form.
    pub fn result(&mut self, value: &Value, text: &str) -> io::Result<()> {
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut self.out, value)?;
                writeln!(self.out)?;
            }
            Format::Jsonl => write_line(&mut self.out, value)?,
            Format::Text => {
                if !text.is_empty() {
                    writeln!(self.out, "{text}")?;
                }
            }
        }
        self.line_done()
    }

    /// A stream of records: an array for json, lines for jsonl, `text` lines for text.
    pub fn records(&mut self, values: &[Value], text: impl Fn(&Value) -> String) -> io::Result<()> {
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut self.out, values)?;
                writeln!(self.out)?;
            }
            Format::Jsonl => {
                for v in values {
                    write_line(&mut self.out, v)?;
                    self.line_done()?;
                }
            }
            Format::Text => {
                for v in values {
                    writeln!(self.out, "{}", text(v))?;
                    self.line_done()?;
                }
            }
        }
        self.out.flush()
    }

    fn line_done(&mut self) -> io::Result<()> {
        if self.flush_each {
            self.out.flush()?;
        }
        Ok(())
    }

    pub fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `Error: <message>` on stderr, the original's wording.
pub fn report_error(err: &anyhow::Error) {
    eprintln!("Error: {err:#}");
}
