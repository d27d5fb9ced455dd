//! The one place that decides what reaches stdout and stderr, and in which format.
#![allow(clippy::print_stderr)]

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use serde_json::Value;
use slayer_common::jsonl::{tagged, write_line};
use slayer_common::records::Doc;

use crate::cli::Format;

/// Writes data to stdout and notes to stderr.
pub struct Output {
    format: Format,
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

    /// A one-line note for people, on stderr.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }

    /// A warning: something went wrong that did not stop the command; shown even with `-q`.
    pub fn warn(&self, message: &str) {
        eprintln!("warning: {message}");
    }

    /// Doc records: jsonl / json array / `kind id` lines.
    pub fn docs(&mut self, docs: &[Doc], verb: &str) -> io::Result<()> {
        match self.format {
            Format::Text => {
                for d in docs {
                    writeln!(self.out, "{verb:<8} {:<11} {}", d.doc_kind, d.canonical_id)?;
                    self.line_done()?;
                }
            }
            _ => {
                let values: Vec<Value> = docs.iter().map(|d| tagged("doc", d)).collect();
                self.values(&values)?;
            }
        }
        self.finish()
    }

    /// Rendered docs for reading: the full text of each, headed by its id.
    pub fn doc_texts(&mut self, docs: &[Doc]) -> io::Result<()> {
        if self.format != Format::Text {
            return self.docs(docs, "");
        }
        for (i, d) in docs.iter().enumerate() {
            if i > 0 {
                writeln!(self.out)?;
            }
            writeln!(self.out, "── {} ({})", d.canonical_id, d.doc_kind)?;
            writeln!(self.out, "{}", d.text)?;
            self.line_done()?;
        }
        self.finish()
    }

    /// Arbitrary records in the json/jsonl formats (text falls back to jsonl).
    pub fn values(&mut self, values: &[Value]) -> io::Result<()> {
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut self.out, values)?;
                writeln!(self.out)?;
            }
            Format::Jsonl | Format::Text => {
                for v in values {
                    write_line(&mut self.out, v)?;
                    self.line_done()?;
                }
            }
        }
        self.finish()
    }

    /// One object: pretty JSON, one line, or `text` verbatim.
    pub fn object(&mut self, value: &Value, text: &str) -> io::Result<()> {
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut self.out, value)?;
                writeln!(self.out)?;
            }
            Format::Jsonl => write_line(&mut self.out, value)?,
            Format::Text => write!(self.out, "{text}")?,
        }
        self.finish()
    }

    fn line_done(&mut self) -> io::Result<()> {
        if self.flush_each {
            self.out.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Prints an error (with its causes) once, on stderr.
pub fn report_error(err: &anyhow::Error) {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
}

/// Prints bad input lines on stderr.
pub fn report_line_errors(errors: &[slayer_common::jsonl::LineError]) {
    for e in errors {
        eprintln!("error: {e}");
    }
    if errors.len() >= slayer_index::MAX_REPORTED_ERRORS {
        eprintln!("error: stopped after {} bad lines", errors.len());
    }
    eprintln!("nothing was written; fix the lines above and run again");
}
