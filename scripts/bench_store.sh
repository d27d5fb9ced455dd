#!/usr/bin/env bash
# Benchmark of the store on PostgreSQL next to SQLite (issue 33), release build, printed as a
# markdown table.
#
#   scripts/bench_store.sh [N]      (default 10000 memories)
#
# The same store built twice, as an SQLite file and in a PostgreSQL database (schema default,
# VACUUM ANALYZE after the build): a synthetic catalog of 200 models x 20 columns
# (gen_catalog.py) plus the demo shop catalog, and N memories tagged with the shop's entities
# (gen_memories.py). The PostgreSQL server is a throwaway cluster on a unix socket
# (scripts/pg_cluster.sh: no TCP, no durability). Each "host" is its own SLAYER_CACHE_DIR (a
# PostgreSQL store's per-host caches: full-text index, vector sidecar). On each store:
#   1. whole-process latency of a one-shot `slayer-search --question` with warm caches (one
#      untimed search first), median and p95 of 30 varied questions;
#   2. `slayer-search --batch`: 200 requests through one process, mean per request;
#   3. whole-process latency of `slayer-memory save`, median and max of 20;
#   4. catch-up: host B (its own cache folder) warm, then host A imports 1,000 new memories (one
#      `slayer-memory import`), then host B's next search (catching its caches up from the
#      change log), next to B's search when nothing changed; 3 rounds, median and max; then
#      `slayer-index stats --check` on host B (which must find its index in sync). An SQLite
#      store's full-text index sits next to its file, so there host B shares host A's index and
#      its "catch-up" search is just the search after another process's import.
# Targets (issue 33): PostgreSQL search within 1.5x of SQLite; save on PostgreSQL <= 30 ms; a
# host catching up on 1,000 writes made elsewhere <= 1 s.
#
# SLAYER_BIN=<dir>: use the binaries in <dir> and skip the cargo build. The SQLite file and the
# hosts' cache folders go under TMPDIR (default /tmp): TMPDIR=/dev/shm takes the disk's fsyncs
# (the full-text index commits every write durably) out of the numbers.
# Needs bash 5, python3 and the PostgreSQL server binaries (Debian: apt-get install postgresql).
# Where one half fails (say, a PostgreSQL backend not built yet), its column shows "-" and the
# script exits 1 after the table.
set -euo pipefail
if [ -z "${EPOCHREALTIME:-}" ]; then
    echo "bench_store: needs bash 5 (EPOCHREALTIME)" >&2
    exit 1
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-10000}
searches=30
batch_n=200
saves=20
rounds=3
chunk=1000

if [ -n "${SLAYER_BIN:-}" ]; then
    bin=$(cd "$SLAYER_BIN" && pwd)
else
    # --tests too, so features resolve as in `cargo test` and nothing is compiled twice.
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins --tests
    bin="${CARGO_TARGET_DIR:-$root/target}/release"
fi
unset SLAYER_FORMAT SLAYER_STORE SLAYER_CACHE_DIR
# Memories are embedded on import by default; this benchmark measures the store and the index.
export SLAYER_NO_EMBED=1

# shellcheck source=scripts/pg_cluster.sh
. scripts/pg_cluster.sh
pg_cluster_start bench_store
work=$(mktemp -d)
trap 'pg_cluster_stop; rm -rf "$work"' EXIT
echo "CREATE DATABASE bench;" | pg_sql postgres
pg_store=$(pg_url bench)
sqlite_store="$work/store.db"

python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"
# N memories for the build, then `rounds` chunks of new ones (ids kb.N ...) for the catch-up.
python3 scripts/gen_memories.py $((n + rounds * chunk)) > "$work/all.jsonl"
head -n "$n" "$work/all.jsonl" > "$work/memories.jsonl"
for r in $(seq 1 "$rounds"); do
    sed -n "$((n + (r - 1) * chunk + 1)),$((n + r * chunk))p" "$work/all.jsonl" > "$work/chunk$r.jsonl"
done

# Varied questions over the memories' and the catalog's words: base x suffix, all distinct.
bases=("which refunds by customer region" "revenue of gift card payments per store"
    "weekend orders growth by city" "tax on returned orders in dollars or cents"
    "how many customers per opened store" "beverage product revenue on weekdays"
    "exclude null payment amounts" "split payments per order" "jaffle product refunds"
    "do order totals include tax")
suffixes=("" "last month" "per channel")
question() { # i -> a question
    local i=$1
    local suffix=${suffixes[(i / ${#bases[@]}) % ${#suffixes[@]}]}
    printf '%s%s?' "${bases[i % ${#bases[@]}]}" "${suffix:+ $suffix}"
}
python3 - "$batch_n" > "$work/batch.jsonl" << 'PY'
import json
import sys
qs = ["refund by region", "invoice currency", "gift card payments per store",
      "returned orders tax", "weekend revenue growth", "shipment warehouse status"]
for i in range(int(sys.argv[1])):
    if i % 2:
        print(json.dumps({"question": qs[i % len(qs)]}))
    else:
        print(json.dumps({"entities": [f"bench.model_{i % 200:03d}", "shop.orders"]}))
PY

on() { # store cache-dir binary [args] -- the binary as one host of the store
    local store=$1 cache=$2 b=$3
    shift 3
    SLAYER_STORE=$store SLAYER_CACHE_DIR=$cache "$bin/$b" "$@"
}
# Wall times in microseconds from bash's EPOCHREALTIME: no fork (of date) around the timed
# process, which costs milliseconds on a busy machine.
timed() { # out-file store cache-dir binary [args] -- appends the wall time in microseconds
    local out=$1 s
    shift
    s=${EPOCHREALTIME/[.,]/}
    on "$@" > /dev/null
    echo $((${EPOCHREALTIME/[.,]/} - s)) >> "$out"
}
summary() { # median|p95|max file-of-microseconds -> ms, or "-" where nothing was measured
    if [ ! -s "$2" ]; then
        echo "-"
        return
    fi
    sort -n "$2" | awk -v s="$1" '{a[NR]=$1} END {
        i = s == "median" ? int((NR+1)/2) : s == "p95" ? int(NR*0.95+0.5) : NR
        printf "%.1f", a[i]/1000}'
}

bench() { # kind store -- every measure on one store; results in $work/<kind>.*
    local kind=$1 store=$2 i r s
    local a="$work/$kind-hostA" b="$work/$kind-hostB" out="$work/$kind"
    echo "$kind: building the store ($n memories)" >&2
    s=${EPOCHREALTIME/[.,]/}
    on "$store" "$a" slayer-index -q load "$work/catalog.jsonl" > /dev/null
    on "$store" "$a" slayer-index -q import-slayer examples/shop/slayer > /dev/null
    on "$store" "$a" slayer-memory -q import "$work/memories.jsonl" > /dev/null
    echo $((${EPOCHREALTIME/[.,]/} - s)) >> "$out.build"
    if [ "$kind" = pg ]; then echo "VACUUM ANALYZE;" | pg_sql bench; fi

    echo "$kind: searches" >&2
    on "$store" "$a" slayer-search --question "warm up" > /dev/null
    : > "$out.search"
    for i in $(seq 0 $((searches - 1))); do
        timed "$out.search" "$store" "$a" slayer-search --question "$(question "$i")"
    done
    timed "$out.batch" "$store" "$a" slayer-search --batch "$work/batch.jsonl"

    echo "$kind: saves" >&2
    : > "$out.save"
    for i in $(seq 1 "$saves"); do
        timed "$out.save" "$store" "$a" slayer-memory -q save \
            --learning "Latency probe $i: returned orders keep their totals" \
            --entities "shop.orders.status, bench.model_$(printf '%03d' $((i * 7 % 200)))"
    done

    echo "$kind: catch-up" >&2
    : > "$out.cold"
    timed "$out.cold" "$store" "$b" slayer-search --question "refunds of returned orders?"
    : > "$out.still"
    for i in $(seq 1 10); do
        timed "$out.still" "$store" "$b" slayer-search --question "refunds of returned orders?"
    done
    : > "$out.import"
    : > "$out.catchup"
    for r in $(seq 1 "$rounds"); do
        timed "$out.import" "$store" "$a" slayer-memory -q import "$work/chunk$r.jsonl"
        timed "$out.catchup" "$store" "$b" slayer-search --question "refunds of returned orders?"
    done
    s=${EPOCHREALTIME/[.,]/}
    if on "$store" "$b" slayer-index stats --check > "$out.stats" 2>&1; then
        echo ok > "$out.checked"
    else
        echo "FAILS" > "$out.checked"
        cat "$out.stats" >&2
    fi
    echo $((${EPOCHREALTIME/[.,]/} - s)) >> "$out.check"
    awk '$1 == "memories" {print $2}' "$out.stats" > "$out.memories"
}

# A half that fails (say, a backend not built yet) leaves "-" in its column.
failed=""
for kind in sqlite pg; do
    store=$sqlite_store
    if [ "$kind" = pg ]; then store=$pg_store; fi
    set +e
    (
        set -e
        bench "$kind" "$store"
    )
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
        echo "$kind: failed (exit $rc); its column shows -" >&2
        failed="$failed $kind"
    fi
done

ratio() { # sqlite pg -> "1.23x", or "-"
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "-" || b == "-" || a + 0 <= 0) print "-"; else printf "%.2fx", b/a}'
}
verdict() { # value limit -> "ok", "MISSED" or "not measured"
    awk -v v="$1" -v l="$2" 'BEGIN {
        if (v == "-") print "not measured"; else print (v + 0 <= l + 0) ? "ok" : "MISSED"}'
}
unit() { # value unit -> "value unit", or "-"
    if [ "$1" = "-" ]; then echo "-"; else echo "$1 $2"; fi
}
content() { # file -> its text, or "-"
    if [ -s "$1" ]; then cat "$1"; else echo "-"; fi
}
per_request() { # file of microseconds -> ms per request of the batch
    if [ -s "$1" ]; then awk -v u="$(cat "$1")" -v n="$batch_n" 'BEGIN {printf "%.2f", u/1000/n}'; else echo "-"; fi
}
seconds() { # file of microseconds -> s
    if [ -s "$1" ]; then awk -v u="$(cat "$1")" 'BEGIN {printf "%.1f", u/1e6}'; else echo "-"; fi
}
row() { # measure sqlite pg note
    printf '| %-58s | %12s | %12s | %-28s |\n' "$@"
}
both() { # measure what unit file-suffix [note] -- a row of stat `what` on both stores
    local s p
    s=$(summary "$2" "$work/sqlite.$4")
    p=$(summary "$2" "$work/pg.$4")
    row "$1" "$(unit "$s" "$3")" "$(unit "$p" "$3")" "${5-$(ratio "$s" "$p")}"
}

s_med=$(summary median "$work/sqlite.search")
p_med=$(summary median "$work/pg.search")
search_ratio=$(ratio "$s_med" "$p_med")
s_batch=$(per_request "$work/sqlite.batch")
p_batch=$(per_request "$work/pg.batch")
p_save=$(summary median "$work/pg.save")
p_catch=$(summary max "$work/pg.catchup")

echo
echo "the store on PostgreSQL $("$pg_bindir/postgres" --version | awk '{print $3}') (unix socket) next to SQLite:" \
    "$n memories + 200 models x 20 columns + the shop catalog, $(nproc) cores"
echo
row "measure" "SQLite" "PostgreSQL" "ratio/target"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..14})" \
    "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..30})"
row "build: load catalogs + import $n memories" "$(unit "$(seconds "$work/sqlite.build")" s)" \
    "$(unit "$(seconds "$work/pg.build")" s)" \
    "$(ratio "$(seconds "$work/sqlite.build")" "$(seconds "$work/pg.build")")"
both "search --question, warm cache: median of $searches" median ms search \
    "$search_ratio (<= 1.50x: $(verdict "$(ratio "$s_med" "$p_med" | tr -d x)" 1.5))"
both "search --question, warm cache: p95 of $searches" p95 ms search
row "search --batch: mean per request of $batch_n" "$(unit "$s_batch" ms)" "$(unit "$p_batch" ms)" \
    "$(ratio "$s_batch" "$p_batch")"
both "save: median of $saves" median ms save "<= 30 ms: $(verdict "$p_save" 30)"
both "save: max of $saves" max ms save ""
both "host B: first search (cold cache)" median ms cold ""
both "host B: search, nothing changed (median of 10)" median ms still
both "host A: import $chunk memories (median of $rounds)" median ms import
both "host B: catch-up search after $chunk writes (median of $rounds)" median ms catchup ""
both "host B: catch-up search after $chunk writes (max of $rounds)" max ms catchup \
    "<= 1000 ms: $(verdict "$p_catch" 1000)"
row "host B: stats --check after" \
    "$(unit "$(summary median "$work/sqlite.check")" "ms, $(content "$work/sqlite.checked")")" \
    "$(unit "$(summary median "$work/pg.check")" "ms, $(content "$work/pg.checked")")" ""
row "host B: memories seen (expected $((n + saves + rounds * chunk)))" \
    "$(content "$work/sqlite.memories")" "$(content "$work/pg.memories")" ""
if [ -n "$failed" ]; then
    echo
    echo "failed:$failed (see stderr)"
    exit 1
fi
