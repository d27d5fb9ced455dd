//! What a PostgreSQL database holds, read from `pg_catalog` in three queries whatever the
//! number of tables: relations, columns, and key constraints.
//!
//! - Tables, views, materialized views, foreign tables and partitioned tables; a partition is
//!   not a model of its own (its parent is).
//! - Every schema but the system ones (`pg_*`, `information_schema`); `public` is the default
//!   schema, whose tables are named without it.
//! - A column's type is its base type: a domain is followed down to what it is over; enums,
//!   ranges and composite types are named `ENUM`, `RANGE`, `STRUCT` so the type mapping needs
//!   no catalog.

use std::collections::HashMap;

use super::session::{get, PgConn, PgError};
use crate::table::{non_empty, ColumnInfo, ForeignKey, TableInfo, TableRef};

const RELATIONS: &str = "\
SELECT c.oid, n.nspname, c.relname, c.relkind::text, pg_catalog.obj_description(c.oid, 'pg_class')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND NOT c.relispartition
  AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'";

const COLUMNS: &str = "\
SELECT a.attrelid, a.attname,
       CASE WHEN bt.typtype = 'e' THEN 'ENUM'
            WHEN bt.typtype IN ('r', 'm') THEN 'RANGE'
            WHEN bt.typtype = 'c' THEN 'STRUCT'
            ELSE pg_catalog.format_type(base.oid, base.typmod) END,
       pg_catalog.col_description(a.attrelid, a.attnum)
FROM pg_catalog.pg_attribute a
CROSS JOIN LATERAL (
    WITH RECURSIVE chain(oid, typmod, depth) AS (
        SELECT a.atttypid, a.atttypmod, 0
        UNION ALL
        SELECT t.typbasetype, t.typtypmod, chain.depth + 1
        FROM chain JOIN pg_catalog.pg_type t ON t.oid = chain.oid
        WHERE t.typtype = 'd' AND chain.depth < 32
    )
    SELECT chain.oid, chain.typmod FROM chain ORDER BY chain.depth DESC LIMIT 1
) AS base
JOIN pg_catalog.pg_type bt ON bt.oid = base.oid
WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum";

const KEYS: &str = "\
SELECT con.conrelid, con.contype::text,
       ARRAY(SELECT att.attname::text
             FROM unnest(con.conkey) WITH ORDINALITY AS k(num, pos)
             JOIN pg_catalog.pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = k.num
             ORDER BY k.pos),
       fn.nspname, fc.relname,
       ARRAY(SELECT att.attname::text
             FROM unnest(con.confkey) WITH ORDINALITY AS k(num, pos)
             JOIN pg_catalog.pg_attribute att ON att.attrelid = con.confrelid AND att.attnum = k.num
             ORDER BY k.pos)
FROM pg_catalog.pg_constraint con
LEFT JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
WHERE con.contype IN ('p', 'f') AND con.conparentid = 0 AND con.conrelid = ANY($1::oid[])
ORDER BY con.conrelid, con.contype DESC, con.conname";

/// The default schema, whose tables are named without it.
pub const DEFAULT_SCHEMA: &str = "public";

fn table_schema(schema: &str) -> Option<String> {
    (schema != DEFAULT_SCHEMA).then(|| schema.to_owned())
}

/// Lists every table and view, sorted by schema and name (byte order, as the other engines).
pub fn list_tables(conn: &PgConn) -> Result<Vec<TableInfo>, PgError> {
    let mut relations: Vec<(u32, TableInfo)> = Vec::new();
    for row in conn.query(RELATIONS, &[])? {
        let oid: u32 = get(&row, 0)?;
        let schema: String = get(&row, 1)?;
        let name: String = get(&row, 2)?;
        let kind: String = get(&row, 3)?;
        let comment: Option<String> = get(&row, 4)?;
        let table_ref = TableRef::Table {
            schema: table_schema(&schema),
            name: name.clone(),
        };
        let is_view = matches!(kind.as_str(), "v" | "m");
        relations.push((
            oid,
            TableInfo::new(schema, name, table_ref, is_view, non_empty(comment)),
        ));
    }
    relations.sort_by(|(_, a), (_, b)| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    let oids: Vec<u32> = relations.iter().map(|(oid, _)| *oid).collect();
    let by_oid: HashMap<u32, usize> = oids.iter().enumerate().map(|(i, o)| (*o, i)).collect();

    for row in conn.query(COLUMNS, &[&oids])? {
        let oid: u32 = get(&row, 0)?;
        let Some(&i) = by_oid.get(&oid) else { continue };
        let column = ColumnInfo::new(get(&row, 1)?, get(&row, 2)?, non_empty(get(&row, 3)?));
        relations[i].1.columns.push(column);
    }
    let keys = conn.query(KEYS, &[&oids]);
    conn.finish();
    for row in keys? {
        let oid: u32 = get(&row, 0)?;
        let Some(&i) = by_oid.get(&oid) else { continue };
        let kind: String = get(&row, 1)?;
        let columns: Vec<String> = get(&row, 2)?;
        let t = &mut relations[i].1;
        if kind == "p" {
            t.primary_key = columns;
            continue;
        }
        let ref_schema: Option<String> = get(&row, 3)?;
        let ref_table: Option<String> = get(&row, 4)?;
        let (Some(ref_schema), Some(ref_table)) = (ref_schema, ref_table) else {
            continue;
        };
        t.foreign_keys.push(ForeignKey {
            columns,
            ref_schema: table_schema(&ref_schema),
            ref_table,
            ref_columns: get(&row, 5)?,
        });
    }
    Ok(relations.into_iter().map(|(_, t)| t).collect())
}
