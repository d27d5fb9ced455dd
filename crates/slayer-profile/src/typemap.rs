//! Database type names → the semantic layer's column types (docs/spec/profile.md §12.2).

use slayer_common::records::{DataType, NumberFormat, NumberFormatType};

/// Maps a declared type (`VARCHAR`, `DECIMAL(18,2)`, `TIMESTAMP WITH TIME ZONE`, `INTEGER[]`, …)
/// from DuckDB, SQLite or PostgreSQL (whose introspection names enums `ENUM`, range types
/// `RANGE` and composite types `STRUCT`, and follows domains to their base type).
///
/// Deliberate difference from the original: binary types (`BLOB`, `BYTEA`, …) map to UNKNOWN
/// rather than TEXT, because the text of a blob is not a useful sample.
pub fn map_type(declared: &str) -> DataType {
    let upper = declared.trim().to_ascii_uppercase();
    if upper.ends_with(']') {
        return DataType::Unknown;
    }
    let base = upper.split('(').next().unwrap_or("").trim();
    let scale = decimal_scale(&upper);
    match base {
        "" => DataType::Text,
        "DECIMAL" | "NUMERIC" => match scale {
            Some(0) => DataType::Int,
            _ => DataType::Double,
        },
        "BOOLEAN" | "BOOL" | "BIT" | "LOGICAL" => DataType::Boolean,
        "DATE" => DataType::Date,
        "JSON" | "XML" | "STRUCT" | "MAP" | "UNION" | "LIST" | "ARRAY" | "INTERVAL" | "BLOB"
        | "BYTEA" | "BINARY" | "VARBINARY" | "GEOMETRY" | "POINT" | "POLYGON" | "LINE" | "BOX"
        | "CIRCLE" | "PATH" | "LSEG" | "RANGE" => DataType::Unknown,
        b if b.starts_with("INTERVAL") => DataType::Unknown,
        b if b.starts_with("BIT") => DataType::Boolean,
        b if b.starts_with("TIMESTAMP") || b.starts_with("DATETIME") || b.starts_with("TIME") => {
            DataType::Timestamp
        }
        b if b.contains("INT") || b == "VARINT" || b == "BIGNUM" => DataType::Int,
        b if b.starts_with("FLOAT")
            || b.starts_with("DOUBLE")
            || b.starts_with("REAL")
            || b == "MONEY" =>
        {
            DataType::Double
        }
        _ => DataType::Text,
    }
}

fn decimal_scale(upper: &str) -> Option<u32> {
    let inner = upper.split_once('(')?.1.split_once(')')?.0;
    let (_, scale) = inner.split_once(',')?;
    scale.trim().parse().ok()
}

/// The format the original's ingest sets on numeric columns.
pub fn default_format(data_type: DataType) -> Option<NumberFormat> {
    let format_type = match data_type {
        DataType::Int => NumberFormatType::Integer,
        DataType::Double => NumberFormatType::Float,
        _ => return None,
    };
    Some(NumberFormat {
        format_type,
        precision: None,
        symbol: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_mapping() {
        for (t, want) in [
            ("VARCHAR", DataType::Text),
            ("character varying(20)", DataType::Text),
            ("UUID", DataType::Text),
            ("ENUM('a', 'b')", DataType::Text),
            ("", DataType::Text),
            ("INTEGER", DataType::Int),
            ("BIGINT", DataType::Int),
            ("UHUGEINT", DataType::Int),
            ("DECIMAL(10,0)", DataType::Int),
            ("DECIMAL(18,2)", DataType::Double),
            ("NUMERIC", DataType::Double),
            ("DOUBLE", DataType::Double),
            ("REAL", DataType::Double),
            ("FLOAT", DataType::Double),
            ("BOOLEAN", DataType::Boolean),
            ("DATE", DataType::Date),
            ("TIMESTAMP", DataType::Timestamp),
            ("TIMESTAMP WITH TIME ZONE", DataType::Timestamp),
            ("TIMESTAMP_NS", DataType::Timestamp),
            ("DATETIME", DataType::Timestamp),
            ("TIME", DataType::Timestamp),
            ("JSON", DataType::Unknown),
            ("INTEGER[]", DataType::Unknown),
            ("STRUCT(a INTEGER)", DataType::Unknown),
            ("MAP(VARCHAR, INTEGER)", DataType::Unknown),
            ("BLOB", DataType::Unknown),
            ("INTERVAL", DataType::Unknown),
            // PostgreSQL's names, as format_type() writes them.
            ("integer", DataType::Int),
            ("smallint", DataType::Int),
            ("double precision", DataType::Double),
            ("numeric(12,2)", DataType::Double),
            ("numeric(10,0)", DataType::Int),
            ("money", DataType::Double),
            ("timestamp(3) with time zone", DataType::Timestamp),
            ("time without time zone", DataType::Timestamp),
            ("interval day to second", DataType::Unknown),
            ("uuid", DataType::Text),
            ("jsonb", DataType::Text),
            ("json", DataType::Unknown),
            ("text[]", DataType::Unknown),
            ("ENUM", DataType::Text),
            ("RANGE", DataType::Unknown),
            ("STRUCT", DataType::Unknown),
            ("bit varying(8)", DataType::Boolean),
            ("inet", DataType::Text),
            ("point", DataType::Unknown),
            ("bytea", DataType::Unknown),
        ] {
            assert_eq!(map_type(t), want, "{t}");
        }
    }
}
