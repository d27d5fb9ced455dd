//! The one place that decides what reaches stdout and stderr, and in which format.
#![allow(clippy::print_stderr)]

use std::cell::Cell;
use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use slayer_common::jsonl::write_line;

use crate::cli::Format;

/// Writes records to stdout and notes to stderr.
pub struct Output {
    format: Format,
    quiet: bool,
    out: BufWriter<Stdout>,
    flush_each: bool,
    buffered: Vec<Value>,
    warned: Cell<bool>,
}

impl Output {
    pub fn new(format: Format, quiet: bool) -> Output {
        let stdout = io::stdout();
        Output {
            format,
            quiet,
            flush_each: stdout.is_terminal(),
            out: BufWriter::new(stdout),
            buffered: Vec::new(),
            warned: Cell::new(false),
        }
    }

    /// A note for people on stderr, after the records written so far.
    pub fn note(&mut self, message: &str) {
        if !self.quiet {
            let _ = self.out.flush();
            eprintln!("{message}");
        }
    }

    /// A warning on stderr; any warning makes the exit status 1, even when `-q` hides it.
    pub fn warn(&self, message: &str) {
        self.warned.set(true);
        if !self.quiet {
            eprintln!("warning: {message}");
        }
    }

    /// Whether a warning was written (or would have been, without `-q`).
    pub fn warned(&self) -> bool {
        self.warned.get()
    }

    /// A progress bar on stderr, drawn only when stderr is a terminal.
    pub fn progress(&self, len: usize, enabled: bool) -> ProgressBar {
        if self.quiet || !enabled || !io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} profiling [{bar:30}] {pos}/{len} tables  {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    }

    /// One record.
    pub fn record(&mut self, value: Value) -> io::Result<()> {
        match self.format {
            Format::Jsonl => {
                write_line(&mut self.out, &value)?;
                if self.flush_each {
                    self.out.flush()?;
                }
            }
            Format::Json => self.buffered.push(value),
            Format::Text => {
                text_record(&mut self.out, &value)?;
                if self.flush_each {
                    self.out.flush()?;
                }
            }
        }
        Ok(())
    }

    pub fn finish(&mut self) -> io::Result<()> {
        if self.format == Format::Json {
            serde_json::to_writer_pretty(&mut self.out, &self.buffered)?;
            writeln!(self.out)?;
        }
        self.out.flush()
    }
}

fn text_record(out: &mut impl Write, v: &Value) -> io::Result<()> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match v.get("kind").and_then(Value::as_str) {
        Some("datasource") => writeln!(out, "datasource {} ({})", s(v, "name"), s(v, "type")),
        Some("model") => {
            let empty = Vec::new();
            let cols = v.get("columns").and_then(Value::as_array).unwrap_or(&empty);
            let sampled = cols.iter().filter(|c| c.get("sampled").is_some()).count();
            writeln!(
                out,
                "model {}.{}  {}  {} columns, {} sampled",
                s(v, "data_source"),
                s(v, "name"),
                v.get("sql_table")
                    .and_then(Value::as_str)
                    .map_or("(sql)".to_owned(), str::to_owned),
                cols.len(),
                sampled
            )?;
            for c in cols {
                let ty = c.get("type").and_then(Value::as_str).unwrap_or("TEXT");
                let pk = if c.get("primary_key").and_then(Value::as_bool) == Some(true) {
                    " pk"
                } else {
                    ""
                };
                let mut line = format!("  {:<22} {:<9}{pk:<3}", s(c, "name"), ty);
                if let Some(text) = c.get("sampled").and_then(Value::as_str) {
                    line.push_str(if text.is_empty() { "(no values)" } else { text });
                }
                writeln!(out, "{}", line.trim_end())?;
            }
            Ok(())
        }
        _ => writeln!(out, "{v}"),
    }
}
