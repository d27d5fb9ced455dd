#!/usr/bin/env bash
# The nightly job for the demo shop: converge the store on its sources, then check it.
#
#   SLAYER_STORE=/var/lib/slayer/shop.db examples/ci/nightly.sh
#
# Every step converges, so a re-run (after a failure, or on a cron that fired twice) is safe and,
# with nothing changed upstream, writes nothing and embeds nothing. Two runs on one store
# serialize on its write lock (a second one waits up to 30 s, then exits 1 naming the store).
#
# Exit codes, as a CI step should read them:
#   0  the store matches the sources;
#   1  it ran, with warnings worth a look (a page links an entity that does not exist, an
#      importer mapped an object with a loss, `stats --check` found something stale);
#   2  refused, nothing written: bad input, or a sync that would remove more than half of a
#      datasource's models or of the knowledge base (an empty or broken upstream). Look at the
#      upstream before re-running with --allow-shrink.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
status=0
step() { # runs a pipeline step; keeps the worst exit code, stops on a refusal
    "$@"
    local code=$?
    if [ "$code" -ge 2 ]; then
        echo "nightly: '$*' refused (exit $code); nothing after it ran" >&2
        exit "$code"
    fi
    [ "$code" -gt "$status" ] && status=$code
    return 0
}
load_catalog() {
    # The semantic layer as catalog records (a dbt, Cube or Ossie project works the same way:
    # `slayer-index import dbt path/to/project`), its sample values from the warehouse, then
    # the store converged on it, and what changed embedded.
    slayer-index import slayer examples/shop/slayer \
        | slayer-profile examples/shop/data --models - \
        | slayer-index load --sync \
        | slayer-embed refresh
}
step load_catalog
# The knowledge base: pages added, changed and deleted since the last run (kb.* memories).
step slayer-memory ingest examples/kb
# Whatever the steps above could not embed (a model update, an interrupted run) is caught up.
step slayer-embed refresh --all
step slayer-index stats --check
exit "$status"
