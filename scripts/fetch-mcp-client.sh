#!/usr/bin/env bash
# Installs the official MCP Python SDK (`mcp` on PyPI) into its own virtual environment,
# $XDG_CACHE_HOME/slayer/mcp-client (default ~/.cache/slayer/mcp-client), for the test that
# drives `slayer-search mcp` through a real client. Nothing is installed into any other Python.
#
#   scripts/fetch-mcp-client.sh       # no-op when the environment already has the SDK
set -euo pipefail
version="2.3.0"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/slayer/mcp-client"
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$version')" 2>/dev/null; then
    echo "fetch-mcp-client: $dir has mcp $version"
    exit 0
fi
if ! python3 -c "import ensurepip" >/dev/null 2>&1; then
    echo "fetch-mcp-client: python3 with venv is needed (apt-get install python3-venv)" >&2
    exit 1
fi
rm -rf "$dir.partial"
mkdir -p "$(dirname "$dir")"
python3 -m venv "$dir.partial"
"$dir.partial/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$version"
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "fetch-mcp-client: installed mcp $version into $dir"
