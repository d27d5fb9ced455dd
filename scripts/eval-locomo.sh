#!/usr/bin/env bash
# Recall over long conversations on LoCoMo through the real binaries (docs/quality/locomo.md).
#
#   scripts/eval-locomo.sh            ten conversations (5,882 turns), 1,982 questions
#   scripts/eval-locomo.sh --smoke    the first conversation only
#
# Each dialogue turn becomes a memory (with its session's date as event time, and its session),
# imported into one store per conversation; `slayer-embed refresh --all` embeds them with the
# local model (a rerun reuses the stores and embeds nothing); `slayer-search --batch` answers
# each conversation's questions in its store, once per channel set; hit@1, hit@3, recall@5,
# recall@10 and nDCG@10 of the evidence turns are printed by question type.
# Source: $LOCOMO_ZIP (default ../shared/data/locomo/locomo10.zip, else
# $SLAYER_EVAL_DIR/locomo10.zip): data/locomo10.zip of snap-research/locomo at commit e76cdff,
# checked against its sha256 before use. Work: $SLAYER_EVAL_DIR (default target/eval-locomo).
# LOCOMO_PLAIN=1 leaves the event times and sessions out of the records (a build before them);
# LOCOMO_CONVERSATIONS="26 30" searches only those conversations (the dev and held-out halves of
# docs/quality/locomo.md); LOCOMO_CONFIGS="all" only those channel sets (text, dense, all);
# LOCOMO_TUNING='{"time_weight": 0}' sends a tuning with every request.
# LOCOMO_CEILING=1 adds the ceiling of re-ranking (the first 50 memories, all channels).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true
work="${SLAYER_EVAL_DIR:-$root/target/eval-locomo}"
src="${LOCOMO_ZIP:-}"
if [ -z "$src" ]; then
    for candidate in "$root/../shared/data/locomo/locomo10.zip" "$work/locomo10.zip"; do
        [ -f "$candidate" ] && src="$candidate" && break
    done
fi
if [ -z "$src" ] || [ ! -f "$src" ]; then
    cat >&2 <<'HOW'
eval-locomo: no LoCoMo source. It is data/locomo10.zip of https://github.com/snap-research/locomo
at commit e76cdff4a04fce19090596d49862fe87a5c15aaa (sha256 5c342973…2906fb5):
    git clone https://github.com/snap-research/locomo && git -C locomo checkout e76cdff
    LOCOMO_ZIP=$PWD/locomo/data/locomo10.zip scripts/eval-locomo.sh
HOW
    exit 2
fi
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
if [ -z "${SLAYER_BIN:-}" ]; then
    scripts/fetch-duckdb.sh > /dev/null
    cargo build --release --locked -q --workspace --bins
fi
scripts/fetch-model.sh > /dev/null
mkdir -p "$work"
unset SLAYER_FORMAT SLAYER_EMBEDDING_MODEL SLAYER_STORE
py="python3 scripts/eval_locomo.py"
plain=""
[ "${LOCOMO_PLAIN:-}" = 1 ] && plain="--plain"
tuning='{}'
[ -n "${LOCOMO_TUNING:-}" ] && tuning=$LOCOMO_TUNING
secs() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN{printf "%.1f", (e-s)/1e9}'; }

$py unpack "$src" "$work/data"
convs=$($py conversations "$work/data")
$smoke && convs=$(echo "$convs" | head -n 1)
[ -n "${LOCOMO_CONVERSATIONS:-}" ] && convs="$LOCOMO_CONVERSATIONS"
configs=""
for config in text:text dense:dense all:entities,text,dense; do
    case " ${LOCOMO_CONFIGS:-text dense all} " in *" ${config%%:*} "*) configs="$configs $config" ;; esac
done

s=$(date +%s%N)
for conv in $convs; do
    store="$work/$conv.db"
    if [ ! -f "$store" ]; then
        # shellcheck disable=SC2086
        $py memories "$work/data" "$conv" $plain > "$work/memories-$conv.jsonl"
        SLAYER_STORE="$store" "$bin/slayer-memory" -q import --no-embed "$work/memories-$conv.jsonl" > /dev/null
    fi
    SLAYER_STORE="$store" "$bin/slayer-embed" -q refresh --all --format jsonl > "$work/embed-$conv.jsonl"
done
echo "import + embed: $(for c in $convs; do cat "$work/memories-$c.jsonl"; done | wc -l) memories in $(secs "$s") s"

printf '\n| configuration | type | questions | hit@1 | hit@3 | recall@5 | recall@10 | nDCG@10 |\n|---|---|---|---|---|---|---|---|\n'
for config in $configs; do
    name=${config%%:*}
    channels=${config#*:}
    results="$work/results-$name.tsv"
    : > "$results"
    s=$(date +%s%N)
    for conv in $convs; do
        # shellcheck disable=SC2086
        $py requests "$work/data" "$conv" "$channels" --tuning "$tuning" $plain \
            > "$work/requests-$name-$conv.jsonl"
        SLAYER_STORE="$work/$conv.db" "$bin/slayer-search" --batch "$work/requests-$name-$conv.jsonl" \
            | sed "s/^/$conv\t/" >> "$results"
    done
    took=$(secs "$s")
    while IFS=$'\t' read -r type n h1 h3 r5 r10 ndcg; do
        printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name ($channels)" "$type" "$n" "$h1" "$h3" "$r5" "$r10" "$ndcg"
    done < <($py score "$work/data" "$results")
    echo "search wall ($name): $took s" >&2
done

# LOCOMO_CEILING=1: what a perfect re-ranker of the first 20, 30 or 50 memories (all channels)
# could give at recall@10 (docs/quality/locomo.md, "The ceiling of re-ranking").
if [ "${LOCOMO_CEILING:-}" = 1 ]; then
    deep="$work/results-all-50.tsv"
    : > "$deep"
    for conv in $convs; do
        # shellcheck disable=SC2086
        $py requests "$work/data" "$conv" entities,text,dense --tuning "$tuning" $plain \
            --max-memories 50 > "$work/requests-all-50-$conv.jsonl"
        SLAYER_STORE="$work/$conv.db" "$bin/slayer-search" --batch "$work/requests-all-50-$conv.jsonl" \
            | sed "s/^/$conv\t/" >> "$deep"
    done
    printf '\n| type | questions | recall@10 | best from the first 20 | from 30 | from 50 |\n|---|---|---|---|---|---|\n'
    $py ceiling "$work/data" "$deep" | tail -n +2 | while IFS=$'\t' read -r type n k10 k20 k30 k50; do
        printf '| %s | %s | %s | %s | %s | %s |\n' "$type" "$n" "$k10" "$k20" "$k30" "$k50"
    done
fi
