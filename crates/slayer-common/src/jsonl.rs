//! JSON-lines input and output.
//!
//! Input is UTF-8, one JSON object per line, `\n` separated; blank lines are skipped but still
//! counted, so `line N` in a message is the line an editor shows. Every record names its `kind`.

use std::io::{BufRead, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::records::{Datasource, Doc, Memory, Model};

/// A record on a JSON-lines stream, tagged by its `kind` field.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Record {
    Datasource(Datasource),
    Model(Model),
    Memory(Memory),
    Doc(Doc),
}

impl Record {
    /// The `kind` string of this record.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Datasource(_) => "datasource",
            Record::Model(_) => "model",
            Record::Memory(_) => "memory",
            Record::Doc(_) => "doc",
        }
    }

    /// The record as one JSON object with `kind` first.
    pub fn to_value(&self) -> Value {
        match self {
            Record::Datasource(r) => tagged("datasource", r),
            Record::Model(r) => tagged("model", r),
            Record::Memory(r) => tagged("memory", r),
            Record::Doc(r) => tagged("doc", r),
        }
    }
}

/// The known record kinds, for messages.
pub const KINDS: &str = "datasource, model, memory, doc";

/// A problem with one input line: `line N: <what is wrong>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// 1-based line number in the input.
    pub line: usize,
    /// What is wrong and, where it helps, how to fix it.
    pub message: String,
}

/// Reading an input stream failed outright (not one bad record).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The underlying reader failed.
    #[error("cannot read input: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not valid UTF-8.
    #[error("line {0}: not valid UTF-8; input must be UTF-8 JSON lines")]
    Utf8(usize),
    /// A line is longer than the reader takes (it was skipped without being held).
    #[error(
        "line {line}: longer than {limit} bytes; the limit is limits.request_bytes in slayer.toml"
    )]
    TooLong {
        /// 1-based line number.
        line: usize,
        /// The most a line may hold.
        limit: usize,
    },
    /// The input file cannot be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Opens a JSON-lines input: a file, or standard input for `-`. A file that cannot be opened
/// is bad input ([`ReadError::Open`]).
pub fn open_input(path: &std::path::Path) -> Result<Box<dyn BufRead>, ReadError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::BufReader::new(std::io::stdin().lock())));
    }
    let file = std::fs::File::open(path).map_err(|source| ReadError::Open {
        path: path.to_owned(),
        source,
    })?;
    Ok(Box::new(std::io::BufReader::new(file)))
}

/// Reads non-blank lines with their 1-based numbers. A UTF-8 byte-order mark opening the input
/// is dropped (editors on some systems write one).
pub fn read_lines(
    reader: impl BufRead,
) -> impl Iterator<Item = Result<(usize, String), ReadError>> {
    read_lines_within(reader, usize::MAX)
}

/// [`read_lines`], holding at most `limit` bytes of a line: a longer line is read past in
/// pieces and comes back as [`ReadError::TooLong`], and the lines after it are read as usual,
/// so a long-lived reader's memory is bounded by `limit` whatever its input.
pub fn read_lines_within(
    reader: impl BufRead,
    limit: usize,
) -> impl Iterator<Item = Result<(usize, String), ReadError>> {
    let mut reader = reader;
    let mut line_no = 0usize;
    std::iter::from_fn(move || loop {
        line_no += 1;
        let buf = match read_line_within(&mut reader, limit) {
            Ok(Line::End) => return None,
            Ok(Line::Text(buf)) => buf,
            Ok(Line::TooLong { .. }) => {
                return Some(Err(ReadError::TooLong {
                    line: line_no,
                    limit,
                }))
            }
            Err(e) => return Some(Err(ReadError::Io(e))),
        };
        let mut text = match String::from_utf8(buf) {
            Ok(t) => t,
            Err(_) => return Some(Err(ReadError::Utf8(line_no))),
        };
        if line_no == 1 && text.starts_with('\u{feff}') {
            text.drain(..'\u{feff}'.len_utf8());
        }
        if text.trim().is_empty() {
            continue;
        }
        return Some(Ok((line_no, text)));
    })
}

/// One line read by [`read_line_within`].
#[derive(Debug, PartialEq)]
pub enum Line {
    /// The input is over.
    End,
    /// A line, its `\n` included when there was one.
    Text(Vec<u8>),
    /// A line past the limit, consumed up to and including its `\n`; only its first bytes
    /// (at most [`TOO_LONG_HEAD`]) are kept, to name it by.
    TooLong {
        /// The line's first bytes.
        head: Vec<u8>,
    },
}

/// What a [`Line::TooLong`] keeps of its line.
pub const TOO_LONG_HEAD: usize = 4096;

/// Reads one line, holding at most `limit` bytes of it (and [`TOO_LONG_HEAD`] of a longer one).
pub fn read_line_within(reader: &mut impl BufRead, limit: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match (too_long, buf.is_empty()) {
                (true, _) => Line::TooLong { head: buf },
                (false, true) => Line::End,
                (false, false) => Line::Text(buf),
            });
        }
        let (piece, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let used = piece.len();
        if !too_long {
            if buf.len() + used > limit.saturating_add(1) {
                too_long = true;
                let head = TOO_LONG_HEAD.min(limit);
                if buf.len() < head {
                    buf.extend_from_slice(&piece[..(head - buf.len()).min(used)]);
                }
                buf.truncate(head);
                buf.shrink_to_fit();
            } else {
                buf.extend_from_slice(piece);
            }
        }
        reader.consume(used);
        if done {
            return Ok(if too_long {
                Line::TooLong { head: buf }
            } else {
                Line::Text(buf)
            });
        }
    }
}

/// Parses one line into a record, naming the field at fault.
pub fn parse_record(line: usize, text: &str) -> Result<Record, LineError> {
    let err = |message: String| LineError { line, message };
    let value: Value = serde_json::from_str(text.trim_end_matches(['\n', '\r'])).map_err(|e| {
        err(format!(
            "invalid JSON at column {}: {}",
            e.column(),
            strip_position(&e)
        ))
    })?;
    let Value::Object(mut object) = value else {
        return Err(err(
            "expected a JSON object with a \"kind\" field".to_owned()
        ));
    };
    let kind = match object.remove("kind") {
        Some(Value::String(k)) => k,
        Some(other) => return Err(err(format!("field 'kind' must be a string, got {other}"))),
        None => {
            return Err(err(format!(
                "missing field 'kind'; expected one of {KINDS}"
            )))
        }
    };
    record_from_value(&kind, Value::Object(object)).map_err(|e| err(e.to_string()))
}

/// Why a JSON object is not a record of its kind: the field at fault and why (the caller adds
/// where the record came from, a line number or a file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The object as a whole does not have the record's shape (serde's message).
    #[error("{kind} record: {why}")]
    Shape {
        /// The record's kind.
        kind: String,
        /// Why, as the JSON reader says it.
        why: String,
    },
    /// A field of the object does not.
    #[error("{kind} record: field '{path}': {why}")]
    Field {
        /// The record's kind.
        kind: String,
        /// The field's path (`columns[2].type`).
        path: String,
        /// Why, as the JSON reader says it.
        why: String,
    },
    /// A datasource whose name cannot be part of a canonical id.
    #[error("datasource record: {0}")]
    DatasourceName(crate::canonical::NameError),
    /// A model that does not validate.
    #[error("model record '{model}': {why}")]
    Model {
        /// The model's name.
        model: String,
        /// Why.
        why: crate::records::ModelError,
    },
    /// A memory whose id is refused.
    #[error("memory record: field 'id': {0}")]
    MemoryId(crate::canonical::NameError),
    /// A kind that names no record.
    #[error("unknown kind '{kind}'; expected one of {}", KINDS)]
    UnknownKind {
        /// The kind asked for.
        kind: String,
    },
}

/// Builds a typed, validated record of `kind` from a JSON object (without its `kind` field).
pub fn record_from_value(kind: &str, value: Value) -> Result<Record, RecordError> {
    match kind {
        "datasource" => {
            let ds: Datasource = typed(kind, value)?;
            crate::canonical::check_entity_name("field 'name'", &ds.name)
                .map_err(RecordError::DatasourceName)?;
            Ok(Record::Datasource(ds))
        }
        "model" => {
            let model: Model = typed(kind, value)?;
            model.validate().map_err(|why| RecordError::Model {
                model: model.name.clone(),
                why,
            })?;
            Ok(Record::Model(model))
        }
        "memory" => {
            let memory: Memory = typed(kind, value)?;
            crate::canonical::check_memory_id(&memory.id).map_err(RecordError::MemoryId)?;
            Ok(Record::Memory(memory))
        }
        "doc" => Ok(Record::Doc(typed(kind, value)?)),
        other => Err(RecordError::UnknownKind {
            kind: other.to_owned(),
        }),
    }
}

fn typed<T: DeserializeOwned>(kind: &str, value: Value) -> Result<T, RecordError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let why = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            RecordError::Shape {
                kind: kind.to_owned(),
                why,
            }
        } else {
            RecordError::Field {
                kind: kind.to_owned(),
                path,
                why,
            }
        }
    })
}

fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Serializes `value` as an object with `"kind": kind` as its first field.
pub fn tagged<T: Serialize>(kind: &str, value: &T) -> Value {
    let mut out = Map::new();
    out.insert("kind".to_owned(), Value::String(kind.to_owned()));
    match serde_json::to_value(value) {
        Ok(Value::Object(fields)) => out.extend(fields),
        Ok(other) => {
            out.insert("value".to_owned(), other);
        }
        Err(e) => {
            out.insert("error".to_owned(), Value::String(e.to_string()));
        }
    }
    Value::Object(out)
}

/// Writes one value as a single JSON line.
pub fn write_line(out: &mut impl Write, value: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_long_line_is_skipped_without_being_held_and_the_next_one_is_read() {
        let input = format!("{{\"a\":1}}\n{}\n\n{{\"b\":2}}", "x".repeat(100_000));
        let lines: Vec<_> =
            read_lines_within(std::io::BufReader::with_capacity(64, input.as_bytes()), 16)
                .map(|l| l.map_err(|e| e.to_string()))
                .collect();
        assert_eq!(
            lines,
            [
                Ok((1, "{\"a\":1}\n".to_owned())),
                Err("line 2: longer than 16 bytes; the limit is limits.request_bytes in slayer.toml".to_owned()),
                Ok((4, "{\"b\":2}".to_owned())),
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_opening_the_input_is_dropped() {
        let lines: Vec<_> = read_lines("\u{feff}{\"a\":1}\n\u{feff}x".as_bytes())
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            lines,
            [(1, "{\"a\":1}\n".to_owned()), (2, "\u{feff}x".to_owned())]
        );
    }
    use super::*;

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let input = "{\"a\":1}\n\n  \n{\"b\":2}\n";
        let lines: Vec<_> = read_lines(input.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(lines[0].0, 1);
        assert_eq!(lines[1].0, 4);
    }

    #[test]
    fn bad_records_name_line_and_field() {
        let e = parse_record(3, r#"{"kind":"widget"}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3: unknown kind 'widget'; expected one of datasource, model, memory, doc"
        );
        let e = parse_record(2, r#"{"name":"x"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("line 2: missing field 'kind'"),
            "{e}"
        );
        let e = parse_record(1, r#"{"kind":"model","name":"o","data_source":"d","columns":[{"name":"a","type":"varchar"}]}"#).unwrap_err();
        assert!(e.to_string().contains("field 'columns[0].type'"), "{e}");
        let e = parse_record(1, r#"{"kind":"model","data_source":"d"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `name`"), "{e}");
        let e = parse_record(5, "{not json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("line 5: invalid JSON at column 2"),
            "{e}"
        );
        let e = parse_record(1, r#"{"kind":"model","name":"o.x","data_source":"d"}"#).unwrap_err();
        assert!(
            e.to_string().contains("contains '.', which separates"),
            "{e}"
        );
    }

    /// A small deterministic generator for the property tests below.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n.max(1)
        }
    }

    const VALID: [&str; 4] = [
        r#"{"kind":"datasource","name":"shop","type":"duckdb"}"#,
        r#"{"kind":"model","name":"orders","data_source":"shop","columns":[{"name":"id","type":"INT","distinct_count":3,"sampled_values":["1","2"]}],"measures":[{"name":"revenue","formula":"amount:sum"}],"joins":[{"target_model":"c","join_pairs":[["a","b"]]}]}"#,
        r#"{"kind":"memory","id":"7","learning":"x","entities":["shop.orders"],"created_at":"2026-01-01T00:00:00Z"}"#,
        r#"{"kind":"doc","canonical_id":"shop","doc_kind":"datasource","text":"t","content_hash":"h"}"#,
    ];

    #[test]
    fn random_bytes_and_mutated_records_never_panic_and_always_name_their_line() {
        let mut rng = Lcg(2024);
        let alphabet: &[u8] = b"{}[]\":,.\\ -0123456789eEtruefalsnkindmodel\x00\x7f\xc3\xa9\xff\n";
        for round in 0..4000 {
            let mut input = Vec::new();
            let lines = 1 + rng.below(4);
            for _ in 0..lines {
                let mut line = VALID[rng.below(VALID.len())].as_bytes().to_vec();
                match rng.below(4) {
                    0 => {
                        line = (0..rng.below(80))
                            .map(|_| alphabet[rng.below(alphabet.len())])
                            .collect()
                    }
                    1 => {
                        let cut = rng.below(line.len());
                        line.truncate(cut);
                    }
                    2 => {
                        for _ in 0..1 + rng.below(5) {
                            let at = rng.below(line.len());
                            line[at] = alphabet[rng.below(alphabet.len())];
                        }
                    }
                    _ => {}
                }
                input.extend(line);
                input.push(b'\n');
            }
            for item in read_lines(input.as_slice()) {
                match item {
                    Ok((no, text)) => {
                        if let Err(e) = parse_record(no, &text) {
                            assert!(
                                e.to_string().starts_with(&format!("line {no}: ")),
                                "round {round}: {e}"
                            );
                        }
                    }
                    Err(e) => assert!(e.to_string().starts_with("line "), "round {round}: {e}"),
                }
            }
        }
    }

    #[test]
    fn records_round_trip_with_unknown_fields_kept() {
        let line = r#"{"kind":"datasource","name":"shop","type":"duckdb","path":"shop.duckdb"}"#;
        let rec = parse_record(1, line).unwrap();
        assert_eq!(serde_json::to_string(&rec.to_value()).unwrap(), line);
    }
}
