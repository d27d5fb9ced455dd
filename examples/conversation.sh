#!/usr/bin/env bash
# Memories from a conversation (README, "Memories from conversations"): an agent saves what a
# call told it, each note with when it happened and the conversation it came from; then a
# current, a temporal and a multi-hop question. Runs on a fresh store in a temp folder with the
# release binaries (scripts/demo.sh builds them) and the local model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="${SLAYER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
export PATH="$bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SLAYER_STORE="$work/slayer.db"
unset SLAYER_FORMAT

slayer-index import-slayer "$root/examples/shop/slayer" | slayer-memory -q import > /dev/null
save() { slayer-memory save -q --session call-7 "$@" > /dev/null; }
save --event-time 2023-11 --entities shop.orders \
    --learning 'Ana: refunds are booked as separate refund rows, never as negative orders'
save --event-time 2024-03 --entities shop.orders \
    --learning 'Ana: since the March migration refunds are booked as negative orders'
save --event-time 2024-03 --entities shop --learning 'Ben: I took over the refunds dashboard last week.'
save --event-time 2024-03 --entities shop --learning 'Ana: Great. You sit with the finance team in Lisbon, right?'
save --event-time 2024-03 --entities shop --learning 'Ben: Yes, since I moved there in May.'

for question in 'How are refunds booked?' 'How were refunds booked in November 2023?' \
    'When did Ben take over the refunds dashboard?' 'Which city is the owner of the refunds dashboard in?'; do
    echo "\$ slayer-search --question '$question' --max-memories 3 --format text"
    slayer-search --question "$question" --max-memories 3 --max-entities 0 --max-example-queries 0 \
        --format text | sed -n '/^Memories/,/^$/p'
done
