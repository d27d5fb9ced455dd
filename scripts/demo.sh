#!/usr/bin/env bash
# The demo: build the release binaries and run the pipeline on the bundled shop warehouse.
# No server, no API key, no network. Output lands in target/demo/ (or $SLAYER_DEMO_DIR).
#
# SLAYER_BIN=<folder> runs installed binaries instead (a wheel's or the tarball's bin/):
# nothing is built or fetched by the script, so it needs only this file, examples/shop and
# tests/fixtures/paid-revenue.json (scripts/test-package.sh runs it that way).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ -n "${SLAYER_BIN:-}" ]; then
    bin=$(cd "$SLAYER_BIN" && pwd)
else
    # The prebuilt DuckDB slayer-profile links (once per machine; a no-op when present).
    scripts/fetch-duckdb.sh
    # --tests too, so features resolve as in `cargo test` and nothing is compiled twice.
    cargo build --release --locked --workspace --bins --tests
    # The local embedding model (once per machine; a no-op when present).
    scripts/fetch-model.sh
    bin="${CARGO_TARGET_DIR:-$root/target}/release"
fi
work="${SLAYER_DEMO_DIR:-$root/target/demo}"
rm -rf "$work"
mkdir -p "$work"
export SLAYER_STORE="$work/slayer.db"
export PATH="$bin:$PATH"
unset SLAYER_FORMAT

echo "== 1. what slayer-profile finds in the raw warehouse (CSV files read through DuckDB)"
slayer-profile examples/shop/data --datasource shop --tables orders,payments --format text

echo
echo "== 2. import the hand-written SLayer project examples/shop/slayer and its memories"
echo "   slayer-index import-slayer examples/shop/slayer | slayer-memory import"
slayer-index import-slayer examples/shop/slayer | slayer-memory import --format text

echo
echo "== 3. fill the hand-written models' sample values from the data, keeping their descriptions"
echo "   slayer-index export --datasource shop | slayer-profile examples/shop/data --models - | slayer-index load"
slayer-index export --datasource shop \
    | slayer-profile examples/shop/data --models - \
    | slayer-index load --format text

echo
echo "== 4. embed every doc with the local all-MiniLM-L6-v2 (offline, no key); a re-run embeds nothing"
echo "   slayer-embed refresh --all"
slayer-embed refresh --all --format text | awk '{print $1}' | sort | uniq -c
slayer-embed -q refresh --all --format text | awk '{print $1}' | sort | uniq -c

echo
echo "== 5. an agent saves what it learned; references resolve to canonical ids (and it is embedded)"
slayer-memory save --learning "Gift cards settle at most 25 dollars of an order; the rest goes on a credit card." \
    --entities "payment_method, sum(amount), orders.order_total"
slayer-memory save --id kb.paid --learning "Completed-order revenue" --query @tests/fixtures/paid-revenue.json
slayer-memory save --learning "this one names a column that does not exist" --entities "orders.discount" \
    || echo "   (refused, nothing saved)"
slayer-memory forget 3
slayer-memory list --entity shop.payments

echo
echo "== 6. search before the next query: named entities and a question with punctuation"
slayer-search --entity payments.payment_method --question "what's the split between gift cards and credit cards?" \
    --format text --max-entities 3
echo
slayer-search --question "net revenue without returned orders" --datasource shop --format text \
    --max-memories 2 --max-entities 2
echo
echo "   a question whose words appear nowhere: only the dense channel (meaning) can answer it"
slayer-search --question "how much money did shoppers hand over?" --format text --max-memories 2 \
    --max-example-queries 1 --max-entities 3

echo
echo "== 7. what the store and the full-text index hold"
slayer-index stats

echo
echo "== 8. the rendered docs of two columns and a memory, as search will return them"
slayer-index show shop.orders.status shop.orders.order_total memory:kb.tax --format text

echo
echo "== 9. the same pipeline again: nothing changed, so nothing is re-rendered or re-indexed"
changed=$(slayer-index export --datasource shop | slayer-profile -q examples/shop/data --models - | slayer-index -q load | wc -l)
echo "   $changed docs changed"
if slayer-index stats --check > /dev/null; then
    echo "   the index agrees with the store (stats --check exits 0)"
else
    echo "   the index lags the store" >&2
    exit 1
fi

echo
echo "== 10. drop a column: its doc and index entry go, the model doc is re-rendered without it, and"
echo "   memory tags on it are stripped"
slayer-index remove shop.payments.payment_method --format text

echo
echo "== 11. the same search as an agent's MCP client makes it: slayer-search mcp on stdin/stdout"
echo "   (initialize, then tools/call search with the Python original's arguments)"
{
    echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"0"}}}'
    echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"question":"net revenue without returns","max_results":4}}}'
} | slayer-search mcp | python3 -c '
import json, sys
for line in sys.stdin:
    reply = json.loads(line)
    if reply.get("id") == 2:
        print(reply["result"]["content"][0]["text"].rstrip())
'

echo
echo "== 12. a planned search (--plan auto): the question expanded offline by feedback, gated,"
echo "   retrieved in two passes, 'not' a soft negative, reranked by the local model; the plan"
slayer-search --plan auto --question "which payments were refunded, not gift cards?" --explain \
    --max-memories 2 --max-entities 4 | python3 -c '
import json, sys
r = json.load(sys.stdin)
p = r["plan"]
def terms(kind):
    return ", ".join("%s (%s)" % (t["text"], t["source"]) for t in p["plan"][kind]) or "-"
print("   sources:", ", ".join(p["sources"]))
print("   anchors:", terms("anchors"))
print("   synonyms:", terms("synonyms"))
print("   soft negatives:", terms("soft"))
for side in ("entities", "memories"):
    s = p[side]
    print("   %s: passA %s -> %s" % (side, s["passA"]["query"], s["counts"]))
print("   entities:", ", ".join(h["id"] for h in r["entities"]))
print("   memories:", ", ".join(h["id"] for h in r["memories"]))
'

echo
echo "Store: $SLAYER_STORE (inspect with: SLAYER_STORE=$SLAYER_STORE $bin/slayer-index stats)"
