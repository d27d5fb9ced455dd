#!/usr/bin/env bash
# Benchmark of slayer-profile on PostgreSQL (release build), printed as a table.
#
#   scripts/bench_pg.sh [TABLES] [ROWS]     (default 200 and 10000)
#
# Starts a throwaway PostgreSQL cluster (scripts/pg_cluster.sh) as the tests do
# (tests/it/pg_server.rs): initdb into a temp dir under /tmp, listening only on a unix socket in
# that dir, no TCP, no durability; as the OS user `postgres` when run as root; stopped and
# deleted on exit. Generates TABLES tables x 20 columns x ROWS rows in database `bench` (id
# integer primary key, 5 more integers, 4 double precision, 6 text of low and high cardinality,
# 2 timestamp, 1 date, 1 boolean; every value from generate_series, so runs are repeatable),
# VACUUM ANALYZE, then profiles it with --threads 1 and --threads 2; wall time and peak RSS from
# GNU time, median of 3 runs.
#
# SLAYER_BIN=<dir>: use the slayer-profile binary in <dir> and skip the cargo build.
# Needs the PostgreSQL server binaries (Debian: apt-get install postgresql).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tables=${1:-200}
rows=${2:-10000}

if [ -n "${SLAYER_BIN:-}" ]; then
    target=$(cd "$SLAYER_BIN" && pwd)
else
    # --tests too, so features resolve as in `cargo test` and DuckDB is not compiled twice.
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins --tests
    target="${CARGO_TARGET_DIR:-$root/target}/release"
fi
unset SLAYER_FORMAT

# The throwaway cluster ($pg_work, its socket dir, is also this script's scratch dir).
# shellcheck source=scripts/pg_cluster.sh
. scripts/pg_cluster.sh
pg_cluster_start bench_pg
work=$pg_work
bindir=$pg_bindir
echo "CREATE DATABASE bench;" | pg_sql postgres

# Tables FIRST..LAST: t001, t002, ...; every value is a function of the row number i and the
# table number t, so the tables differ and each run generates the same data.
gen() { # first last
    pg_sql bench -v first="$1" -v last="$2" -v rows="$rows" << 'SQL'
SET bench.first = :first;
SET bench.last = :last;
SET bench.rows = :rows;
DO $gen$
DECLARE
    t integer;
BEGIN
    FOR t IN current_setting('bench.first')::integer .. current_setting('bench.last')::integer LOOP
        -- format(): %1$I the table, %2$s its number, %3$s the rows, %% a literal %.
        EXECUTE format('CREATE TABLE %1$I (
            id integer PRIMARY KEY,
            quantity integer,
            score integer,
            bucket integer,
            store_id integer,
            big_count bigint,
            price double precision,
            ratio double precision,
            weight double precision,
            temperature double precision,
            status text,
            country text,
            category text,
            email text,
            sku text,
            note text,
            created_at timestamp,
            updated_at timestamp,
            birth_date date,
            active boolean)', 't' || lpad(t::text, 3, '0'));
        EXECUTE format('INSERT INTO %1$I
            SELECT i,
                   1 + (i * 7 + %2$s) %% 20,
                   (i * 7919 + %2$s * 13) %% 1000,
                   i %% 10,
                   1 + (i * 31 + %2$s) %% 250,
                   (i::bigint * 2654435761 + %2$s) %% 100000000,
                   round(((i * 7907 + %2$s * 17) %% 100000) / 100.0, 2),
                   ((i * 104729 + %2$s) %% 1000) / 1000.0,
                   50 + ((i * 13 + %2$s) %% 5000) / 10.0,
                   -20 + ((i * 37 + %2$s) %% 600) / 10.0,
                   (ARRAY[''paid'', ''shipped'', ''refunded'', ''pending'', ''cancelled''])[1 + (i + %2$s) %% 5],
                   ''country-'' || lpad(((i * 3 + %2$s) %% 20)::text, 2, ''0''),
                   ''category-'' || ((i * 11 + %2$s) %% 50),
                   ''user'' || i || ''.t'' || %2$s || ''@example.com'',
                   ''SKU-'' || lpad(((i * 7 + %2$s * 101) %% 5000)::text, 5, ''0''),
                   CASE WHEN i %% 4 = 0 THEN NULL
                        ELSE ''note '' || i || '' about item '' || ((i * 17 + %2$s) %% 997) END,
                   timestamp ''2020-01-01'' + ((i * 7919 + %2$s) %% 2000000) * interval ''1 minute'',
                   timestamp ''2024-01-01'' + ((i * 104729 + %2$s) %% 30000000) * interval ''1 second'',
                   date ''1950-01-01'' + (i * 37 + %2$s) %% 20000,
                   (i + %2$s) %% 3 <> 0
            FROM generate_series(1, %3$s) AS i',
            't' || lpad(t::text, 3, '0'), t, current_setting('bench.rows')::integer);
    END LOOP;
END
$gen$;
SQL
}

start=$(date +%s.%N)
half=$(( (tables + 1) / 2 ))
# Two sessions, one per core.
gen 1 "$half" & first=$!
if [ "$half" -lt "$tables" ]; then gen $(( half + 1 )) "$tables"; fi
wait "$first"
echo "VACUUM ANALYZE;" | pg_sql bench
generated=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')

url=$(pg_url bench)

measure() { # label threads [more slayer-profile arguments]
    local label=$1 threads=$2 walls=() rss=() i
    shift 2
    for i in 1 2 3; do
        /usr/bin/time -f "%e %M" -o "$work/time" "$target/slayer-profile" -q --no-progress --threads "$threads" "$@" "$url" > "$work/out.jsonl"
        read -r wall kb < "$work/time"
        walls+=("$wall"); rss+=("$kb")
    done
    local w m
    w=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
    m=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n 2p)
    printf '| %-40s | %7s | %8s | %9.1f |\n' "$label" "$threads" "$w" "$(awk -v k="$m" 'BEGIN{print k/1024}')"
    echo "$w" > "$work/last"
}

echo "slayer-profile on PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'): $(nproc) cores"
echo "generated $tables tables x 20 cols x $rows rows (+ VACUUM ANALYZE) in ${generated} s"
echo
printf '| %-40s | %7s | %8s | %9s |\n' "source" "threads" "wall s" "peak MiB"
printf '|%s|%s|%s|%s|\n' "------------------------------------------" "---------" "----------" "-----------"
label="pg: $tables tables x $rows rows x 20 cols"
measure "pg: introspection only (--no-samples)" 1 --no-samples
measure "$label" 1; one=$(cat "$work/last")
measure "$label" 2; two=$(cat "$work/last")
echo "|   speed-up of --threads 2 over 1: $(awk -v a="$one" -v b="$two" 'BEGIN{printf "%.2fx", a/b}')"
echo
echo "model records: $(grep -c '"kind":"model"' "$work/out.jsonl" || true)"
echo "Python original (same shape on SQLite): 70 s ingest + 239 s CPU profiling"
