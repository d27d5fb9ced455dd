#!/usr/bin/env python3
"""Checks that the docs stay true and small. Exits 1 naming every problem, 0 with one line.

    scripts/check-docs.py

What it checks (paths are relative to the repository root unless said otherwise):

1. Sizes: README.md and ARCHITECTURE.md are at most 15,000 bytes; every *.md under docs/
   (any depth) is at most 40,000 bytes.
2. Paths named in ARCHITECTURE.md exist. A path is
   - a word of an inline code span (`...`, outside fenced code blocks; a span is split on
     whitespace, so `scripts/bench_ab.sh BASE_REV` names scripts/bench_ab.sh) that contains
     a "/" or ends in .rs, .md, .sh, .py or .toml, relative to the repository root; or
   - the target of a Markdown link [text](target), relative to ARCHITECTURE.md's folder.
   Not paths, so not checked: words with a placeholder or pattern character (< > * { } $ ~ |
   @ [ ] ( ) and the ellipsis), URLs (anything with "://"), options (a leading "-"), and
   run-time paths (a leading "/", "./" or "../"). So write a module by its Rust path
   (`slayer_index::render`), a file by its full path (`crates/slayer-index/src/render.rs`), and
   a file of every crate with a placeholder (`crates/<crate>/src/cli.rs`).
3. Links in README.md and in every *.md under docs/: each relative Markdown link target exists,
   relative to the linking file's folder (URLs and "#anchor"-only links are skipped).
4. Doc paths and § citations in crates/, tests/, scripts/, docs/, examples/, README.md and
   ARCHITECTURE.md (text files; third-party fixtures under tests/fixtures/ folders are
   skipped):
   - every "docs/<path>.md" written out (not as part of a longer path such as
     "../../../docs/usage.md") names a file that exists, so a mention of a moved or deleted
     file (such as the one-file spec that docs/spec/ replaced) is caught;
   - a citation "docs/spec/<file>.md §N.M" (the path may be in backticks; the § list may
     follow on the next comment line, and may list several sections: "§2.4, §2.5",
     "§6.1 and §8.6", "§12.4–12.5", "§5–§7") names only sections that <file> holds as a
     heading ("## §N Title" or "### §N.M Title").
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FRONT_PAGE_LIMIT = 15_000
DOCS_LIMIT = 40_000

CITED_IN = ["crates", "tests", "scripts", "docs", "examples", "README.md", "ARCHITECTURE.md"]
TEXT_SUFFIXES = (".rs", ".md", ".sh", ".py", ".toml", ".sql", ".txt", ".yml", ".yaml", ".json")
SKIP_DIRS = {"target", ".git", "__pycache__", "node_modules"}

PATH_SUFFIXES = (".rs", ".md", ".sh", ".py", ".toml")
NOT_A_PATH = re.compile(r"[<>*{}$~|@\[\]()…]|://")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
DOC_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]*[\w-]\.md")
# A separator between the path and its § list: spaces, or a line break and a comment leader.
GAP = r"`?(?:[ \t]+|[ \t]*\n[ \t]*(?://[!/]?|#|--|\*)?[ \t]*)"
ITEM = r"§(\d+(?:\.\d+)*)"
MORE = r"(?:\s*,\s*|\s+and\s+|\s*[–-]\s*)§?(\d+(?:\.\d+)*)"
CITATION = re.compile(r"(?<![\w/.-])(docs/spec/[\w.-]+\.md)" + GAP + ITEM + r"((?:" + MORE + r")*)")
HEADING = re.compile(r"^#{1,6} §(\d+(?:\.\d+)*)\b", re.M)


def rel(path):
    return os.path.relpath(path, ROOT)


def text_files(entry):
    full = os.path.join(ROOT, entry)
    if os.path.isfile(full):
        yield full
        return
    for base, dirs, files in os.walk(full):
        parts = rel(base).split(os.sep)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and d != "fixtures")
        if "fixtures" in parts:
            continue
        for name in sorted(files):
            if name.endswith(TEXT_SUFFIXES):
                yield os.path.join(base, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def without_fences(text):
    """The text with fenced code blocks blanked (newlines kept, so line numbers hold)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def check_sizes(problems):
    for name in ("README.md", "ARCHITECTURE.md"):
        path = os.path.join(ROOT, name)
        if os.path.exists(path) and os.path.getsize(path) > FRONT_PAGE_LIMIT:
            problems.append(f"{name}: {os.path.getsize(path):,} bytes, over {FRONT_PAGE_LIMIT:,}")
    for base, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            if name.endswith(".md") and os.path.getsize(path) > DOCS_LIMIT:
                problems.append(
                    f"{rel(path)}: {os.path.getsize(path):,} bytes, over {DOCS_LIMIT:,}; "
                    "split it by topic"
                )


def link_targets(path, text):
    """(line, target) of each relative Markdown link, fenced code left out."""
    body = without_fences(text)
    for m in LINK.finditer(body):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        yield line_of(body, m.start()), target.split("#", 1)[0]


def check_links(path, problems):
    text = read(path)
    for line, target in link_targets(path, text):
        if target and not os.path.exists(os.path.join(os.path.dirname(path), target)):
            problems.append(f"{rel(path)}:{line}: link to {target}, which does not exist")


def check_architecture(problems):
    path = os.path.join(ROOT, "ARCHITECTURE.md")
    if not os.path.exists(path):
        problems.append("ARCHITECTURE.md is missing")
        return 0
    body = without_fences(read(path))
    named = 0
    for m in re.finditer(r"`([^`\n]+)`", body):
        for word in m.group(1).split():
            word = word.rstrip(".,;:")
            looks_like_path = "/" in word or word.endswith(PATH_SUFFIXES)
            if not looks_like_path or NOT_A_PATH.search(word):
                continue
            if word.startswith(("-", "/", "./", "../")):
                continue
            named += 1
            if not os.path.exists(os.path.join(ROOT, word)):
                problems.append(
                    f"ARCHITECTURE.md:{line_of(body, m.start())}: `{word}` does not exist"
                )
    return named


def sections_of(spec_file, cache={}):
    if spec_file not in cache:
        path = os.path.join(ROOT, spec_file)
        cache[spec_file] = set(HEADING.findall(read(path))) if os.path.isfile(path) else None
    return cache[spec_file]


def check_citations(problems):
    files = citations = 0
    for entry in CITED_IN:
        for path in text_files(entry):
            files += 1
            text = read(path)
            missing = set()
            for m in DOC_PATH.finditer(text):
                if not os.path.isfile(os.path.join(ROOT, m.group(0))):
                    missing.add((line_of(text, m.start()), m.group(0)))
            for line, doc in sorted(missing):
                hint = ""
                if doc.startswith("docs/spec") and not doc.startswith("docs/spec/"):
                    hint = " (the spec is docs/spec/<topic>.md, indexed by docs/spec/README.md)"
                problems.append(f"{rel(path)}:{line}: {doc} does not exist{hint}")
            for m in CITATION.finditer(text):
                spec_file = m.group(1)
                held = sections_of(spec_file)
                if held is None:
                    continue  # reported above as a missing file
                numbers = [m.group(2)] + re.findall(r"\d+(?:\.\d+)*", m.group(3))
                for n in numbers:
                    citations += 1
                    if n not in held:
                        problems.append(
                            f"{rel(path)}:{line_of(text, m.start())}: {spec_file} has no §{n}"
                        )
    return files, citations


def main():
    problems = []
    check_sizes(problems)
    named = check_architecture(problems)
    linking = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "ARCHITECTURE.md")]
    for base, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        dirs.sort()
        linking += [os.path.join(base, f) for f in sorted(files) if f.endswith(".md")]
    for path in linking:
        if os.path.exists(path):
            check_links(path, problems)
    files, citations = check_citations(problems)
    if problems:
        for p in problems:
            print(f"check-docs: {p}", file=sys.stderr)
        print(f"check-docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        f"check-docs: OK: sizes within limits, {named} paths in ARCHITECTURE.md exist, "
        f"links in {len(linking)} Markdown files resolve, {citations} § citations in "
        f"{files} files name existing sections"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
