#!/usr/bin/env bash
# What hostile or unlucky requests cost a slayer-search process (docs/spec.md §16), as a table.
#
#   scripts/bench_hostile.sh [BIN_DIR]     (default: this checkout's release build)
#
# BIN_DIR lets the same inputs run against another build (an older commit's binaries), so a
# before/after comparison is one run on one machine. Each scenario is one process under GNU
# time: wall seconds, peak RSS, and what came back (answered, cut, refused, or the exit code).
# Scenarios, on a 200-model x 20-column generated catalog:
#   question 16 KB   one --question of 16 KB of distinct words
#   question 1 MB    one --batch line holding a 1 MB question
#   formula 30k deep one --batch line whose query nests a formula 30,000 calls deep
#   line 1.2 MB      one --batch line of 1.2 MB (over the line limit)
#   40 mixed         the hostile test's mix: random deep formulas, long questions, long lines
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ $# -ge 1 ]; then
    bins=$(cd "$1" && pwd)
else
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins
    bins="${CARGO_TARGET_DIR:-$root/target}/release"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset SLAYER_FORMAT
export SLAYER_MODEL_DIR=/nonexistent/slayer-models

python3 scripts/gen_catalog.py 200 20 > "$work/catalog.jsonl"
"$bins/slayer-index" --store "$work/s.db" -q load "$work/catalog.jsonl" > /dev/null

python3 - "$work" <<'EOF'
import json, random, sys
work = sys.argv[1]
rng = random.Random(0x5EED)

def formula(depth):
    funcs = ["sum", "cumsum", "avg", "lag", "count", "coalesce"]
    return "".join(rng.choice(funcs) + "(" for _ in range(depth)) + "amount" + ")" * depth

def query(f):
    return {"source_model": "model_001", "measures": [{"formula": f}]}

def question(words):
    return " ".join(rng.choice(["revenue", f"w{i}", f"Order{rng.randrange(1000)}"]) for i in range(words))

open(f"{work}/q16k.txt", "w").write(" ".join(f"term{i}" for i in range(2000))[:16384])
open(f"{work}/q1m.jsonl", "w").write(json.dumps({"question": question(110_000)[:1_000_000]}) + "\n")
open(f"{work}/deep.jsonl", "w").write(json.dumps({"query": query(formula(30_000))}) + "\n")
open(f"{work}/long.jsonl", "w").write(json.dumps({"question": "y" * 1_200_000}) + "\n")
with open(f"{work}/mixed.jsonl", "w") as out:
    for i in range(40):
        kind = i % 4
        if kind in (0, 1):
            depth = rng.choice([rng.randrange(8), rng.randrange(64), rng.randrange(60_000)])
            line = {"query": query(formula(depth))}
        elif kind == 2:
            line = {"question": question(3_000 + rng.randrange(120_000))[:1_000_000]}
        else:
            line = {"question": "y" * 1_200_000}
        out.write(json.dumps(line) + "\n")
EOF

outcome() { # the records of a --batch reply, counted
    python3 -c '
import json, sys
n = {"answered": 0, "cut": 0, "refused": 0}
text = sys.stdin.read().strip()
try:
    replies = [json.loads(text)] if text else []
except ValueError:
    replies = [json.loads(l) for l in text.splitlines()]
for r in replies:
    if r.get("kind") == "error":
        n["refused"] += 1
    else:
        n["answered"] += 1
        if any("cut to its first" in w for w in r.get("warnings", [])):
            n["cut"] += 1
print(", ".join(f"{v} {k}" for k, v in n.items() if v))'
}

row() { # name outcome
    read -r wall kb < <(tail -n 1 "$work/time")
    printf '| %-17s | %8s | %9.1f | %-40s |\n' "$1" "$wall" "$(python3 -c "print($kb / 1024)")" "$2"
}

printf '| %-17s | %8s | %9s | %-40s |\n' scenario "wall s" "peak MiB" outcome
printf '|-------------------|----------|-----------|------------------------------------------|\n'
set +e
/usr/bin/time -f "%e %M" -o "$work/time" "$bins/slayer-search" --store "$work/s.db" \
    --channels entities,text --question "$(cat "$work/q16k.txt")" > "$work/out" 2> "$work/err"
code=$?
if [ $code -eq 0 ]; then
    what=$(outcome < "$work/out")
else
    what="exit $code"
fi
row "question 16 KB" "$what"
for scenario in "question 1 MB:q1m" "formula 30k deep:deep" "line 1.2 MB:long" "40 mixed:mixed"; do
    name=${scenario%%:*}
    file=${scenario##*:}
    /usr/bin/time -f "%e %M" -o "$work/time" timeout 600 "$bins/slayer-search" --store "$work/s.db" \
        --channels entities,text --batch - < "$work/$file.jsonl" > "$work/out" 2> "$work/err"
    code=$?
    what=$(outcome < "$work/out")
    [ $code -ne 0 ] && what="$what (exit $code)"
    row "$name" "$what"
done
