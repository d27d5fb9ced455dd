#!/usr/bin/env python3
"""Fails when a crate declares a dependency that none of its sources names, or when the
workspace declares one that no crate uses.

The same test as cargo-machete (a dependency is used when a source file says `<name>::`,
`use <name>` or `extern crate <name>`), without a 5-minute `cargo install` on every fresh CI
machine. A false positive goes in the crate's `[package.metadata.cargo-machete] ignored` list
(the key cargo-machete reads too), with the reason beside it.

Run from anywhere: scripts/check-deps.py
"""

import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SECTIONS = ("dependencies", "dev-dependencies", "build-dependencies")


def sources(crate: pathlib.Path) -> str:
    """Every Rust source of a crate, plus the files its tests include with #[path]."""
    texts = []
    for path in crate.rglob("*.rs"):
        text = path.read_text(encoding="utf-8")
        texts.append(text)
        for included in re.findall(r'#\[path\s*=\s*"([^"]+)"\]', text):
            target = (path.parent / included).resolve()
            for file in [target, *sorted(target.parent.glob("*.rs"))]:
                if file.is_file():
                    texts.append(file.read_text(encoding="utf-8"))
    return "\n".join(texts)


def used(name: str, text: str) -> bool:
    ident = re.escape(name.replace("-", "_"))
    return re.search(rf"\b{ident}::|\buse\s+{ident}\b|\bextern\s+crate\s+{ident}\b", text) is not None


def main() -> int:
    problems = []
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    declared = set(workspace.get("workspace", {}).get("dependencies", {}))
    taken = set()
    for manifest in sorted(ROOT.glob("crates/*/Cargo.toml")):
        crate = manifest.parent
        spec = tomllib.loads(manifest.read_text(encoding="utf-8"))
        ignored = set(
            spec.get("package", {}).get("metadata", {}).get("cargo-machete", {}).get("ignored", [])
        )
        text = sources(crate)
        for section in SECTIONS:
            for name, value in spec.get(section, {}).items():
                if isinstance(value, dict) and value.get("workspace"):
                    taken.add(name)
                package = value.get("package", name) if isinstance(value, dict) else name
                if name in ignored or used(name, text) or used(package, text):
                    continue
                problems.append(f"{manifest.relative_to(ROOT)}: [{section}] {name} is not used")
    for name in sorted(declared - taken):
        problems.append(f"Cargo.toml: [workspace.dependencies] {name} is used by no crate")
    for line in problems:
        print(f"check-deps: {line}; remove it", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
