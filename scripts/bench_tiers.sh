#!/usr/bin/env bash
# Benchmark of memory tiers (seed 003): search latency with the high-order tiers searched
# ("on", every tier) and without them ("off", `--tiers observation`), on the same store.
#
#   scripts/bench_tiers.sh [SIZES]      (default "1500 10000 100000" memories)
#
# Per size N: the dense benchmark's store (scripts/bench_dense.sh: a 200 x 20 catalog, N
# memories, a random 384-dim row per doc; generated there if missing), copied, with 100
# memories of each high-order tier (semantic, procedural, crystal, insight, facet: 500 in all,
# a third of them with confidence 0.9, all with strength 0.8) and N - 500 observations. So 1500
# is the seed's workload: 1,000 observations plus 100 entries per high-order tier.
# "plain" is the same store before the tiers are set (every memory a plain lesson: the path
# that existed before tiers). Reported: `--batch` over 200 distinct questions, all channels (ms per question, the process
# and the model load included), and one-shot whole-process latency (median / p95 of 15).
# SKIP_BUILD=1 skips the cargo build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sizes=${1:-"1500 10000 100000"}
[ "${SKIP_BUILD:-}" = 1 ] || { scripts/fetch-duckdb.sh > /dev/null; cargo build --release --locked -q --workspace --bins --tests; }
bin="${CARGO_TARGET_DIR:-$root/target}/release"
cache="${BENCH_DENSE_DIR:-$root/target/bench-dense}"
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL SLAYER_MODEL_DIR SLAYER_LLM_MODEL SLAYER_HIGH_ORDER_SEARCH
export SLAYER_NO_EMBED=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - > "$work/batch.jsonl" <<'PY'
import json
bases = ["refund amount by customer region", "monthly revenue by product category",
         "late shipments by supplier", "average order value per channel",
         "invoice totals by currency", "top customers by lifetime revenue",
         "discount rate by coupon code", "tax collected per country",
         "orders by status and warehouse", "payment failures by payment method"]
quals = ["last year", "this quarter", "in europe", "for new customers", "excluding tests",
         "per week", "by team", "for enterprise", "in usd", "since launch", "weekly",
         "for retail", "by city", "per store", "for returns", "online", "in stores",
         "by segment", "per region", "monthly"]
for b in bases:
    for q in quals:
        print(json.dumps({"question": f"{b} {q}"}))
PY

stats() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%.1f / %.1f", a[int((NR+1)/2)]/1000, a[int(NR*0.95+0.5)]/1000}'; }

measure() { # n mode store flags...
    local n=$1 mode=$2 store=$3 s batch
    shift 3
    # Warm: the sidecar is built and the page cache filled.
    SLAYER_STORE="$store" "$bin/slayer-search" "$@" --question warm > /dev/null 2>&1
    s=$(date +%s%N)
    SLAYER_STORE="$store" "$bin/slayer-search" "$@" --batch "$work/batch.jsonl" > /dev/null 2>&1
    batch=$(( ($(date +%s%N) - s) / 1000 ))
    : > "$work/one.txt"
    for _ in $(seq 15); do
        s=$(date +%s%N)
        SLAYER_STORE="$store" "$bin/slayer-search" "$@" \
            --question "refund amount by customer region" > /dev/null 2>&1
        echo $(( ($(date +%s%N) - s) / 1000 )) >> "$work/one.txt"
    done
    printf '| %s | %s | %.1f | %s |\n' "$n" "$mode" \
        "$(awk -v u="$batch" 'BEGIN{print u/200/1000}')" "$(stats "$work/one.txt")"
}

printf '| memories | tiers | batch ms/question | one-shot median / p95 ms |\n|---|---|---|---|\n'
for n in $sizes; do
    if [ ! -e "$cache/s$n.db" ]; then
        SKIP_BUILD=1 scripts/bench_dense.sh "$n" > /dev/null
    fi
    store="$work/t$n.db"
    for f in "$cache/s$n.db" "$cache/s$n.db-wal"; do
        [ -e "$f" ] && cp "$f" "$store${f#"$cache/s$n.db"}"
    done
    cp -r "$cache/s$n.db.index" "$store.index"
    SLAYER_STORE="$store" "$bin/slayer-index" -q migrate > /dev/null
    rev=$(SLAYER_STORE="$store" "$bin/slayer-embed" status --format json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["active_revision"])')
    python3 - "$store" "$rev" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
with c:
    c.execute("UPDATE embeddings SET model_revision = ?", (sys.argv[2],))
c.close()
PY
    measure "$n" plain "$store"
    python3 - "$store" "$rev" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
with c:
    ids = [r[0] for r in c.execute("SELECT id FROM memories ORDER BY id")]
    tiers = ["semantic", "procedural", "crystal", "insight", "facet"]
    c.execute("UPDATE memories SET tier = 'observation'")
    # Spread the high-order entries through the id order.
    step = max(1, len(ids) // 500)
    for k, i in enumerate(range(0, len(ids), step)):
        if k >= 500:
            break
        c.execute("UPDATE memories SET tier = ?, strength = 0.8, confidence = ? WHERE id = ?",
                  (tiers[k % 5], 0.9 if k % 3 == 0 else 1.0, ids[i]))
c.close()
PY
    measure "$n" off "$store" --tiers observation
    measure "$n" on "$store"
    rm -rf "$store"*
done
