#!/usr/bin/env bash
# The demo's pipeline with the warehouse on MariaDB: starts its own throwaway server in a temp
# dir (scripts/mariadb_server.sh, Debian's mariadb-server), loads the shop's tables into it with
# their keys (examples/shop/mariadb.sql), profiles them, fills the hand-written project's samples
# from them, and asks the same questions of that store and of one whose samples came from the
# CSV files. The answers must be equal: exit 1 when they are not.
#
#   examples/mariadb.sh            (after `cargo build --release --workspace`)
#
# SLAYER_BIN=<folder> takes the binaries from there (default: the release build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$(cd "${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}" && pwd)
export PATH="$bin:$PATH"
unset SLAYER_FORMAT MYSQL_PWD MYSQL_HOST MYSQL_TCP_PORT MYSQL_UNIX_PORT

work=$(mktemp -d /tmp/slayer-mariadb.XXXXXX)
trap 'scripts/mariadb_server.sh stop "$work/server" || true; rm -rf "$work"' EXIT
scripts/mariadb_server.sh start "$work/server"
socket="$work/server/mysqld.sock"
client() { mariadb --no-defaults --default-character-set=utf8mb4 -S "$socket" -uroot "$@"; }
client -e "CREATE DATABASE shop;
           CREATE USER reader@localhost IDENTIFIED BY 'demo-reader-pw';
           GRANT SELECT ON shop.* TO reader@localhost;"
client --local-infile=1 shop < examples/shop/mariadb.sql
# The socket's path, percent-encoded, is the URL's host; the password comes from MYSQL_PWD.
url="mysql://reader@$(printf %s "$socket" | sed 's|/|%2F|g')/shop"
export MYSQL_PWD=demo-reader-pw

echo "== 1. what slayer-profile finds in the MariaDB warehouse: keys become joins"
echo "   slayer-profile mysql://reader@<socket>/shop --tables orders,customers,stores --format text"
slayer-profile "$url" --tables orders,customers,stores --format text

echo
echo "== 2. the hand-written project, its samples filled once from MariaDB and once from the CSVs"
for source in mariadb csv; do
    if [ "$source" = mariadb ]; then from=$url; else from=examples/shop/data; fi
    export SLAYER_STORE="$work/$source.db"
    slayer-index -q import-slayer examples/shop/slayer | slayer-memory -q import > /dev/null
    slayer-index export --datasource shop \
        | slayer-profile -q "$from" --models - \
        | slayer-index -q load > /dev/null
    slayer-index export --datasource shop > "$work/$source.jsonl"
    sampled=$(grep -o '"sampled":' "$work/$source.jsonl" | wc -l)
    echo "   $source: $sampled columns sampled"
done
if ! cmp -s "$work/mariadb.jsonl" "$work/csv.jsonl"; then
    echo "the models filled from MariaDB differ from those filled from the CSV files:" >&2
    diff "$work/csv.jsonl" "$work/mariadb.jsonl" >&2 || true
    exit 1
fi
echo "   the two stores' model records are equal"

echo
echo "== 3. the same questions to both stores"
questions=(
    "revenue by store"
    "which payment methods do customers use?"
    "orders that were returned"
    "completed orders"
    "gift card payments"
    "tax rate of each store"
    "perishable supplies"
    "Brooklyn"
)
differ=0
for q in "${questions[@]}"; do
    a=$(slayer-search --store "$work/mariadb.db" --question "$q" --format json)
    b=$(slayer-search --store "$work/csv.db" --question "$q" --format json)
    top=$(printf %s "$a" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(", ".join(e["id"] for e in r["entities"][:3]))')
    if [ "$a" = "$b" ]; then
        echo "   equal   $q -> $top"
    else
        echo "   DIFFER  $q" >&2
        differ=1
    fi
done
if [ "$differ" -ne 0 ]; then
    echo "the MariaDB-profiled store answers differently from the CSV-profiled one" >&2
    exit 1
fi
echo "   every answer is the same, byte for byte"
