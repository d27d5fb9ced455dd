#!/usr/bin/env bash
# Benchmarks of slayer-search's dense channel (release build), printed as a table.
#
#   scripts/bench_dense.sh [SIZES]      (default "10000 100000 1000000" memories)
#
# Per size N: a 200 x 20 catalog plus N memories, every doc with a 384-dim row under
# local/all-MiniLM-L6-v2 (a seeded random unit vector and the doc's true content hash, so
# `slayer-embed refresh --all` finds every doc unchanged); the question is embedded for real by
# the installed model. Whole-process `--question` latency with all channels and with
# `--channels entities,text` (20 interleaved calls each after one warm-up, median / p95), peak
# RSS of one call of each, `--batch` over 500 distinct questions (total wall / 500, process start
# and model load included), and `slayer-embed refresh --all` on the unchanged store.
#
# Stores are cached as "${BENCH_DENSE_DIR:-target/bench-dense}/s$N.db" (with `s$N.db.index` and
# any other `s$N.db.*`) and reused; FRESH=1 regenerates them; STORES_ONLY=1 only generates
# (or migrates and stamps) them and measures nothing (scripts/bench_agent_scale.sh). The benchmark fails if a cached
# store's docs, memories or embedding rows change. SKIP_BUILD=1 skips the cargo build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sizes=${1:-"10000 100000 1000000"}

# --tests too, so features resolve as in `cargo test` and nothing is compiled twice.
[ "${SKIP_BUILD:-}" = 1 ] || { scripts/fetch-duckdb.sh > /dev/null; cargo build --release --locked -q --workspace --bins --tests; }
bin="${CARGO_TARGET_DIR:-$root/target}/release"
cache="${BENCH_DENSE_DIR:-$root/target/bench-dense}"
mkdir -p "$cache"
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL SLAYER_MODEL_DIR SLAYER_LLM_MODEL
scripts/fetch-model.sh > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
question="refund amount by customer region"

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
secs() { awk -v m="$1" 'BEGIN{printf "%.1f s", m/1000}'; }
stats() { # file of microseconds -> "median / p95" in ms
    sort -n "$1" | awk '{a[NR]=$1} END {printf "%.1f / %.1f", a[int((NR+1)/2)]/1000, a[int(NR*0.95+0.5)]/1000}'
}

# An embedding row for every doc of STORE: the content hash slayer computes (lowercase hex
# SHA-256 of COALESCE(embedding_text, text), records.rs `content_hash`) and a seeded random unit
# vector (numpy when present; else exact normal quantiles indexed by seeded 16-bit draws).
fill_rows() { # store
    python3 - "$1" <<'PY'
import hashlib, math, random, sqlite3, struct, sys
from statistics import NormalDist
MODEL, DIM, AT = "local/all-MiniLM-L6-v2", 384, "2026-01-01T00:00:00Z"
try:
    import numpy as np
    gen = np.random.default_rng(5)
    def vector():
        v = gen.standard_normal(DIM).astype("<f4")
        return (v / np.linalg.norm(v)).astype("<f4").tobytes()
except ImportError:
    rng, nd = random.Random(5), NormalDist()
    table = [nd.inv_cdf((i + 0.5) / 65536) for i in range(65536)]
    pack, unpack = struct.Struct(f"<{DIM}f").pack, struct.Struct(f"<{DIM}H").unpack
    def vector():
        v = [table[i] for i in unpack(rng.randbytes(2 * DIM))]
        inv = 1 / math.hypot(*v)
        return pack(*[x * inv for x in v])
c = sqlite3.connect(sys.argv[1])
docs = c.execute("SELECT canonical_id, COALESCE(embedding_text, text) FROM docs ORDER BY canonical_id")
count = 0
def rows():
    global count
    for cid, body in docs:
        count += 1
        yield cid, MODEL, hashlib.sha256(body.encode("utf-8")).hexdigest(), DIM, vector(), AT
with c:
    c.executemany("INSERT INTO embeddings (canonical_id, model_name, content_hash, dim, vector, updated_at)"
                  " VALUES (?, ?, ?, ?, ?, ?)", rows())
c.close()
print(count)
PY
}

# Stamps every row with the active model's revision (the rows are the model's, by design).
stamp_rows() { # store
    local rev
    rev=$(SLAYER_STORE="$1" "$bin/slayer-embed" status --format json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["active_revision"])')
    python3 - "$1" "$rev" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
with c:
    c.execute("UPDATE embeddings SET model_revision = ? WHERE model_revision <> ?", (sys.argv[2], sys.argv[2]))
c.close()
PY
}

# Builds s$N.db under a temporary name and renames it (with its siblings) only when complete.
generate() { # n
    local n=$1 tmp="$cache/tmp-s$1.db" start s f load import rows
    start=$(date +%s%N)
    rm -rf "$cache/s$n.db"* "$tmp"*
    python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"
    python3 scripts/bench_data.py memories "$n" > "$work/m.jsonl"
    s=$(date +%s%N)
    SLAYER_STORE="$tmp" "$bin/slayer-index" -q load "$work/catalog.jsonl" > /dev/null
    load=$(ms_since "$s"); s=$(date +%s%N)
    SLAYER_STORE="$tmp" SLAYER_NO_EMBED=1 "$bin/slayer-memory" -q import "$work/m.jsonl" > /dev/null
    import=$(ms_since "$s"); s=$(date +%s%N)
    rows=$(fill_rows "$tmp")
    fill=$(ms_since "$s")
    for f in "$tmp"*; do [ -e "$f" ] && mv "$f" "$cache/s$n.db${f#"$tmp"}"; done
    rm -f "$work/m.jsonl"
    echo "- s$n.db generated: catalog load $(secs "$load"), import of $n memories $(secs "$import")," \
        "$rows embedding rows $(secs "$fill"); $(secs "$(ms_since "$start")") in all" >> "$work/notes"
}

fingerprint() { # store -> what the benchmark must leave as it is
    python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(c.execute("SELECT (SELECT group_concat(key || '=' || value) FROM settings WHERE key IN"
                " ('docs_version', 'memory_count', 'embeddings_changes')),"
                " (SELECT count(*) FROM docs), (SELECT count(*) FROM memories),"
                " (SELECT count(*) || ' ' || sum(length(vector)) FROM embeddings)").fetchone())
PY
}

# 500 distinct questions (the batch process caches question embeddings): 20 analytics
# questions x 25 qualifiers.
python3 - > "$work/batch.jsonl" <<'PY'
import json
bases = ["refund amount by customer region", "monthly revenue by product category",
         "which suppliers have the most late shipments", "average order value per channel",
         "invoice totals by currency", "top customers by lifetime revenue",
         "discount rate by coupon code", "tax collected per country",
         "orders by status and warehouse", "payment failures by payment method",
         "net revenue after refunds", "shipment volume per warehouse",
         "new customers per month", "return rate by product", "revenue growth by city",
         "unpaid invoices older than 30 days", "conversion rate by marketing channel",
         "inventory levels by supplier", "average delivery time by region",
         "churned customers by signup cohort"]
quals = ["", " last month", " this year", " in 2024", " last quarter", " week over week",
         " for EMEA", " in the US", " excluding test orders", " for premium customers",
         " by day", " year to date", " compared to last year", " top 10", " in euros",
         " for online orders", " for retail stores", " since January", " per store",
         " for returning customers", " over the last 90 days", " by weekday",
         " in Germany", " split by device", " rolling 7 days"]
for i in range(500):
    print(json.dumps({"question": bases[i % 20] + quals[i // 20]}))
PY

echo "slayer-search dense channel: 200 models x 20 columns, 384-dim rows for every doc, $(nproc) cores"
echo
printf '| %9s | %-20s | %-27s | %12s | %22s | %17s | %20s |\n' "memories" "all median/p95 ms" \
    "entities,text median/p95 ms" "all peak MiB" "entities,text peak MiB" "batch ms/question" "refresh unchanged ms"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "-----------" "----------------------" "-----------------------------" \
    "--------------" "------------------------" "-------------------" "----------------------"
for n in $sizes; do
    export SLAYER_STORE="$cache/s$n.db"
    if [ "${FRESH:-}" = 1 ] || [ ! -f "$SLAYER_STORE" ]; then
        generate "$n"
    else
        echo "- s$n.db reused from $cache" >> "$work/notes"
    fi
    # A store of an older schema is migrated, and its rows stamped with the installed model's
    # revision (rows of another revision are stale and never read).
    "$bin/slayer-index" -q migrate > /dev/null
    stamp_rows "$SLAYER_STORE"
    [ "${STORES_ONLY:-}" = 1 ] && continue
    before=$(fingerprint "$SLAYER_STORE")
    docs=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from docs').fetchone()[0])" "$SLAYER_STORE")
    # The warm-up must rank by the dense channel: a missing model or rows would only warn.
    "$bin/slayer-search" --question "$question" --explain 2> "$work/warn" > "$work/out.json"
    if [ -s "$work/warn" ] || ! grep -q '"channel": "dense"' "$work/out.json"; then
        echo "bench_dense: the dense channel did not run at $n memories:" >&2; cat "$work/warn" >&2; exit 1
    fi
    "$bin/slayer-search" --question "$question" --channels entities,text > /dev/null
    : > "$work/all"; : > "$work/lex"
    for _ in $(seq 1 20); do
        s=$(date +%s%N); "$bin/slayer-search" --question "$question" > /dev/null
        echo $(( ($(date +%s%N) - s) / 1000 )) >> "$work/all"
        s=$(date +%s%N); "$bin/slayer-search" --question "$question" --channels entities,text > /dev/null
        echo $(( ($(date +%s%N) - s) / 1000 )) >> "$work/lex"
    done
    /usr/bin/time -f %M -o "$work/rss_all" "$bin/slayer-search" --question "$question" > /dev/null
    /usr/bin/time -f %M -o "$work/rss_lex" "$bin/slayer-search" --question "$question" --channels entities,text > /dev/null
    s=$(date +%s%N)
    "$bin/slayer-search" --batch "$work/batch.jsonl" > "$work/batch.out"
    batch=$(ms_since "$s")
    replies=$(grep -c '"entities"' "$work/batch.out" || true)
    [ "$replies" = 500 ] || { echo "bench_dense: --batch gave $replies answers of 500" >&2; exit 1; }
    : > "$work/refresh"
    for _ in 1 2 3; do
        s=$(date +%s%N)
        "$bin/slayer-embed" refresh --all > "$work/refresh.jsonl" 2> "$work/refresh.err"
        ms_since "$s" >> "$work/refresh"
        unchanged=$(grep -c '"status":"unchanged"' "$work/refresh.jsonl" || true)
        if [ "$unchanged" != "$docs" ] || ! grep -q ": 0 embedded, $docs unchanged, 0 failed" "$work/refresh.err"; then
            echo "bench_dense: refresh --all found $unchanged of $docs docs unchanged:" >&2
            cat "$work/refresh.err" >&2; exit 1
        fi
    done
    after=$(fingerprint "$SLAYER_STORE")
    [ "$before" = "$after" ] || { echo "bench_dense: the store changed: $before -> $after" >&2; exit 1; }
    printf '| %9s | %-20s | %-27s | %12.1f | %22.1f | %17s | %20s |\n' "$n" "$(stats "$work/all")" \
        "$(stats "$work/lex")" "$(awk -v k="$(cat "$work/rss_all")" 'BEGIN{print k/1024}')" \
        "$(awk -v k="$(cat "$work/rss_lex")" 'BEGIN{print k/1024}')" \
        "$(awk -v ms="$batch" 'BEGIN{printf "%.1f (%.1f s)", ms/500, ms/1000}')" \
        "$(sort -n "$work/refresh" | sed -n 2p)"
done
echo
echo "Targets: 10k <= 30 ms, <= 80 MiB; 100k <= 60 ms, <= 150 MiB; 1M <= 300 ms, <= 1 GiB;" \
    "batch <= 10 ms/question at 100k; refresh unchanged < 1 s at 100k."
echo "batch: 500 distinct questions in one process, total wall / 500 (start and model load included)." \
    "refresh: median of 3, all docs verified unchanged."
echo
cat "$work/notes"
