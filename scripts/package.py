#!/usr/bin/env python3
"""The parts of scripts/package.sh that are easier in Python (stdlib only).

    package.py wheel STAGE VERSION DIST
        Writes DIST/slayer-VERSION-py3-none-manylinux_2_28_x86_64.whl from the staged folder
        STAGE (bin/, lib/slayer/, licenses/, README.md). The binaries go in the wheel's
        `scripts` (pip and uv put them on the environment's PATH, as ruff's and uv's wheels
        do), the libraries in its `data` under lib/slayer (the same prefix: bin/../lib/slayer,
        the binaries' run path), the licenses in the .dist-info (PEP 639).
    package.py crate-licenses BIN_CRATE... < cargo-metadata.json > THIRD-PARTY-LICENSES.txt
        The license of every crate compiled into the named binary crates (normal dependencies,
        not build scripts, proc-macros or dev-dependencies), with the license texts the crates
        ship, each distinct text once.
"""

import base64
import hashlib
import io
import json
import os
import re
import sys
import zipfile

NAME = "slayer"
TAG = "py3-none-manylinux_2_28_x86_64"
SUMMARY = (
    "Fast, offline search over a data warehouse's semantic layer and the notes agents leave "
    "about it: five native binaries (slayer-profile, slayer-index, slayer-embed, "
    "slayer-memory, slayer-search)"
)
LICENSE_NAME = re.compile(r"^(licen[cs]e|copying|notice|copyright|unlicense|authors)", re.I)


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def wheel(stage, version, dist):
    data_dir = f"{NAME}-{version}.data"
    info_dir = f"{NAME}-{version}.dist-info"
    entries = []  # (archive name, bytes, executable)
    for name in sorted(os.listdir(os.path.join(stage, "bin"))):
        with open(os.path.join(stage, "bin", name), "rb") as f:
            entries.append((f"{data_dir}/scripts/{name}", f.read(), True))
    for name in sorted(os.listdir(os.path.join(stage, "lib", "slayer"))):
        with open(os.path.join(stage, "lib", "slayer", name), "rb") as f:
            entries.append((f"{data_dir}/data/lib/slayer/{name}", f.read(), False))
    licenses = sorted(os.listdir(os.path.join(stage, "licenses")))
    for name in licenses:
        with open(os.path.join(stage, "licenses", name), "rb") as f:
            entries.append((f"{info_dir}/licenses/{name}", f.read(), False))
    with open(os.path.join(stage, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    metadata = "".join(
        [
            "Metadata-Version: 2.4\n",
            f"Name: {NAME}\n",
            f"Version: {version}\n",
            f"Summary: {SUMMARY}\n",
            "License-Expression: MIT OR Apache-2.0\n",
            *(f"License-File: {name}\n" for name in licenses),
            "Classifier: Environment :: Console\n",
            "Classifier: Operating System :: POSIX :: Linux\n",
            "Classifier: Programming Language :: Rust\n",
            "Description-Content-Type: text/markdown\n",
            "\n",
            readme,
        ]
    )
    entries.append((f"{info_dir}/METADATA", metadata.encode(), False))
    wheel_file = (
        "Wheel-Version: 1.0\n"
        "Generator: slayer scripts/package.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {TAG}\n"
    )
    entries.append((f"{info_dir}/WHEEL", wheel_file.encode(), False))
    record = io.StringIO()
    for name, data, _ in entries:
        record.write(f"{name},{record_hash(data)},{len(data)}\n")
    record.write(f"{info_dir}/RECORD,,\n")
    entries.append((f"{info_dir}/RECORD", record.getvalue().encode(), False))

    path = os.path.join(dist, f"{NAME}-{version}-{TAG}.whl")
    partial = path + ".partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data, executable in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
            archive.writestr(info, data)
    os.replace(partial, path)
    print(path)


def crate_licenses(bin_crates):
    metadata = json.load(sys.stdin)
    packages = {p["id"]: p for p in metadata["packages"]}
    members = set(metadata["workspace_members"])
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}

    def is_proc_macro(package):
        return any("proc-macro" in t["kind"] for t in package["targets"])

    roots = [pid for pid in members if packages[pid]["name"] in bin_crates]
    if len(roots) != len(bin_crates):
        sys.exit(f"package: the workspace lacks some of {bin_crates}")
    seen, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            normal = any(k["kind"] is None for k in dep["dep_kinds"])
            if normal and not is_proc_macro(packages[dep["pkg"]]):
                stack.append(dep["pkg"])
    bundled = sorted(
        (packages[pid] for pid in seen if pid not in members),
        key=lambda p: (p["name"], p["version"]),
    )
    out = sys.stdout
    out.write(
        "The crates compiled into slayer's binaries, with their licenses (from Cargo.lock's\n"
        f"resolution for x86_64-unknown-linux-gnu): {len(bundled)} crates. Each license text\n"
        "the crates ship is given once, where it first appears; later crates name it.\n"
        "The binaries are linked by zig (compiler-rt: Apache-2.0 WITH LLVM-exception) against\n"
        "glibc (LGPL-2.1-or-later; its start files carry the linking exception).\n\n"
    )
    texts = {}
    for package in bundled:
        folder = os.path.dirname(package["manifest_path"])
        label = f"{package['name']} {package['version']}"
        out.write("=" * 78 + "\n")
        out.write(f"{label}: {package.get('license') or 'see its license file'}\n")
        if package.get("repository"):
            out.write(f"  {package['repository']}\n")
        files = sorted(
            f
            for f in os.listdir(folder)
            if LICENSE_NAME.match(f) and os.path.isfile(os.path.join(folder, f))
        )
        if package.get("license_file"):
            named = os.path.normpath(os.path.join(folder, package["license_file"]))
            if os.path.isfile(named) and os.path.basename(named) not in files:
                files.append(os.path.relpath(named, folder))
        for name in files:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                text = f.read().strip() + "\n"
            key = hashlib.sha256(re.sub(r"\s+", " ", text).encode()).hexdigest()
            if key in texts:
                out.write(f"\n{name}: the same text as {texts[key]}\n")
            else:
                texts[key] = f"{label}'s {name}"
                out.write(f"\n{name}:\n\n{text}")
        out.write("\n")


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "wheel":
        wheel(*args)
    elif command == "crate-licenses":
        crate_licenses(args)
    else:
        sys.exit(f"package.py: unknown command {command}")


if __name__ == "__main__":
    main()
