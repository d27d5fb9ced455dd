#!/usr/bin/env bash
# Retrieval quality on BEIR SciFact through the real binaries (see docs/quality/scifact.md).
#
#   scripts/eval-scifact.sh            the full set: 5,183 abstracts, 300 test queries
#   scripts/eval-scifact.sh --smoke    200 abstracts (holding the judged docs), 20 queries
#
# The corpus becomes memories (id = doc id, learning = title, a blank line, text), imported into
# a fresh store; `slayer-embed refresh --all` embeds them with the local model (cached: a rerun
# reuses the store and embeds nothing); `slayer-search --batch` answers every test query with
# --max-memories 100 once per channel set; the scores are printed beside the published ones.
# Data: $SCIFACT_DIR (default ../shared/data/beir-scifact). Work: $SLAYER_EVAL_DIR (default
# target/eval[-smoke]).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true
data="${SCIFACT_DIR:-$root/../shared/data/beir-scifact}"
if $smoke; then work="${SLAYER_EVAL_DIR:-$root/target/eval-smoke}"; else work="${SLAYER_EVAL_DIR:-$root/target/eval}"; fi
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
if [ -z "${SLAYER_BIN:-}" ]; then
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins --tests
fi
scripts/fetch-model.sh > /dev/null
mkdir -p "$work"
export SLAYER_STORE="$work/scifact.db"
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL
py="python3 scripts/eval_scifact.py"
qrels="$data/qrels/test.tsv"
limit=""
secs() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN{printf "%.1f", (e-s)/1e9}'; }

if [ ! -f "$SLAYER_STORE" ]; then
    s=$(date +%s%N)
    if $smoke; then
        $py smoke-docs "$data/corpus.jsonl" "$qrels" 200 20 > "$work/docs.txt"
        $py memories "$data/corpus.jsonl" --docs "$work/docs.txt" > "$work/memories.jsonl"
    else
        $py memories "$data/corpus.jsonl" > "$work/memories.jsonl"
    fi
    "$bin/slayer-memory" -q import --no-embed "$work/memories.jsonl" > /dev/null
    echo "import: $(wc -l < "$work/memories.jsonl") memories in $(secs "$s") s" | tee "$work/times.txt"
fi
s=$(date +%s%N)
"$bin/slayer-embed" -q refresh --all --format jsonl > "$work/embed.jsonl"
echo "embed: $(grep -c '"embedded"' "$work/embed.jsonl" || true) embedded, $(grep -c '"unchanged"' "$work/embed.jsonl" || true) unchanged in $(secs "$s") s" | tee -a "$work/times.txt"

$smoke && limit="--queries 20"
printf '\n| configuration | nDCG@10 | recall@100 | MRR@10 | search wall |\n|---|---|---|---|---|\n'
# all-rrf: the memory side fused by reciprocal rank (the original's fusion) instead of by score.
for config in text:text dense:dense all:entities,text,dense all-rrf:entities,text,dense; do
    name=${config%%:*}
    channels=${config#*:}
    tuning='{}'
    [ "$name" = all-rrf ] && tuning='{"memory_fusion": "rrf"}'
    # shellcheck disable=SC2086
    $py requests "$data/queries.jsonl" "$qrels" "$channels" --tuning "$tuning" $limit > "$work/requests-$name.jsonl"
    s=$(date +%s%N)
    "$bin/slayer-search" --batch "$work/requests-$name.jsonl" > "$work/responses-$name.jsonl"
    took=$(secs "$s")
    # shellcheck disable=SC2086
    read -r ndcg recall mrr < <($py score "$qrels" "$work/responses-$name.jsonl" $limit)
    printf '| %s | %s | %s | %s | %s s |\n' "$name ($channels)" "$ndcg" "$recall" "$mrr" "$took"
    echo "$name $ndcg $recall $mrr" >> "$work/scores.txt"
done
if ! $smoke; then
    cat <<'REF'
| published: BM25, BEIR paper | 0.665 | | | |
| published: BM25 + English stemmer and stopwords (bm25s, this copy) | 0.686 | 0.913 | | |
| published: all-MiniLM-L6-v2 dense (MTEB) | 0.645 | | | |
REF
fi
