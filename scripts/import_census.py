#!/usr/bin/env python3
"""Census of `slayer-index import`: count a project's objects in the SOURCE, independently of the
importer, and compare them with what the importer's `--report` says it read.

    scripts/import_census.py [--bin PATH] [--objects] FORMAT:PATH [FORMAT:PATH ...]
    scripts/import_census.py --project NAME FORMAT PATH [--project ...]

FORMAT is dbt, cube or ossie, or dbt-manifest: a bare folder of MetricFlow YAML files in
MetricFlow's own fixture layout (one `semantic_model:` / `metric:` / `saved_query:` per YAML
document, as dbt-semantic-interfaces and metricflow keep their test manifests), which the
census rewrites into a throwaway dbt project (`dbt_project.yml` naming the folder; each file's
documents gathered under `semantic_models:` / `metrics:` / `saved_queries:` in `models/`)
before counting and importing it (lines in issues are then lines of the rewritten files).

For every project and kind it prints

    source N      objects of that kind written in the project (counted here, see below)
    inh           of those, members a Cube cube/view inherits through `extends` (the importer
                  flattens `extends`, so an inherited member is read once per child)
    imported M    mapped + lossy, from the importer's report
    skipped S     skipped, from the report
    warned K      issues whose object is of that kind (an object can have several)
    unexplained   N - M - S: anything but 0 is a silent loss (N > M + S) or an object the
                  importer counts that the source does not hold (N < M + S)

Kinds the importer does not tally one by one (a saved query, a pre-aggregation, an access
policy, a Cube Jinja template file) are counted too: they are "lumped" (unexplained 0) when an
issue's message names them (a Jinja template file: an issue in that file), else unexplained. The report's annotation kinds (`description`,
`javascript`, `document`, `file`: an issue about a text or a file, not an object) are listed under the
project, not in the table. A project the importer refuses whole (exit 2) is listed with its
error. With --objects, every unexplained row lists the source objects of that kind whose name
appears neither in the importer's output records nor in its issues (file:line, name).

Exit 0 when every unexplained figure is 0, 1 otherwise, 2 on a usage error.

How the source is counted (no code of the importer is shared):
  dbt     the YAML files under `model-paths` (dbt_project.yml; default models/), skipping
          target/, dbt_packages/, node_modules/. Top-level `semantic_models:` items are
          semantic_model, their `entities` / `dimensions` / `measures` items entity /
          dimension / measure (a measure with `create_metric: true` is also a
          created_metric); top-level `metrics:` items metric; `saved_queries:` items
          saved_query. In the latest spec a `models:` item whose `semantic_model:` is true or
          a mapping not `enabled: false` is a semantic_model; its columns' `entity:` and
          `dimension:` and `derived_semantics:` entities / dimensions are entity / dimension;
          its `metrics:` items are metric, and a simple one (no type or `type: simple`) with
          `agg` is also a measure (MetricFlow compiles it to one). A `models:` item with
          `metrics:` but no enabled semantic model still counts its metrics.
  cube    .yml/.yaml files with a top-level `cubes:` / `views:` (lists): cube / view, and each
          cube's `dimensions`, `measures`, `segments`, `joins` (dimension, measure, segment,
          join), `pre_aggregations`, `hierarchies`, `access_policy` (pre_aggregation,
          hierarchy, access_policy); a view's own `dimensions` / `measures` and its
          `access_policy`. `.yml.jinja` / `.yaml.jinja` files count as jinja_model_file (Cube
          renders them; their members cannot be counted without rendering).
          .js files (not .sql.js) are read by a small scanner: a tokenizer that skips comments
          and reads '…', "…" and `…${…}…` strings as single tokens, then every `cube(` /
          `view(` not preceded by `.` whose second argument is an object literal `{…}` is a
          cube / view, and inside that object, at its own depth, the keys `dimensions`,
          `measures`, `segments`, `joins`, `preAggregations`, `hierarchies` (objects: every
          key at their depth, after `{` or `,`, is one member; `...spread` entries are
          counted as js_spread, and a member map that is not an object literal, such as
          `Object.assign(…)`, as js_dynamic) and `accessPolicy` (an array: one per element). `extends:`
          (an identifier or `${Name}`) is read for the inheritance count. A call inside a
          loop or function is counted once, as written.
  ossie   .yaml/.yml/.json files with a top-level `semantic_model:` list: semantic_model, and
          each one's `datasets` (dataset; their `fields`: field), `relationships`
          (relationship) and `metrics` (metric).

Needs PyYAML (python3 -m pip install pyyaml). The binary is $SLAYER_BIN, else --bin, else
$CARGO_TARGET_DIR/release/slayer-index, else target/release/slayer-index.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.exit("import_census.py needs PyYAML: python3 -m pip install pyyaml")


# --------------------------------------------------------------------------------------------
# YAML with line numbers


class LineLoader(yaml.SafeLoader):
    """A safe loader that records each mapping's 1-based line under the key '__line__'."""


def _mapping_with_line(loader, node, deep=False):
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def load_yaml(path):
    """The first document of `path` with lines, or None when it is not YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        docs = list(yaml.load_all(text, Loader=LineLoader))
    except yaml.YAMLError:
        if "{{" not in text and "{%" not in text and "{#" not in text:
            return None
        # Jinja (Cube renders it before reading the YAML): comments and statements go, each
        # expression becomes a quoted placeholder; lines are kept.
        keep_lines = lambda m: "\n" * m.group(0).count("\n")
        bare = re.sub(r"\{#.*?#\}", keep_lines, text, flags=re.S)
        bare = re.sub(r"\{%.*?%\}", keep_lines, bare, flags=re.S)
        bare = re.sub(r"\{\{.*?\}\}", lambda m: "JINJA" + keep_lines(m), bare, flags=re.S)
        bare = re.sub(r"(:\s*)JINJA", r"\1'JINJA'", bare)
        try:
            docs = list(yaml.load_all(bare, Loader=LineLoader))
        except yaml.YAMLError:
            return None
    return docs[0] if docs else None


def items(value, key):
    """The list under `key` (a single mapping counts as a list of one)."""
    if not isinstance(value, dict):
        return []
    v = value.get(key)
    if isinstance(v, list):
        return v
    if isinstance(v, dict):
        return [v]
    return []


def name_of(v):
    if isinstance(v, dict):
        n = v.get("name")
        return str(n) if n is not None else None
    if isinstance(v, str):
        return v
    return None


def line_of(v, default=0):
    return v.get("__line__", default) if isinstance(v, dict) else default


class Census:
    """Source objects per kind: kind -> list of (file, line, name, inherited)."""

    def __init__(self):
        self.objects = defaultdict(list)
        self.notes = []

    def add(self, kind, file, line, name, inherited=False):
        self.objects[kind].append((str(file), line, name, inherited))


def files_under(root, suffixes, skip_dirs):
    out = []
    if root.is_file():
        return [root]
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs and not d.startswith("."))
        for f in sorted(filenames):
            if any(f.endswith(s) for s in suffixes):
                out.append(Path(dirpath) / f)
    return out


# --------------------------------------------------------------------------------------------
# dbt


def dbt_census(project):
    c = Census()
    proj = load_yaml(project / "dbt_project.yml") or {}
    paths = proj.get("model-paths") or ["models"]
    if isinstance(paths, str):
        paths = [paths]
    for p in paths:
        for f in files_under(project / p, (".yml", ".yaml"), {"target", "dbt_packages", "node_modules"}):
            doc = load_yaml(f)
            if not isinstance(doc, dict):
                continue
            rel = f.relative_to(project)
            for sm in items(doc, "semantic_models"):
                c.add("semantic_model", rel, line_of(sm), name_of(sm))
                for kind, key in (("entity", "entities"), ("dimension", "dimensions"), ("measure", "measures")):
                    for x in items(sm, key):
                        c.add(kind, rel, line_of(x), f"{name_of(sm)}.{name_of(x)}")
                        if kind == "measure" and x.get("create_metric") is True:
                            c.add("created_metric", rel, line_of(x), name_of(x))
            for m in items(doc, "metrics"):
                c.add("metric", rel, line_of(m), name_of(m))
            for q in items(doc, "saved_queries"):
                c.add("saved_query", rel, line_of(q), name_of(q))
            models = doc.get("models")
            for model in models if isinstance(models, list) else []:
                if not isinstance(model, dict):
                    continue
                sem = model.get("semantic_model")
                enabled = sem is True or (isinstance(sem, dict) and sem.get("enabled", True) is not False)
                sm_name = (sem.get("name") if isinstance(sem, dict) else None) or name_of(model)
                if enabled:
                    c.add("semantic_model", rel, line_of(model), sm_name)
                    for col in items(model, "columns"):
                        if col.get("entity") is not None:
                            e = col["entity"]
                            c.add("entity", rel, line_of(col), f"{sm_name}.{(e.get('name') if isinstance(e, dict) else None) or name_of(col)}")
                        if col.get("dimension") is not None:
                            d = col["dimension"]
                            c.add("dimension", rel, line_of(col), f"{sm_name}.{(d.get('name') if isinstance(d, dict) else None) or name_of(col)}")
                    ds = model.get("derived_semantics")
                    for e in items(ds, "entities"):
                        c.add("entity", rel, line_of(e), f"{sm_name}.{name_of(e)}")
                    for d in items(ds, "dimensions"):
                        c.add("dimension", rel, line_of(d), f"{sm_name}.{name_of(d)}")
                for m in items(model, "metrics"):
                    c.add("metric", rel, line_of(m), name_of(m))
                    kind = str(m.get("type") or "simple").lower()
                    if enabled and kind == "simple" and "agg" in m:
                        c.add("measure", rel, line_of(m), f"{sm_name}.{name_of(m)}")
                if not enabled and items(model, "metrics"):
                    c.notes.append(f"{rel}:{line_of(model)}: model '{name_of(model)}' lists metrics but has no enabled semantic_model")
    return c


def wrap_manifest(folder, tmp):
    """A throwaway dbt project around a bare folder of MetricFlow YAML files: MetricFlow's own
    fixture files hold one object per YAML document (`semantic_model:`, `metric:`,
    `saved_query:`, `project_configuration:`, documents split by `---`); each file becomes one
    dbt schema file listing them under `semantic_models:` / `metrics:` / `saved_queries:`."""
    root = Path(tmp) / folder.name
    models = root / "models"
    plural = {"semantic_model": "semantic_models", "metric": "metrics", "saved_query": "saved_queries"}
    for f in files_under(folder, (".yml", ".yaml"), set()):
        try:
            docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
        except yaml.YAMLError:
            docs = []
        out = defaultdict(list)
        for d in docs:
            for key, val in (d or {}).items() if isinstance(d, dict) else []:
                if key in plural:
                    out[plural[key]].append(val)
                elif key in plural.values():
                    out[key].extend(val if isinstance(val, list) else [val])
        if out:
            dest = models / f.relative_to(folder)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(yaml.safe_dump(dict(out), sort_keys=False))
    models.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"\W", "_", folder.name)
    (root / "dbt_project.yml").write_text(f"name: {name}\nconfig-version: 2\nmodel-paths: [models]\n")
    return root


# --------------------------------------------------------------------------------------------
# Cube YAML

CUBE_MEMBERS = {
    "dimensions": "dimension",
    "measures": "measure",
    "segments": "segment",
    "joins": "join",
    "pre_aggregations": "pre_aggregation",
    "hierarchies": "hierarchy",
    "access_policy": "access_policy",
}
VIEW_MEMBERS = {"dimensions": "dimension", "measures": "measure", "access_policy": "access_policy"}
NAMED = {"dimension", "measure", "segment", "join", "pre_aggregation", "hierarchy"}


def cube_yaml(doc, rel, defs):
    for key, kind in (("cubes", "cube"), ("views", "view")):
        for d in items(doc, key):
            if not isinstance(d, dict):
                continue
            members = {}
            for mk, mkind in (CUBE_MEMBERS if kind == "cube" else VIEW_MEMBERS).items():
                members[mkind] = [(line_of(x, line_of(d)), name_of(x) if mkind in NAMED else f"#{i}") for i, x in enumerate(items(d, mk))]
            ext = d.get("extends")
            defs.append({"kind": kind, "name": name_of(d), "file": rel, "line": line_of(d), "members": members, "extends": clean_ref(ext) if isinstance(ext, str) else None})


def clean_ref(s):
    return s.strip().removeprefix("${").removeprefix("{").removesuffix("}").strip()


# --------------------------------------------------------------------------------------------
# Cube JavaScript: a tokenizer and a scanner of cube()/view() calls

PUNCT = set("{}[]():,.;=?!<>+-*/%&|^~@")


def js_tokens(text):
    """Tokens (type, value, offset): id, str (quoted or template), num, punct, spread."""
    toks = []
    i, n = 0, len(text)

    def skip_string(i, q):
        i += 1
        while i < n and text[i] != q:
            i += 2 if text[i] == "\\" else 1
        return i + 1

    def skip_template(i):
        i += 1
        while i < n and text[i] != "`":
            if text[i] == "\\":
                i += 2
            elif text.startswith("${", i):
                i = skip_code(i + 2, "}")
            else:
                i += 1
        return i + 1

    def skip_code(i, close):
        depth = 0
        while i < n:
            ch = text[i]
            if ch in "'\"":
                i = skip_string(i, ch)
                continue
            if ch == "`":
                i = skip_template(i)
                continue
            if text.startswith("//", i):
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if text.startswith("/*", i):
                j = text.find("*/", i + 2)
                i = n if j < 0 else j + 2
                continue
            if ch in "{([":
                depth += 1
            elif ch in "})]":
                if depth == 0 and ch == close:
                    return i + 1
                depth -= 1
            i += 1
        return i

    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif ch in "'\"":
            j = skip_string(i, ch)
            toks.append(("str", text[i + 1 : j - 1], i))
            i = j
        elif ch == "`":
            j = skip_template(i)
            toks.append(("str", text[i + 1 : j - 1], i))
            i = j
        elif text.startswith("...", i):
            toks.append(("spread", "...", i))
            i += 3
        elif ch.isalpha() or ch in "_$":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            toks.append(("id", text[i:j], i))
            i = j
        elif ch.isdigit():
            j = i
            while j < n and (text[j].isalnum() or text[j] in "._"):
                j += 1
            toks.append(("num", text[i:j], i))
            i = j
        else:
            toks.append(("punct", ch, i))
            i += 1
    return toks


def matching(toks, i):
    """Index of the token closing the bracket at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        t, v, _ = toks[j]
        if t == "punct" and v in "{[(":
            depth += 1
        elif t == "punct" and v in "}])":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def object_keys(toks, start, end):
    """Keys of the object literal toks[start]..toks[end] at its own depth: (key, value_index)
    for `key:` after `{` or `,`, and ('...', i) for each spread."""
    out = []
    depth = 0
    j = start
    while j <= end:
        t, v, _ = toks[j]
        if t == "punct" and v in "{[(":
            depth += 1
        elif t == "punct" and v in "}])":
            depth -= 1
        elif depth == 1:
            prev = toks[j - 1]
            after_sep = prev[0] == "punct" and prev[1] in "{,"
            if after_sep and t in ("id", "str", "num") and j + 1 <= end and toks[j + 1][1] == ":":
                out.append((v, j + 2))
            elif after_sep and t == "spread":
                out.append(("...", j))
            elif after_sep and t == "punct" and v == "[":
                pass
        j += 1
    return out


def array_elements(toks, start, end):
    """Number of top-level elements of the array literal toks[start]..toks[end]."""
    if toks[start + 1][1] == "]":
        return 0
    depth, n = 0, 1
    for j in range(start, end + 1):
        t, v, _ = toks[j]
        if t == "punct" and v in "{[(":
            depth += 1
        elif t == "punct" and v in "}])":
            depth -= 1
        elif depth == 1 and t == "punct" and v == ",":
            n += 1
    if toks[end - 1][1] == ",":
        n -= 1  # a trailing comma
    return n


JS_MEMBERS = {
    "dimensions": "dimension",
    "measures": "measure",
    "segments": "segment",
    "joins": "join",
    "preAggregations": "pre_aggregation",
    "pre_aggregations": "pre_aggregation",
    "hierarchies": "hierarchy",
}


def cube_js(text, rel, defs, census):
    toks = js_tokens(text)
    line = lambda off: text.count("\n", 0, off) + 1
    for i, (t, v, off) in enumerate(toks):
        if t != "id" or v not in ("cube", "view") or i + 1 >= len(toks) or toks[i + 1][1] != "(":
            continue
        if i > 0 and toks[i - 1][1] in (".", "function"):
            continue
        close = matching(toks, i + 1)
        name_tok = toks[i + 2] if i + 2 < close else None
        name = name_tok[1] if name_tok and name_tok[0] == "str" else f"<{name_tok[1] if name_tok else '?'}>"
        # the second argument
        body = None
        for j in range(i + 2, close):
            if toks[j][1] == "," and j + 1 < close and toks[j + 1][1] == "{":
                body = j + 1
                break
            if toks[j][1] in "({[":
                j = matching(toks, j)
        members = defaultdict(list)
        ext = None
        if body is not None:
            bend = matching(toks, body)
            for key, vi in object_keys(toks, body, bend):
                if key == "...":
                    census.add("js_spread", rel, line(toks[vi][2]), f"{name}: ...{toks[vi + 1][1] if vi + 1 < len(toks) else ''}")
                    continue
                if key == "extends" and vi < len(toks):
                    ext = clean_ref(toks[vi][1])
                    continue
                kind = JS_MEMBERS.get(key)
                if kind and toks[vi][1] == "{":
                    vend = matching(toks, vi)
                    for mk, mi in object_keys(toks, vi, vend):
                        if mk == "...":
                            census.add("js_spread", rel, line(toks[mi][2]), f"{name}.{key}: ...{toks[mi + 1][1]}")
                        else:
                            members[kind].append((line(toks[mi - 2][2]), mk))
                elif kind:
                    census.add("js_dynamic", rel, line(toks[vi][2]), f"{name}.{key}: {toks[vi][1]}…")
                elif key in ("accessPolicy", "access_policy") and toks[vi][1] == "[":
                    vend = matching(toks, vi)
                    members["access_policy"] = [(line(toks[vi][2]), f"#{k}") for k in range(array_elements(toks, vi, vend))]
        defs.append({"kind": v, "name": name, "file": rel, "line": line(off), "members": dict(members), "extends": ext})


def cube_census(project):
    c = Census()
    defs = []
    base = project if project.is_dir() else project.parent
    skip = {"node_modules", "target", "dist"}
    for f in files_under(project, (".yml", ".yaml", ".js", ".yml.jinja", ".yaml.jinja"), skip):
        rel = f.relative_to(base)
        if f.name.endswith(".jinja"):
            # Cube renders these at compile time. Counted as written: comments and statement
            # lines dropped, an expression alone on a line kept as a mapping key, so the
            # members written literally are counted (a cube whose name a template makes
            # counts as one cube).
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            text = re.sub(r"(?s)\{#.*?#\}", "", text)
            lines = []
            for line in text.splitlines():
                bare = re.sub(r"\{%.*?%\}", "", line)
                if not bare.strip():
                    continue
                m = re.fullmatch(r"(\s*(?:-\s+)?)\{\{.*\}\}\s*", bare)
                if m:
                    bare = f"{m.group(1)}__template_{len(lines)}__: null"
                else:
                    bare = re.sub(r"\{\{.*?\}\}", "x", bare)
                lines.append(bare)
            try:
                doc = yaml.load("\n".join(lines), Loader=LineLoader)
            except yaml.YAMLError:
                c.add("jinja_model_file", rel, 1, f.name)
                continue
            if isinstance(doc, dict) and ("cubes" in doc or "views" in doc):
                for key in ("cubes", "views"):
                    for i, item in enumerate(items(doc, key)):
                        if isinstance(item, dict) and not item.get("name"):
                            item["name"] = f"{rel}#{key}{i}"
                cube_yaml(doc, rel, defs)
            continue
        if f.name.endswith(".js"):
            if f.name.endswith(".sql.js"):
                continue
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            cube_js(text, rel, defs, c)
            continue
        doc = load_yaml(f)
        if isinstance(doc, dict) and ("cubes" in doc or "views" in doc):
            cube_yaml(doc, rel, defs)
    by_name = {d["name"]: d for d in defs}

    def flattened(d, seen):
        """Members of d with what it extends: kind -> {name: (line, inherited)}."""
        out = defaultdict(dict)
        parent = by_name.get(d["extends"]) if d["extends"] else None
        if parent is not None and parent["name"] not in seen:
            for kind, ms in flattened(parent, seen | {d["name"]}).items():
                for n, (ln, _) in ms.items():
                    out[kind][n] = (ln, True)
        for kind, ms in d["members"].items():
            for ln, n in ms:
                if kind in NAMED and n in out[kind]:
                    out[kind][n] = (ln, False)  # overridden: the child's
                else:
                    out[kind][n if kind in NAMED else f"{n}@{ln}"] = (ln, False)
        return out

    for d in defs:
        c.add(d["kind"], d["file"], d["line"], d["name"])
        for kind, ms in flattened(d, {d["name"]}).items():
            for n, (ln, inh) in ms.items():
                c.add(kind, d["file"], ln, f"{d['name']}.{n}", inherited=inh)
    return c


# --------------------------------------------------------------------------------------------
# Ossie


def ossie_census(project):
    c = Census()
    base = project if project.is_dir() else project.parent
    for f in files_under(project, (".yaml", ".yml", ".json"), set()):
        doc = load_yaml(f)  # JSON is YAML
        if not isinstance(doc, dict) or "semantic_model" not in doc:
            continue
        rel = f.relative_to(base)
        for sm in items(doc, "semantic_model"):
            c.add("semantic_model", rel, line_of(sm), name_of(sm))
            for ds in items(sm, "datasets"):
                c.add("dataset", rel, line_of(ds), name_of(ds))
                for fl in items(ds, "fields"):
                    c.add("field", rel, line_of(fl), f"{name_of(ds)}.{name_of(fl)}")
            for r in items(sm, "relationships"):
                c.add("relationship", rel, line_of(r), name_of(r))
            for m in items(sm, "metrics"):
                c.add("metric", rel, line_of(m), name_of(m))
    return c


# --------------------------------------------------------------------------------------------
# The importer's side

OBJECT_PREFIXES = [
    ("semantic model", "semantic_model"),
    ("saved query", "saved_query"),
    ("access policy", "access_policy"),
    ("pre-aggregation", "pre_aggregation"),
]
ANNOTATIONS = {"description", "javascript", "document", "file"}
# Kinds the importer does not tally one by one, and the words an issue uses for them.
LUMPED = {
    "saved_query": ["saved quer", "saved_quer"],
    "pre_aggregation": ["pre_aggregation", "pre-aggregation", "preaggregation"],
    "access_policy": ["access_policy", "access polic"],
    "hierarchy": ["hierarch"],
    "jinja_model_file": [],  # matched on the issue's file instead (see below)
    "js_spread": ["spread", "must run"],
    "js_dynamic": ["must run"],
}


def issue_kind(obj):
    for prefix, kind in OBJECT_PREFIXES:
        if obj.startswith(prefix):
            return kind
    word = obj.split(" ", 1)[0]
    return word.lower()


def default_bin():
    if os.environ.get("SLAYER_BIN"):
        return os.environ["SLAYER_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR") or str(Path(__file__).resolve().parent.parent / "target")
    return str(Path(target) / "release" / "slayer-index")


def run_import(binary, fmt, path, tmp):
    report = Path(tmp) / "report.json"
    out = Path(tmp) / "out.jsonl"
    if report.exists():
        report.unlink()
    with open(out, "w") as o:
        p = subprocess.run([binary, "import", fmt, str(path), "--report", str(report)], stdout=o, stderr=subprocess.PIPE, text=True)
    data = json.loads(report.read_text()) if report.exists() and report.stat().st_size else None
    return p.returncode, data, p.stderr, out.read_text() if out.exists() else ""


def census_of(fmt, path):
    return {"dbt": dbt_census, "cube": cube_census, "ossie": ossie_census}[fmt](path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("projects", nargs="*", help="FORMAT:PATH")
    ap.add_argument("--project", nargs=3, action="append", default=[], metavar=("NAME", "FORMAT", "PATH"))
    ap.add_argument("--bin", default=None)
    ap.add_argument("--objects", action="store_true", help="list the source objects behind each unexplained row")
    ap.add_argument("--json", help="also write the table as JSON to this file")
    ap.add_argument("--source-only", action="store_true", help="print the source counts only (no binary needed)")
    args = ap.parse_args()
    binary = args.bin or default_bin()
    todo = [(a.split(":", 1)[1], *a.split(":", 1)) for a in args.projects if ":" in a]
    todo += [tuple(p) for p in args.project]
    if not todo:
        ap.error("no project given")
    if args.source_only:
        for name, fmt, raw in todo:
            path = Path(raw)
            if not path.exists():
                print(f"# {name}: {path} is missing; skipped")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                census = census_of("dbt", wrap_manifest(path, tmp)) if fmt == "dbt-manifest" else census_of(fmt, path)
            counts = ", ".join(f"{k} {len(v)}" + (f" (+{sum(1 for o in v if o[3])} inherited)" if any(o[3] for o in v) else "") for k, v in sorted(census.objects.items()))
            print(f"{name}: {counts}")
            for note in census.notes:
                print(f"# {name}: {note}")
        return 0
    if not os.access(binary, os.X_OK):
        sys.exit(f"no slayer-index binary at {binary} (set SLAYER_BIN or --bin)")
    rows, refused, failures = [], [], 0
    totals = defaultdict(int)
    for name, fmt, raw in todo:
        path = Path(raw)
        if not path.exists():
            print(f"# {name}: {path} is missing; skipped (fetch it first, see scripts/import_census.sh)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            real_fmt, real_path = fmt, path
            if fmt == "dbt-manifest":
                real_fmt, real_path = "dbt", wrap_manifest(path, tmp)
            census = census_of(real_fmt, real_path)
            rc, report, stderr, out = run_import(binary, real_fmt, real_path, tmp)
        if rc == 2 or report is None:
            msg = stderr.strip().splitlines()
            refused.append((name, rc, msg[-3:] if msg else ["(no message)"]))
            print(f"# {name}: REFUSED (exit {rc}): {' | '.join(msg[-3:])}")
            n = sum(len(v) for v in census.objects.values())
            print(f"#   source objects not read: {n} ({', '.join(f'{k} {len(v)}' for k, v in sorted(census.objects.items()))})")
            continue
        kinds = report.get("kinds", {})
        issues = report.get("issues", [])
        warned = defaultdict(int)
        for i in issues:
            warned[issue_kind(i.get("object", ""))] += 1
        messages = " ".join(i.get("message", "") for i in issues).lower()
        issue_text = json.dumps(issues)
        for kind in sorted(set(census.objects) | (set(kinds) - ANNOTATIONS)):
            objs = census.objects.get(kind, [])
            n = len(objs)
            inh = sum(1 for o in objs if o[3])
            k = kinds.get(kind, {})
            m = k.get("mapped", 0) + k.get("lossy", 0)
            s = k.get("skipped", 0)
            w = warned.get(kind, 0)
            note = ""
            if kind not in kinds and kind in LUMPED:
                named = lambda i: any(word in i.get("message", "").lower() for word in LUMPED[kind]) or (
                    kind == "jinja_model_file" and str(i.get("file", "")).endswith(".jinja"))
                w = sum(1 for i in issues if named(i))
                hit = w > 0
                note = "lumped" if hit else "not tallied"
                un = 0 if hit else n
            else:
                un = n - m - s
            rows.append({"project": name, "kind": kind, "source": n, "inherited": inh, "imported": m, "skipped": s, "warned": w, "unexplained": un, "note": note})
            for key, val in (("source", n), ("inherited", inh), ("imported", m), ("skipped", s), ("warned", w), ("unexplained", un)):
                totals[key] += val
            if un != 0:
                failures += 1
                if args.objects:
                    lost = [o for o in objs if o[2] and o[2].split(".")[-1] not in out and o[2].split(".")[-1] not in issue_text]
                    for f, ln, nm, _ in lost[:20]:
                        print(f"#   {name} {kind}: not in the output or the issues: {f}:{ln} {nm}")
        for kind in sorted(set(kinds) & ANNOTATIONS):
            k = kinds[kind]
            print(f"# {name}: {kind}: {k.get('read', 0)} (lossy {k.get('lossy', 0)}, skipped {k.get('skipped', 0)})")
        for note in census.notes:
            print(f"# {name}: {note}")
    w = max([len(r["project"]) for r in rows] + [7])
    print(f"{'project':<{w}} {'kind':<16} {'source':>6} {'inh':>4} {'imported':>8} {'skipped':>7} {'warned':>6} {'unexplained':>11}")
    for r in rows:
        print(f"{r['project']:<{w}} {r['kind']:<16} {r['source']:>6} {r['inherited']:>4} {r['imported']:>8} {r['skipped']:>7} {r['warned']:>6} {r['unexplained']:>11} {r['note']}")
    print(f"{'TOTAL':<{w}} {'':<16} {totals['source']:>6} {totals['inherited']:>4} {totals['imported']:>8} {totals['skipped']:>7} {totals['warned']:>6} {totals['unexplained']:>11}")
    print(f"source {totals['source']}, imported {totals['imported']}, warned {totals['warned']}, unexplained {totals['unexplained']} ({failures} rows not 0; {len(refused)} projects refused)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "refused": refused, "totals": totals}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
