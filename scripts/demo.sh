#!/usr/bin/env bash
# The demo: build the release binaries and run the pipeline on the bundled shop warehouse.
# No server, no API key, no network. Output lands in target/demo/ (or $SLAYER_DEMO_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cargo build --release --locked --bins
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work="${SLAYER_DEMO_DIR:-$root/target/demo}"
rm -rf "$work"
mkdir -p "$work"
export SLAYER_STORE="$work/slayer.db"
unset SLAYER_FORMAT

echo "== 1. import the SLayer project examples/shop/slayer into $SLAYER_STORE"
"$bin/slayer-index" import-slayer examples/shop/slayer > "$work/memories.jsonl"
echo "   $(wc -l < "$work/memories.jsonl") memory records written to $work/memories.jsonl (slayer-memory import stores them)"

echo
echo "== 2. what the store and the full-text index hold"
"$bin/slayer-index" stats

echo
echo "== 3. the rendered docs of one model and two of its columns"
"$bin/slayer-index" show shop.orders shop.orders.status shop.payments.amount --format text

echo
echo "== 4. re-import: nothing changed, so nothing is re-rendered or re-indexed"
"$bin/slayer-index" import-slayer examples/shop/slayer > /dev/null
if "$bin/slayer-index" stats --check > /dev/null; then
    echo "   the index agrees with the store (stats --check exits 0)"
else
    echo "   the index lags the store" >&2
    exit 1
fi

echo
echo "== 5. drop a column: its doc and index entry go, and the model doc is re-rendered without it"
"$bin/slayer-index" remove shop.payments.payment_method --format text

echo
echo "Store: $SLAYER_STORE (inspect with: SLAYER_STORE=$SLAYER_STORE $bin/slayer-index stats)"
