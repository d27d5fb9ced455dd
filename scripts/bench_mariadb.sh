#!/usr/bin/env bash
# slayer-profile on MariaDB against the same data on PostgreSQL, side by side in one run
# (issue 66: within 1.5x). Starts a throwaway server of each (scripts/mariadb_server.sh,
# scripts/pg_cluster.sh), both on a unix socket, loads the shop's tables (examples/shop/data,
# with their keys) and a table of ROWS rows (default 1,000,000: id, a 1,000-value category, a
# double, a timestamp) into each, then times `slayer-profile <url>` RUNS times (default 3) per
# workload and prints the medians.
#
#   scripts/bench_mariadb.sh                 (after `cargo build --release --workspace`)
#   ROWS=200000 RUNS=5 THREADS=2 scripts/bench_mariadb.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
rows=${ROWS:-1000000}
runs=${RUNS:-3}
threads=${THREADS:-2}

# shellcheck source=scripts/pg_cluster.sh
. scripts/pg_cluster.sh
pg_cluster_start bench_mariadb
my_work=$(mktemp -d /tmp/slayer-bench-my.XXXXXX)
trap 'scripts/mariadb_server.sh stop "$my_work"; rm -rf "$my_work"; pg_cluster_stop' EXIT
scripts/mariadb_server.sh start "$my_work"
my() { mariadb --no-defaults --default-character-set=utf8mb4 -S "$my_work/mysqld.sock" -uroot "$@"; }

echo "loading the shop tables and $rows rows into both servers ..." >&2
my -e "CREATE DATABASE shop; CREATE DATABASE big;"
my --local-infile=1 shop < examples/shop/mariadb.sql
my big -e "CREATE TABLE events (id INT PRIMARY KEY, category VARCHAR(8), amount DOUBLE,
               created DATETIME);
           INSERT INTO events SELECT seq, CONCAT('c', seq % 1000), seq / 4,
               '2024-01-01' + INTERVAL seq SECOND FROM seq_1_to_$rows;
           ANALYZE TABLE events;" > /dev/null

echo "CREATE DATABASE shop; CREATE DATABASE big;" | pg_sql postgres
{
    echo "CREATE TABLE customers (customer_id bigint PRIMARY KEY, name varchar(100) NOT NULL);"
    echo "CREATE TABLE stores (store_id bigint PRIMARY KEY, name varchar(100) NOT NULL,
          opened_at timestamp NOT NULL, tax_rate double precision NOT NULL);"
    echo "CREATE TABLE products (sku varchar(20) PRIMARY KEY, name varchar(100) NOT NULL,
          type varchar(20) NOT NULL, price numeric(10,2) NOT NULL, description text);"
    echo "CREATE TABLE orders (order_id bigint PRIMARY KEY,
          customer_id bigint NOT NULL REFERENCES customers, store_id bigint NOT NULL REFERENCES stores,
          ordered_at timestamp NOT NULL, subtotal numeric(10,2) NOT NULL,
          tax_paid numeric(10,2) NOT NULL, order_total numeric(10,2) NOT NULL,
          status varchar(20) NOT NULL);"
    echo "CREATE TABLE order_items (order_item_id bigint PRIMARY KEY,
          order_id bigint NOT NULL REFERENCES orders, sku varchar(20) NOT NULL REFERENCES products,
          quantity bigint NOT NULL, unit_price numeric(10,2) NOT NULL);"
    echo "CREATE TABLE payments (payment_id bigint PRIMARY KEY,
          order_id bigint NOT NULL REFERENCES orders, payment_method varchar(20) NOT NULL,
          amount numeric(10,2) NOT NULL, paid_at timestamp NOT NULL);"
    echo "CREATE TABLE supplies (supply_id varchar(20) NOT NULL, name varchar(100) NOT NULL,
          cost numeric(10,2) NOT NULL, perishable boolean NOT NULL,
          sku varchar(20) NOT NULL REFERENCES products);"
    for t in customers stores products orders order_items payments supplies; do
        echo "\\copy $t FROM '$root/examples/shop/data/$t.csv' WITH (FORMAT csv, HEADER true)"
    done
    echo "VACUUM ANALYZE;"
} | pg_sql shop > /dev/null
pg_sql big > /dev/null << SQL
CREATE TABLE events (id int PRIMARY KEY, category varchar(8), amount double precision,
    created timestamp);
INSERT INTO events SELECT g, 'c' || (g % 1000), g / 4.0,
    timestamp '2024-01-01' + g * interval '1 second' FROM generate_series(1, $rows) AS g;
VACUUM ANALYZE;
SQL

my_url() { echo "mysql://root@$(printf %s "$my_work/mysqld.sock" | sed 's|/|%2F|g')/$1"; }

# The median wall time in ms of `slayer-profile URL`, RUNS times, after one warm-up run; the
# records of the last run go to $records.
median_ms() {
    local url=$1 times=() i start end
    "$bin/slayer-profile" "$url" -q --no-progress --threads "$threads" > /dev/null
    for ((i = 0; i < runs; i++)); do
        start=$(date +%s%N)
        "$bin/slayer-profile" "$url" -q --no-progress --threads "$threads" > "$records"
        end=$(date +%s%N)
        times+=($(((end - start) / 1000000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

records=$(mktemp)
echo
echo "slayer-profile, median of $runs runs, --threads $threads, both servers on this machine:"
echo
echo "| workload | PostgreSQL ms | MariaDB ms | MariaDB / PostgreSQL |"
echo "|---|---|---|---|"
for db in shop big; do
    pg=$(median_ms "$(pg_url "$db")")
    pg_models=$(grep -c '"kind":"model"' "$records")
    my=$(median_ms "$(my_url "$db")")
    my_models=$(grep -c '"kind":"model"' "$records")
    label=$([ "$db" = shop ] && echo "shop: 7 tables, 10,369 rows" || echo "one table, $rows rows")
    if [ "$pg_models" != "$my_models" ]; then
        echo "model counts differ: PostgreSQL $pg_models, MariaDB $my_models" >&2
        exit 1
    fi
    awk -v l="$label" -v p="$pg" -v m="$my" 'BEGIN {printf "| %s | %d | %d | %.2f |\n", l, p, m, m / p}'
done
rm -f "$records"
