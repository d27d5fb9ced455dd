#!/usr/bin/env bash
# What hostile or unlucky requests cost a slayer-search process (docs/spec/limits.md §16), as a
# table.
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
# and what hostile project files cost `slayer-index import` (issue 49), each under `timeout 60`:
#   manifest 10 MB   a dbt target/manifest.json of 100-deep arrays (10 MB)
#   JS 6,000 deep    a Cube JavaScript file nested 6,000 brackets deep (12 KB)
#   YAML 40k flow    a Cube YAML file with flow collections 40,000 deep (160 KB)
#   symlink loops    a dbt models folder holding `a -> .` and `b -> .`
#   10k models/file  10,000 semantic models in one dbt YAML file
#   50 MB describe   a dbt semantic model whose description is 50 MB, imported with --load,
#                    then one search that finds it (its reply's size)
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

# Hostile project files for `slayer-index import`.
python3 - "$work" <<'EOF'
import os, sys
w = sys.argv[1]
def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").write(text)
chunk = "[" * 100 + "1" + "]" * 100
write(f"{w}/manifest/dbt_project.yml", "name: p\n")
write(f"{w}/manifest/models/m.yml", "semantic_models:\n  - name: m\n    model: ref('m')\n")
write(f"{w}/manifest/target/manifest.json",
      '{"nodes": {"model.p.m": {"resource_type": "model", "name": "m", "config": ['
      + ",".join([chunk] * 50000) + "]}}}")
write(f"{w}/js/deep.js", "cube(`deep`, { sql: `x`, meta: " + "[" * 6000 + "1" + "]" * 6000 + " });\n")
write(f"{w}/yaml/flow.yml", "cubes:\n  - name: flow\n    sql_table: t\n    meta: " + "[" * 40000 + "]" * 40000 + "\n")
write(f"{w}/loops/dbt_project.yml", "name: p\n")
write(f"{w}/loops/models/m.yml", "semantic_models:\n  - name: m\n    model: ref('m')\n")
os.symlink(".", f"{w}/loops/models/a")
os.symlink(".", f"{w}/loops/models/b")
write(f"{w}/big/dbt_project.yml", "name: p\n")
write(f"{w}/big/models/all.yml", "semantic_models:\n" + "".join(
    f"  - name: m{i}\n    model: ref('m{i}')\n    dimensions:\n      - name: d{i}\n        type: categorical\n"
    for i in range(10000)))
write(f"{w}/desc/dbt_project.yml", "name: p\n")
write(f"{w}/desc/models/m.yml", "semantic_models:\n  - name: m\n    model: ref('m')\n    description: "
      + "refunds " * 6_250_000 + "\n    dimensions:\n      - name: d\n        type: categorical\n")
EOF
echo
printf '| %-17s | %8s | %9s | %-40s |\n' "import" "wall s" "peak MiB" outcome
printf '|-------------------|----------|-----------|------------------------------------------|\n'
for scenario in "manifest 10 MB:dbt:manifest" "JS 6,000 deep:cube:js" "YAML 40k flow:cube:yaml" \
    "symlink loops:dbt:loops" "10k models/file:dbt:big"; do
    IFS=: read -r name format dir <<< "$scenario"
    /usr/bin/time -f "%e %M" -o "$work/time" timeout 60 "$bins/slayer-index" -q import "$format" \
        "$work/$dir" > "$work/out" 2> "$work/err"
    code=$?
    case $code in
        124) what="killed at 60 s" ;;
        0 | 1 | 2) what="exit $code $(grep -m1 -oE '(skipped|Error): .*' "$work/err" \
            | sed -E 's/^(skipped|Error): (.*: )?//' | cut -c1-32)" ;;
        *) what="exit $code (crashed)" ;;
    esac
    row "$name" "$what"
done
/usr/bin/time -f "%e %M" -o "$work/time" timeout 60 "$bins/slayer-index" --store "$work/d.db" -q \
    import dbt "$work/desc" --load > /dev/null 2> "$work/err"
row "50 MB describe" "exit $?"
/usr/bin/time -f "%e %M" -o "$work/time" timeout 60 "$bins/slayer-search" --store "$work/d.db" \
    --channels entities,text --question "refunds" > "$work/out" 2> "$work/err"
row "search after it" "exit $?, reply $(wc -c < "$work/out") bytes"
