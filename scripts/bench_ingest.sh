#!/usr/bin/env bash
# What a nightly ingest costs (issue 50): a 2,000-model dbt project and a 10,000-page Markdown
# knowledge base converged into one store, embedded with the local model, then re-run three
# times: with nothing changed, with 1% of the models and pages changed, and with nothing
# changed again. Prints a table: wall seconds of each run, what the catalog sync and the
# knowledge-base sync planned, the docs (re-)embedded, and whether the store was written at all
# (SQLite's data_version, seen from a connection held open across the run).
#
#   scripts/bench_ingest.sh [MODELS [PAGES]]      (default 2000 10000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
models=${1:-2000}
pages=${2:-10000}
scripts/fetch-duckdb.sh > /dev/null
scripts/fetch-model.sh > /dev/null
cargo build --release --locked -q --workspace --bins
bin="${CARGO_TARGET_DIR:-$root/target}/release"
export PATH="$bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL
export SLAYER_STORE="$work/s.db" SLAYER_NO_EMBED=0

python3 scripts/gen_dbt.py "$work/dbt" "$models" 10
python3 - "$work/kb" "$pages" "$models" <<'PY'
import os, random, sys
root, pages, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(50)
words = ("refund revenue order customer region store weekly late tax cents dollars churn active "
         "shipment supplier discount margin quarter audit backfill duplicate timezone").split()
for i in range(pages):
    area = f"{root}/area{i % 50:02d}"
    os.makedirs(area, exist_ok=True)
    m = rng.randrange(models)
    body = " ".join(rng.choice(words) for _ in range(60))
    with open(f"{area}/page{i:05d}.md", "w") as f:
        f.write(f"---\nentities:\n  - bench.m{m:04d}\n---\n# Page {i}\n\n{body}.\n"
                f"See [[bench.m{(m + 1) % models:04d}]].\n")
PY

run() { # label: one nightly run, timed, with what it planned and embedded
    local label=$1 started
    started=$(python3 -c 'import datetime; print(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))')
    local t0 t1
    t0=$(date +%s.%N)
    # The nightly pipeline, with a connection held open to see whether anything was written.
    python3 - "$SLAYER_STORE" "$work" <<'PY' &
import os, sqlite3, sys, time
store, work = sys.argv[1], sys.argv[2]
while not os.path.exists(store):
    time.sleep(0.05)
conn = sqlite3.connect(store)
before = conn.execute("PRAGMA data_version").fetchone()[0]
while not os.path.exists(f"{work}/done"):
    time.sleep(0.05)
after = conn.execute("PRAGMA data_version").fetchone()[0]
open(f"{work}/written", "w").write("yes" if after != before else "no")
PY
    local watcher=$!
    rm -f "$work/done"
    slayer-index -q import dbt "$work/dbt" --datasource bench \
        | slayer-index load --sync 2> "$work/load.err" \
        | slayer-embed refresh -q > /dev/null
    slayer-memory ingest "$work/kb" --format text > /dev/null 2> "$work/ingest.err" || true
    t1=$(date +%s.%N)
    touch "$work/done"
    wait "$watcher" || true
    local embedded catalog kb written
    embedded=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM embeddings WHERE updated_at > ?', (sys.argv[2],)).fetchone()[0])" "$SLAYER_STORE" "$started")
    catalog=$(grep -oE '\([0-9]+ added, [0-9]+ changed, [0-9]+ removed, [0-9]+ unchanged\)' "$work/load.err" | tr -d '()')
    kb=$(grep -oE '\([0-9]+ added, [0-9]+ changed, [0-9]+ removed, [0-9]+ unchanged\)' "$work/ingest.err" | tr -d '()')
    written=$(cat "$work/written" 2>/dev/null || echo "?")
    printf '| %-22s | %7.1f | %-42s | %-42s | %8s | %-7s |\n' "$label" \
        "$(python3 -c "print($t1 - $t0)")" "$catalog" "$kb" "$embedded" "$written"
}

printf '| %-22s | %7s | %-42s | %-42s | %8s | %-7s |\n' run "wall s" "models (load --sync)" \
    "pages (ingest)" embedded written
printf '|------------------------|---------|--------------------------------------------|--------------------------------------------|----------|---------|\n'
run "first (empty store)"
run "nothing changed"
# 1% changed: a description in 1% of the model files, a line in 1% of the pages, and 1% of
# the pages deleted (under half: the guard lets it through).
python3 - "$work" "$models" "$pages" <<'PY'
import os, sys
work, models, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(0, models, 100):
    path = f"{work}/dbt/models/m{i:04d}.yml"
    text = open(path).read().replace(f"Model {i} of the benchmark.", f"Model {i} of the benchmark, revised.")
    open(path, "w").write(text)
for i in range(0, pages, 200):
    path = f"{work}/kb/area{i % 50:02d}/page{i:05d}.md"
    open(path, "a").write("Revised: counts exclude test orders.\n")
for i in range(100, pages, 200):
    os.remove(f"{work}/kb/area{i % 50:02d}/page{i:05d}.md")
PY
run "1% changed"
run "nothing changed again"
