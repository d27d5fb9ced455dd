#!/usr/bin/env bash
# Census of `slayer-index import` over public dbt, Cube and Ossie projects (issue 48): for each
# project, the objects counted in its source by scripts/import_census.py against what the
# importer's --report says, per kind: "source N, imported M, warned K, unexplained 0".
#
# A developer tool, not a CI test: the projects are not in this repository (most have no
# license that allows a copy) and the CI machine cannot fetch them. They were taken from public
# GitHub snapshots (the session's `fetch` tool, github:OWNER/REPO, which leaves a bare git
# directory); extract each at the commit below into $CENSUS_SRC/NAME, e.g.
#
#   git --git-dir=SNAPSHOT ls-tree -r HEAD -- SUBFOLDER   # then `git cat-file blob` each file
#   git --git-dir=SNAPSHOT archive COMMIT SUBFOLDER | tar -x -C "$CENSUS_SRC/NAME"
#
# (or `git clone https://github.com/OWNER/REPO && git -C REPO checkout COMMIT` where there is a
# network). A project whose folder is missing is skipped with a message.
#
#   scripts/import_census.sh --extract /work/.mirror   # fill $CENSUS_SRC from the snapshots
#                                       # (MIRROR/OWNER+REPO/repo, bare), skipping absent blobs
#   scripts/import_census.sh            # the table; exit 1 when any unexplained figure is not 0
#   scripts/import_census.sh --objects  # and the source objects behind each unexplained row
#
# Env: CENSUS_SRC (default /work/census/src), SLAYER_BIN (default the release binary under
# $CARGO_TARGET_DIR or target/). Needs python3 with PyYAML.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${CENSUS_SRC:-/work/census/src}
MF=metricflow_semantics/test_helpers/semantic_manifest_yamls
DSI=tests/fixtures/semantic_manifest_yamls
CW=static/cube-models

# NAME | OWNER/REPO | COMMIT | SUBFOLDER (extracted to $src/NAME/SUBFOLDER) | FORMAT | WHAT | LICENSE
projects="
jaffle-sl-template|dbt-labs/jaffle-sl-template|c54c8fb8bea86c0c4d3d5c588d55f8de9de57ade|.|dbt|dbt project, MetricFlow semantic_models/metrics/saved_queries|none
jaffle-shop|dbt-labs/jaffle-shop|7be2c5838dbdeca8e915d4e46db70e910753d7f6|.|dbt|dbt project, MetricFlow spec|none
jaffle-shop-fusion|splendentwriter/jaffle-shop-fusion|2e8ce446969136d6360901b88acb725dcca80916|.|dbt|dbt 1.12 latest spec (semantic_model: on models)|none
jaffle_shop_cube-dbt|cube-js/jaffle_shop_cube|c763d1f408143b5556e1efe158b13d7f00eaa3fe|dbt|dbt|dbt project beside a Cube model|none
mf-simple|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/simple_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-scd|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/scd_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-extended-date|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/extended_date_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-multi-hop|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/multi_hop_join_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-name-edge|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/name_edge_case_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-ambiguous|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/ambiguous_resolution_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-derived|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/derived_metrics_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-join-types|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/join_types_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-cyclic|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/cyclic_join_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
mf-non-sm|dbt-labs/metricflow|65b9d4244fb79c6ff431fa8ed49fac3f435ab7f3|$MF/non_sm_manifest|dbt-manifest|MetricFlow test manifest|Apache-2.0
dsi-simple|dbt-labs/dbt-semantic-interfaces|d02d64ed29b4d4ea8964efb41fa5eb5ac32e2036|$DSI/simple_semantic_manifest|dbt-manifest|DSI test manifest|Apache-2.0
dsi-measure-migrated|dbt-labs/dbt-semantic-interfaces|d02d64ed29b4d4ea8964efb41fa5eb5ac32e2036|$DSI/measure_migrated_manifest|dbt-manifest|DSI test manifest (metrics without measures)|Apache-2.0
cw-1-starter|cube-js/cube-workshop|4f13e411049d94468cc9a4e21e74cd6c9a8e8a2c|$CW/1-starter/model|cube|Cube YAML, extends|none
cw-2-data-modeling|cube-js/cube-workshop|4f13e411049d94468cc9a4e21e74cd6c9a8e8a2c|$CW/2-data-modeling/model|cube|Cube YAML, extends, a view|none
cw-3-access-control|cube-js/cube-workshop|4f13e411049d94468cc9a4e21e74cd6c9a8e8a2c|$CW/3-access-control/model|cube|Cube YAML, views, access policies|none
cw-4-caching|cube-js/cube-workshop|4f13e411049d94468cc9a4e21e74cd6c9a8e8a2c|$CW/4-caching/model|cube|Cube YAML, pre-aggregations|none
jaffle_shop_cube-cube|cube-js/jaffle_shop_cube|c763d1f408143b5556e1efe158b13d7f00eaa3fe|cube/model|cube|Cube YAML + .yml.jinja (cube_dbt)|none
lkml2cube|cube-js/lkml2cube|b59378f01939f28df7fb53c0a2c1ab1f60eda145|tests/samples/cubeml|cube|Cube YAML (converter output)|MIT
multitenancy-workshop|cube-js/multitenancy-workshop|29264bc0af5b02b2211b5fecd906e8bcff5be0ad|schema|cube|Cube JS, COMPILE_CONTEXT, spread|none
example-splitgraph|cube-js/example-splitgraph|7288e95ac1ed1e6943ef01fe8d23e6d9d76b1002|schema|cube|Cube JS|none
netflix|sereddos/dashboard-netflix-cube-js|77bd9d4cef719f7aee66f2152b3574571a8f1d06|schema|cube|Cube JS|none
cube-js-test|archiewood/cube-js-test|1453c42709b3a425bc86d87f808eab0567c0bce8|schema|cube|Cube JS|none
latest-cube-js-2|shaikwasef/latest-cube-js-2|a0a2bb5604113705b7c5bf8bcf6ad91c1a794017|schema|cube|Cube JS, 24 cubes, extends|none
cube-js-express-hardcoded|daniel-codefresh/cube-js-express|87f3988c2750baf1ced4188c6517e53c8bbbe2bc|hardcoded-schemas|cube|Cube JS|none
cube-js-express-dynamic|daniel-codefresh/cube-js-express|87f3988c2750baf1ced4188c6517e53c8bbbe2bc|schema|cube|Cube JS generated in a loop|none
ossie-databricks-A|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/databricks/tests/fixtures/fixtureA_ossie.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
ossie-databricks-B|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/databricks/tests/fixtures/fixtureB_ossie.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
ossie-databricks-tpcds|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/databricks/tests/fixtures/tpcds_ossie.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
ossie-omni-A|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/omni/tests/fixtures/fixtureA_osi.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
ossie-salesforce|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/salesforce/src/test/resources/examples/osiToSalesforce.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
ossie-gooddata-tpcds|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/gooddata/tests/fixtures/osi_tpcds.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
ossie-orionbelt-tpcds|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/orionbelt/tests/fixtures/tpcds_osi.yaml|ossie|OSI 0.1.1|Apache-2.0
ossie-gsf-sales|apache/ossie|88e0011148283302c9a04cd0287e00e0b9d87354|converters/gsf/tests/fixtures/sales.ossie.yaml|ossie|OSI 0.2.0.dev0|Apache-2.0
"

# Copy HEAD:SUB of a bare snapshot into DEST/SUB, blob by blob (a snapshot may lack its
# largest files; those are named and passed over).
extract() {
  local git=$1 sub=$2 dest=$3 line meta path mode type obj
  git --git-dir="$git" ls-tree -r -z HEAD -- "$sub" | while IFS= read -r -d '' line; do
    meta=${line%%$'\t'*}; path=${line#*$'\t'}
    read -r mode type obj <<< "$meta"
    [ "$type" = blob ] && [ "$mode" != 120000 ] || continue
    if git --git-dir="$git" cat-file -e "$obj" 2>/dev/null; then
      mkdir -p "$dest/$(dirname "$path")"
      git --git-dir="$git" cat-file blob "$obj" > "$dest/$path"
    else
      echo "# absent from the snapshot: $path" >&2
    fi
  done
}

if [ "${1:-}" = --extract ]; then
  mirror=${2:?--extract MIRROR_ROOT}
  while IFS='|' read -r name repo commit sub format what license; do
    [ -n "$name" ] || continue
    sub=$(eval echo "$sub")
    git="$mirror/${repo/\//+}/repo"
    if [ ! -d "$git" ]; then echo "# $name: no snapshot at $git" >&2; continue; fi
    head=$(git --git-dir="$git" rev-parse HEAD)
    [ "$head" = "$commit" ] || echo "# $name: the snapshot is at $head, the census lists $commit" >&2
    rm -rf "${src:?}/$name"; mkdir -p "$src/$name"
    extract "$git" "$sub" "$src/$name"
  done <<< "$projects"
  exit 0
fi

args=()
while IFS='|' read -r name repo commit sub format what license; do
  [ -n "$name" ] || continue
  sub=$(eval echo "$sub")
  path="$src/$name/$sub"
  if [ ! -e "$path" ]; then
    echo "# $name: $path is missing ($repo@${commit:0:12} $sub); skipped" >&2
    continue
  fi
  args+=(--project "$name" "$format" "$path")
done <<< "$projects"

if [ ${#args[@]} -eq 0 ]; then
  echo "no census project is present under $src" >&2
  exit 2
fi
exec python3 "$here/import_census.py" "$@" "${args[@]}"
