//! Python-compatible formatting for the few places where rendered text must match the
//! original byte for byte: `json.dumps(..., ensure_ascii=False)` of a string list, `repr()` of
//! a string, and pydantic's `str()` of a `NumberFormat`.

use slayer_common::records::NumberFormat;

/// `json.dumps(values, ensure_ascii=False)`: `", "` separators, non-ASCII kept.
pub fn json_string_list(values: &[String]) -> String {
    let mut out = String::from("[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        json_string(&mut out, v);
    }
    out.push(']');
    out
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python `repr(str)`: single quotes unless the text has `'` and no `"`.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..=0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// pydantic `str(NumberFormat)`, e.g. `type=<NumberFormatType.CURRENCY: 'currency'> precision=2 symbol='$'`.
pub fn number_format(f: &NumberFormat) -> String {
    let (member, value) = f.format_type.python_names();
    let precision = f
        .precision
        .map_or_else(|| "None".to_owned(), |p| p.to_string());
    let symbol = f
        .symbol
        .as_deref()
        .map_or_else(|| "None".to_owned(), repr_str);
    format!("type=<NumberFormatType.{member}: '{value}'> precision={precision} symbol={symbol}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use slayer_common::records::NumberFormatType;

    #[test]
    fn json_list_matches_python_dumps() {
        let v = vec![
            "paid".to_owned(),
            "R$ 1,000–3,000".to_owned(),
            "a\"b\\c\nd\u{1}".to_owned(),
            "São Paulo".to_owned(),
        ];
        assert_eq!(
            json_string_list(&v),
            r#"["paid", "R$ 1,000–3,000", "a\"b\\c\nd\u0001", "São Paulo"]"#
        );
        assert_eq!(json_string_list(&[]), "[]");
    }

    #[test]
    fn repr_picks_quotes_like_python() {
        assert_eq!(repr_str("$"), "'$'");
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_str("both ' and \""), "'both \\' and \"'");
        assert_eq!(repr_str("€"), "'€'");
    }

    #[test]
    fn number_format_matches_pydantic_str() {
        let f = NumberFormat {
            format_type: NumberFormatType::Integer,
            precision: None,
            symbol: None,
        };
        assert_eq!(
            number_format(&f),
            "type=<NumberFormatType.INTEGER: 'integer'> precision=None symbol=None"
        );
        let f = NumberFormat {
            format_type: NumberFormatType::Currency,
            precision: Some(2),
            symbol: Some("$".into()),
        };
        assert_eq!(
            number_format(&f),
            "type=<NumberFormatType.CURRENCY: 'currency'> precision=2 symbol='$'"
        );
    }
}
