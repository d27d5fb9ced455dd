//! Sample values: how values print as text, and how a column's samples are assembled.
//!
//! Values print the way the Python original's `str()` prints what its drivers return, and the
//! same whatever the source, so a DuckDB and a SQLite copy of a table give equal records:
//! integers in decimal; floats as Python's `repr` (shortest round-trip digits, always a `.0` on
//! whole numbers, exponent form below 1e-4 and from 1e16: `1e-05`, `1e+16`); booleans `True` /
//! `False`; dates `YYYY-MM-DD`; timestamps `YYYY-MM-DD HH:MM:SS`, with `.ffffff` only when the
//! microseconds are not zero (SQLite text timestamps are normalised to this form, a `T` or a
//! shorter fraction included); times `HH:MM:SS`; text verbatim.

use slayer_common::records::{VALUE_INDEX_CHARS, VALUE_INDEX_VALUES};

/// Values kept in `sampled_values`.
pub const TOP_VALUES: usize = 50;
/// Values joined into `sampled`.
pub const TOP_TEXT: usize = 20;
/// Values a top-values query asks for: the top ones, and the value index's after them.
pub const QUERIED_VALUES: usize = TOP_VALUES + VALUE_INDEX_VALUES;

/// The three sample fields of one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSamples {
    /// `sampled`: the text snapshot.
    pub sampled: String,
    /// `sampled_values`: the top values, categorical columns only.
    pub sampled_values: Option<Vec<String>>,
    /// `distinct_count`: categorical columns only; exact, unless `sampled` marks it `~N`
    /// ([`categorical_estimated`]).
    pub distinct_count: Option<i64>,
    /// `value_index`: the values after the top ones, at most [`VALUE_INDEX_VALUES`] of at
    /// most [`VALUE_INDEX_CHARS`] characters, most frequent first; `None` when there are none.
    pub value_index: Option<Vec<String>>,
}

/// Builds categorical samples from `(value, count)` pairs (at most [`QUERIED_VALUES`] of
/// them, NULLs already dropped). `count_distinct` runs only when there are more than
/// [`TOP_VALUES`] values, so the total is exact rather than capped; the short values after the
/// top ones become the value index.
pub fn categorical<E>(
    counted: Vec<(String, i64)>,
    count_distinct: impl FnOnce() -> Result<i64, E>,
) -> Result<ColumnSamples, E> {
    let ranked = Ranked::new(counted);
    let (sampled, distinct) = if ranked.overflow {
        let n = count_distinct()?;
        (format!("{} ... ({n} distinct)", ranked.head), n)
    } else {
        (ranked.head.clone(), ranked.values.len() as i64)
    };
    Ok(ranked.samples(sampled, distinct))
}

/// Categorical samples of a column with more distinct values than profiling holds in memory:
/// `counted` comes from a sample of the rows, `estimate` is a sketch's count of the whole
/// column's distinct values. `sampled` says so with a `~` before the count (` ... (~N
/// distinct)`), and `distinct_count` is that estimate.
pub fn categorical_estimated(counted: Vec<(String, i64)>, estimate: i64) -> ColumnSamples {
    let ranked = Ranked::new(counted);
    // A sketch can fall short of what the sample itself shows.
    let n = estimate.max(ranked.values.len() as i64);
    let sampled = if ranked.head.is_empty() {
        format!("(~{n} distinct)")
    } else {
        format!("{} ... (~{n} distinct)", ranked.head)
    };
    ranked.samples(sampled, n)
}

/// Counted values in sample order, split into the top ones and the value index.
struct Ranked {
    values: Vec<String>,
    index: Vec<String>,
    head: String,
    overflow: bool,
}

impl Ranked {
    fn new(mut counted: Vec<(String, i64)>) -> Ranked {
        counted.sort_by(|(va, na), (vb, nb)| nb.cmp(na).then_with(|| va.cmp(vb)));
        let overflow = counted.len() > TOP_VALUES;
        let index: Vec<String> = counted
            .iter()
            .skip(TOP_VALUES)
            .map(|(v, _)| v)
            .filter(|v| !v.trim().is_empty() && v.chars().count() <= VALUE_INDEX_CHARS)
            .take(VALUE_INDEX_VALUES)
            .cloned()
            .collect();
        counted.truncate(TOP_VALUES);
        let values: Vec<String> = counted.into_iter().map(|(v, _)| v).collect();
        let head = values
            .iter()
            .take(TOP_TEXT)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        Ranked {
            values,
            index,
            head,
            overflow,
        }
    }

    fn samples(self, sampled: String, distinct: i64) -> ColumnSamples {
        ColumnSamples {
            sampled,
            sampled_values: Some(self.values),
            distinct_count: Some(distinct),
            value_index: (!self.index.is_empty()).then_some(self.index),
        }
    }
}

/// Numeric / temporal samples: `min .. max`, or `all NULL`.
pub fn range(min: Option<String>, max: Option<String>) -> ColumnSamples {
    let sampled = match (min, max) {
        (None, None) => "all NULL".to_owned(),
        (lo, hi) => format!(
            "{} .. {}",
            lo.as_deref().unwrap_or("None"),
            hi.as_deref().unwrap_or("None")
        ),
    };
    ColumnSamples {
        sampled,
        sampled_values: None,
        distinct_count: None,
        value_index: None,
    }
}

/// Python's `repr(float)`.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e4", "-5e-7".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        let zeros = "0".repeat((-point) as usize);
        format!("{sign}0.{zeros}{digits}")
    } else if (point as usize) >= digits.len() {
        let zeros = "0".repeat(point as usize - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// Python's `str(bool)`.
pub fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_owned()
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` from microseconds since the Unix epoch (UTC, no offset).
pub fn timestamp_from_micros(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let micros = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut out = format!(
        "{} {:02}:{:02}:{:02}",
        format_date(y, m, d),
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    );
    if micros != 0 {
        out.push_str(&format!(".{micros:06}"));
    }
    out
}

fn format_date(y: i64, m: u32, d: u32) -> String {
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!("{y}-{m:02}-{d:02}")
    }
}

/// Howard Hinnant's days → (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Normalises an ISO-like date or timestamp text (as SQLite stores them) to the printed form;
/// text that is not one is returned unchanged.
pub fn normalize_temporal_text(text: &str, date_only: bool) -> String {
    parse_iso(text.trim())
        .map(|p| {
            if date_only && p.time.is_none() {
                return p.date;
            }
            let (hms, frac) = p.time.unwrap_or(("00:00:00".to_owned(), String::new()));
            let mut out = format!("{} {hms}", p.date);
            let frac = frac.trim_end_matches('0');
            if !frac.is_empty() {
                let mut f = frac.to_owned();
                f.truncate(6);
                out.push_str(&format!(".{f:0<6}"));
            }
            out
        })
        .unwrap_or_else(|| text.to_owned())
}

struct IsoParts {
    date: String,
    time: Option<(String, String)>,
}

fn parse_iso(s: &str) -> Option<IsoParts> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|x| x.iter().all(u8::is_ascii_digit))
    };
    if b.len() < 10
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
    {
        return None;
    }
    let date = s[..10].to_owned();
    if b.len() == 10 {
        return Some(IsoParts { date, time: None });
    }
    if !(b[10] == b' ' || b[10] == b'T')
        || b.len() < 16
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
    {
        return None;
    }
    let mut hms = format!("{}:00", &s[11..16]);
    let mut rest = &s[16..];
    if let Some(r) = rest.strip_prefix(':') {
        if r.len() < 2 || !r.as_bytes()[..2].iter().all(u8::is_ascii_digit) {
            return None;
        }
        hms = format!("{}:{}", &s[11..16], &r[..2]);
        rest = &r[2..];
    }
    let mut frac = String::new();
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        frac = r[..n].to_owned();
        rest = &r[n..];
    }
    if !rest.is_empty() {
        return None; // a zone suffix or other text: leave the value as it is
    }
    Some(IsoParts {
        date,
        time: Some((hms, frac)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python_repr() {
        for (x, want) in [
            (0.21, "0.21"),
            (99.25, "99.25"),
            (10.0, "10.0"),
            (-3.0, "-3.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(py_float(x), want, "{x}");
        }
    }

    #[test]
    fn timestamps_print_like_python_datetime() {
        assert_eq!(timestamp_from_micros(0), "1970-01-01 00:00:00");
        assert_eq!(
            timestamp_from_micros(1_706_781_600_000_000),
            "2024-02-01 10:00:00"
        );
        assert_eq!(
            timestamp_from_micros(1_706_781_600_500_000),
            "2024-02-01 10:00:00.500000"
        );
        assert_eq!(timestamp_from_micros(-1), "1969-12-31 23:59:59.999999");
        assert_eq!(
            normalize_temporal_text("2024-02-01T10:00:00", false),
            "2024-02-01 10:00:00"
        );
        assert_eq!(
            normalize_temporal_text("2024-02-01 10:00", false),
            "2024-02-01 10:00:00"
        );
        assert_eq!(
            normalize_temporal_text("2024-02-01 10:00:00.5", false),
            "2024-02-01 10:00:00.500000"
        );
        assert_eq!(
            normalize_temporal_text("2024-02-01", false),
            "2024-02-01 00:00:00"
        );
        assert_eq!(normalize_temporal_text("2024-02-01", true), "2024-02-01");
        assert_eq!(normalize_temporal_text("yesterday", false), "yesterday");
        assert_eq!(
            normalize_temporal_text("2024-02-01T10:00:00+02:00", false),
            "2024-02-01T10:00:00+02:00"
        );
    }

    #[test]
    fn estimated_counts_are_marked_and_never_below_what_the_sample_shows() {
        let many: Vec<(String, i64)> = (0..60).map(|i| (format!("v{i:02}"), 100 - i)).collect();
        let s = categorical_estimated(many, 9_681_120);
        assert!(
            s.sampled.ends_with("v19 ... (~9681120 distinct)"),
            "{}",
            s.sampled
        );
        assert_eq!(s.distinct_count, Some(9_681_120));
        assert_eq!(s.sampled_values.as_ref().map(Vec::len), Some(50));
        assert_eq!(s.value_index.as_ref().map(Vec::len), Some(10));
        // A sample that shows more values than the sketch counted keeps its own count.
        let few = categorical_estimated(vec![("a".into(), 2), ("b".into(), 1)], 1);
        assert_eq!(few.sampled, "a, b ... (~2 distinct)");
        assert_eq!(few.distinct_count, Some(2));
        assert_eq!(categorical_estimated(vec![], 5).sampled, "(~5 distinct)");
    }

    #[test]
    fn categorical_ties_sort_by_string_and_overflow_counts_exactly() {
        let s = categorical::<()>(
            vec![("b".into(), 2), ("a".into(), 2), ("c".into(), 5)],
            || panic!("no overflow"),
        )
        .unwrap();
        assert_eq!(s.sampled, "c, a, b");
        assert_eq!(s.distinct_count, Some(3));
        let many: Vec<(String, i64)> = (0..51).map(|i| (format!("v{i:02}"), 100 - i)).collect();
        let s = categorical::<()>(many, || Ok(1234)).unwrap();
        assert_eq!(s.sampled_values.as_ref().unwrap().len(), 50);
        assert!(
            s.sampled.ends_with("v19 ... (1234 distinct)"),
            "{}",
            s.sampled
        );
        assert_eq!(s.distinct_count, Some(1234));
        assert_eq!(s.value_index, Some(vec!["v50".to_owned()]));
        // The value index: after the top 50, short values only, at most 1000.
        let mut long: Vec<(String, i64)> =
            (0..1100).map(|i| (format!("w{i:04}"), 5000 - i)).collect();
        long[60].0 = "x".repeat(65);
        let s = categorical::<()>(long, || Ok(1100)).unwrap();
        let index = s.value_index.unwrap();
        assert_eq!(index.len(), 1000);
        assert_eq!(index[0], "w0050");
        assert!(index.iter().all(|v| v.len() <= 64));
        let empty = categorical::<()>(vec![], || Ok(0)).unwrap();
        assert_eq!(
            empty,
            ColumnSamples {
                sampled: String::new(),
                sampled_values: Some(vec![]),
                distinct_count: Some(0),
                value_index: None
            }
        );
        assert_eq!(range(None, None).sampled, "all NULL");
    }
}
