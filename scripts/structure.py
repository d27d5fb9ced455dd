#!/usr/bin/env python3
"""Structure report of the workspace: the longest functions, the files over
~600 lines, and the module graph of one crate with its circles.

    scripts/structure.py                      # functions over 120 lines, long files
    scripts/structure.py --top 15             # the 15 longest functions
    scripts/structure.py --graph slayer-search  # module imports, circles
    scripts/structure.py --check              # CI: no circle, no function over 120 lines

Reads the sources as text (no compiler): a function is a `fn` item and its
brace-matched body, with strings, chars and comments skipped. Test modules
and files under tests/ count like any other code. A binary's main.rs is a
module of its own ("main"), and the modules it declares reach it as `crate::`.
"""
import argparse
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def rust_files():
    for base, dirs, files in os.walk(os.path.join(ROOT, "crates")):
        dirs[:] = [d for d in dirs if d not in ("target",)]
        for name in files:
            if name.endswith(".rs"):
                yield os.path.join(base, name)


def code_only(text):
    """The text with strings, chars and comments blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x..|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = open(path, encoding="utf-8").read()
    code = code_only(text)
    lines = code.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    found = []
    for idx, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        start = offsets[idx]
        depth, pos, opened = 0, start, False
        while pos < len(code):
            ch = code[pos]
            if ch == ";" and not opened and depth == 0:
                break  # a declaration without a body
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    break
            pos += 1
        if not opened:
            continue
        end_line = code.count("\n", 0, pos) + 1
        found.append((end_line - idx, m.group(1), idx + 1))
    return found, len(text.split("\n"))


def report(top, limit):
    fns, long_files = [], []
    for path in rust_files():
        found, nlines = functions(path)
        rel = os.path.relpath(path, ROOT)
        fns += [(length, f"{rel}:{line}", name) for length, name, line in found]
        if nlines > 600:
            long_files.append((nlines, rel))
    fns.sort(reverse=True)
    shown = fns[:top] if top else [f for f in fns if f[0] > limit]
    print(f"functions{' (top %d)' % top if top else ' over %d lines' % limit}: {len(shown)}")
    for length, where, name in shown:
        print(f"  {length:4d}  {name}  {where}")
    print(f"files over 600 lines: {len(long_files)}")
    for nlines, rel in sorted(long_files, reverse=True):
        print(f"  {nlines:5d}  {rel}")


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3]
    if rel == "main":
        # The binary's root is a module of its own: the library cannot see it, so an arrow
        # into it from the binary's modules is a circle through main.rs.
        return "main"
    parts = rel.split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts) or "crate"


def declared_modules(path):
    """The `mod name;` items of a crate root."""
    if not os.path.exists(path):
        return set()
    code = code_only(open(path, encoding="utf-8").read())
    code = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests", code)[0]
    return set(re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", code, re.M))


def graph(crate, show=True):
    """The circles of crates/CRATE/src (each a sorted list of modules); with `show`, the
    module graph and the circles printed."""
    src = os.path.join(ROOT, "crates", crate, "src")
    mods = {}
    for base, _, files in os.walk(src):
        for name in files:
            if name.endswith(".rs"):
                path = os.path.join(base, name)
                mods[module_of(src, path)] = path
    edges = defaultdict(set)
    # The modules main.rs declares form the binary's tree: there `crate::` is main.rs.
    bin_tree = declared_modules(os.path.join(src, "main.rs")) - declared_modules(os.path.join(src, "lib.rs"))

    def in_bin_tree(mod):
        return mod == "main" or mod.split("::")[0] in bin_tree

    for mod, path in mods.items():
        code = code_only(open(path, encoding="utf-8").read())
        # Test modules may reach anywhere; they are not part of the layering.
        code = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests", code)[0]
        here = mod.split("::") if mod not in ("crate", "main") else []
        if mod == "main":
            # main.rs names its own modules without `crate::`.
            for m in re.finditer(r"(?<![:\w])([a-z_][a-z0-9_]*)::", code):
                if m.group(1) in bin_tree and m.group(1) in mods:
                    edges[mod].add(m.group(1))
        for m in re.finditer(r"\b(crate|super)::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", code):
            kind, tail = m.group(1), m.group(2).split("::")
            if kind == "super":
                is_dir = os.path.basename(path) == "mod.rs"
                base_parts = here if is_dir else here[:-1]
                base_parts = base_parts[:-1] if is_dir else base_parts
                parts = base_parts + tail
            else:
                parts = tail
            target = None
            for k in range(len(parts), 0, -1):
                cand = "::".join(parts[:k])
                if cand in mods:
                    target = cand
                    break
            if target is None and kind == "crate" and in_bin_tree(mod):
                # An item of main.rs itself (`crate::join_the_pool`).
                target = "main"
            if target and target != mod and not mod.startswith(target + "::") and not target.startswith(mod + "::"):
                edges[mod].add(target)
    # main.rs roots its tree (its modules run only as it calls them): an arrow back into
    # main.rs from any of them is a circle.
    if "main" in mods:
        edges["main"].update(m for m in mods if m != "main" and in_bin_tree(m))
    if show:
        print(f"modules of {crate}: {len(mods)}, import arrows: {sum(len(v) for v in edges.values())}")
        for mod in sorted(edges):
            print(f"  {mod} -> {', '.join(sorted(edges[mod]))}")
    # Circles: strongly connected components with more than one module.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(mods):
        if v not in index:
            visit(v)
    if show:
        print(f"circles: {len(sccs)}")
        for comp in sccs:
            print("  " + " <-> ".join(comp))
    return sccs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=0, help="the N longest functions instead of those over --limit")
    ap.add_argument("--limit", type=int, default=120, help="list functions longer than this (default 120)")
    ap.add_argument("--graph", metavar="CRATE", help="print the module graph of crates/CRATE/src and its circles")
    ap.add_argument("--check", action="store_true", help="CI: exit 1 on any import circle or function over --limit lines")
    args = ap.parse_args()
    if args.graph:
        sys.exit(1 if graph(args.graph) else 0)
    if args.check:
        sys.exit(check(args.limit))
    report(args.top, args.limit)


def check(limit):
    """Every crate's circles and every function over `limit` lines; 1 if there is any."""
    problems = []
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        if os.path.isdir(os.path.join(ROOT, "crates", crate, "src")):
            problems += [f"{crate}: circle {' <-> '.join(c)}" for c in graph(crate, show=False)]
    for path in rust_files():
        for length, name, line in functions(path)[0]:
            if length > limit:
                problems.append(f"{os.path.relpath(path, ROOT)}:{line}: {name} is {length} lines (limit {limit})")
    for p in problems:
        print(f"structure: {p}")
    if problems:
        print(f"structure: {len(problems)} problems: break the circle (move what both sides need into a module of its own) or split the function")
        return 1
    print(f"structure: OK: no import circles, no function over {limit} lines")
    return 0


if __name__ == "__main__":
    main()
