//! `SLAYER_FORMAT`: a person's preferred output format, for the terminal only.
//!
//! A shell that exports `SLAYER_FORMAT=text` must not change what a pipe carries
//! (`slayer-index load | slayer-embed refresh` reads records), so the variable applies only
//! when stdout is a terminal; `--format` always wins.

use std::io::IsTerminal;

/// The variable's name.
pub const FORMAT_ENV: &str = "SLAYER_FORMAT";

/// The format `SLAYER_FORMAT` asks for, when stdout is a terminal and it is set.
pub fn terminal_format() -> Option<String> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    std::env::var(FORMAT_ENV).ok().filter(|v| !v.is_empty())
}

/// The format to use: the flag, else `SLAYER_FORMAT` at a terminal, else `default`. `parse`
/// reads a format name; an unknown one in the variable is an error naming it.
pub fn choose<F>(
    flag: Option<F>,
    default: F,
    parse: impl Fn(&str) -> Option<F>,
) -> Result<F, String> {
    if let Some(format) = flag {
        return Ok(format);
    }
    match terminal_format() {
        None => Ok(default),
        Some(name) => parse(&name)
            .ok_or_else(|| format!("{FORMAT_ENV}={name} is not a format; use json, jsonl or text")),
    }
}
