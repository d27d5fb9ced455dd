#!/usr/bin/env python3
r"""The metric-lookup benchmark run through the Python original (PyPI motley-slayer 1.4.1).

It answers the same questions.jsonl as scripts/eval-metrics.sh, over the same slayer catalog
records, with the original's own search, so its hit@k and MRR can be printed beside ours.

  eval_metrics_original.py setup [VENV]
        create VENV (default $SLAYER_ORIGINAL_VENV, else target/venv-original) and install
        motley-slayer==1.4.1 plus tokenizers and safetensors (the local embedding encoder).
        The same by hand:
          python3 -m venv target/venv-original
          target/venv-original/bin/pip install motley-slayer==1.4.1 tokenizers safetensors
  eval_metrics_original.py run QUESTIONS (--catalog FILE | --catalog-dir DIR)
                           [--project P] [--embeddings auto|on|off] [--max-results N]
                           [--out FILE [--json FILE]]
        one JSON line per question, {"project", "question", "gold", "ranked": [ids],
        "kinds": [their kinds]} (plus "warnings" when the search gave any), on stdout or into
        FILE (then the score tables are printed on stdout). --catalog-dir DIR reads
        DIR/<project>/catalog.jsonl for each project of QUESTIONS (what scripts/eval-metrics.sh
        writes under target/eval-metrics); --catalog FILE answers every question over that one
        catalog.
  eval_metrics_original.py score RESULTS [--json FILE]
        hit@1, hit@3, hit@5 and MRR per project and overall, as markdown tables: over every
        entity returned, then over the measures alone (other kinds take no position), with
        scripts/eval_metrics.py's definitions (rank = first position of any gold id, 1-based;
        MRR counts 1/rank when rank <= 10, else 0; overall over all questions). --json writes
        them in eval_metrics.py's `score --json` shape, so
          python3 scripts/eval_metrics.py table slayer=target/eval-metrics/scores-all.json \
              original=FILE
        prints both side by side.

`run` re-executes itself with the venv's python when the running one cannot import the
original (`slayer.search.service`), so `python3 scripts/eval_metrics_original.py run ...` is
enough once the venv exists (`score` needs only the standard library).

How the original is driven (everything below is its own code, found in the venv's
site-packages/slayer):
  * Each catalog is loaded into a fresh SQLiteStorage (slayer.storage.sqlite_storage) in a
    temporary folder: `datasource` records become DatasourceConfig objects (save_datasource),
    `model` records SlayerModel objects (save_model, with its save-time validation; a model it
    refuses, e.g. a ColumnCycleError for a column whose sql is its own name, is saved again
    with _validate=False; stderr names each). What SlayerModel.model_validate itself refuses is
    repaired minimally and named on stderr (validate_with_repairs: a granularity on a
    non-temporal column is dropped; a join key naming a column's sql is renamed to the column,
    a join pair on an expression column is dropped), else the model is skipped. A model whose
    datasource has no record gets a bare DatasourceConfig(name=<ds>). Other record kinds
    (memory, doc) are skipped and counted, and so are unnamed measures (the original refuses a
    model holding one; slayer keeps them but they are not entities). Fields the original does
    not have are dropped by pydantic: notably slayer's `value_index` (§12.4), which the
    original never renders.
  * Each question is `SearchService(storage=storage).search(question=Q, datasource=D,
    max_results=N)` (D = the question's project when the catalog has a datasource of that
    name, as eval-metrics.sh passes --datasource <project>; else none), the body of the MCP
    `search` tool (the MCP server also passes its query engine, which only
    refreshes column descriptions after fusion and does not change the order; there is no
    database here). The service builds its tantivy index over the rendered entity docs (with
    1.4.1's built-in `<ds>.time_spine` model), runs BM25 (memories only, idle here), tantivy
    and, when enabled, the embedding channel, and fuses them with RRF(k=60). `ranked` is the
    ids of its non-memory hits, in order: they are canonical `ds.model[.leaf]` ids, the form
    slayer uses, so no mapping is needed (`<ds>.time_spine...` ids simply never match).
  * Embeddings: the original embeds through litellm (a hosted provider) only. With
    --embeddings on (auto: when the model folder is present) a stand-in `litellm` module is
    put in sys.modules whose `aembedding` runs all-MiniLM-L6-v2 locally (numpy, from
    $SLAYER_MODEL_DIR/all-MiniLM-L6-v2, default ~/.cache/slayer/models; fetched by
    scripts/fetch-model.sh; mean pooling, L2-normalised, 256 tokens: slayer-embed's local
    model), and SLAYER_EMBEDDING_MODEL is set to `local/all-MiniLM-L6-v2`. The original's own
    ingest-time refresh (engine.ingestion._refresh_datasource_embeddings) then embeds every
    entity doc into its sidecar table and its EmbeddingRetriever ranks by cosine. With
    --embeddings off the channel is unavailable, as in a stock install without a provider key.
"""
import argparse
import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True  # no scripts/__pycache__ from importing eval_metrics
VERSION = "1.4.1"
LOCAL_MODEL_NAME = "local/all-MiniLM-L6-v2"


def venv_dir():
    return Path(os.environ.get("SLAYER_ORIGINAL_VENV") or ROOT / "target" / "venv-original")


def model_dir():
    base = os.environ.get("SLAYER_MODEL_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "slayer" / "models"
    return Path(base) / "all-MiniLM-L6-v2"


def log(msg):
    print(f"eval-metrics-original: {msg}", file=sys.stderr, flush=True)


# --- setup and re-exec -------------------------------------------------------------------------

def cmd_setup(args):
    venv = Path(args.venv) if args.venv else venv_dir()
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet",
                    f"motley-slayer=={VERSION}", "tokenizers", "safetensors"], check=True)
    log(f"ready: {venv}")


def ensure_original():
    try:
        import slayer.search.service  # noqa: F401
        return
    except ImportError:
        pass
    py = venv_dir() / "bin" / "python"
    if py.exists() and Path(sys.prefix).resolve() != venv_dir().resolve():
        os.execv(str(py), [str(py), str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit(f"eval-metrics-original: the original is not installed; run "
             f"`{sys.argv[0]} setup` (venv: {venv_dir()}, or set SLAYER_ORIGINAL_VENV)")


# --- local embedding encoder (all-MiniLM-L6-v2 in numpy) ---------------------------------------

class MiniLM:
    """BERT forward pass + mean pooling + L2 normalisation, as sentence-transformers does it."""

    def __init__(self, folder, max_tokens=256):
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
        self.np = np
        cfg = json.loads((folder / "config.json").read_text())
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        w = load_file(str(folder / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v for k, v in w.items()}
        self._t = {}
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=min(max_tokens, cfg["max_position_embeddings"]))

    def _ln(self, x, name):
        np = self.np
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _lin(self, x, name):
        wt = self._t.get(name)
        if wt is None:  # contiguous transposed weights keep the matmul on BLAS
            wt = self._t[name] = self.np.ascontiguousarray(self.w[name + ".weight"].T)
        y = x.reshape(-1, x.shape[-1]) @ wt + self.w[name + ".bias"]
        return y.reshape(*x.shape[:-1], wt.shape[1])

    def _gelu(self, x):
        # exact (erf) GELU; erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)
        np = self.np
        z = x / np.sqrt(2.0)
        s = np.sign(z)
        a = np.abs(z)
        t = 1.0 / (1.0 + 0.3275911 * a)
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                   + 0.254829592) * t * np.exp(-a * a)
        return 0.5 * x * (1.0 + s * y)

    def _batch(self, encs):
        np = self.np
        n, L = len(encs), max(len(e.ids) for e in encs)
        ids = np.zeros((n, L), dtype=np.int64)
        types_ = np.zeros((n, L), dtype=np.int64)
        mask = np.zeros((n, L), dtype=np.float32)
        for i, e in enumerate(encs):
            ids[i, :len(e.ids)] = e.ids
            types_[i, :len(e.ids)] = e.type_ids
            mask[i, :len(e.ids)] = 1.0
        w = self.w
        h = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:L][None]
             + w["embeddings.token_type_embeddings.weight"][types_])
        h = self._ln(h, "embeddings.LayerNorm")
        hd = h.shape[-1] // self.heads
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for l in range(self.layers):
            p = f"encoder.layer.{l}."
            def split(x):
                return x.reshape(n, L, self.heads, hd).transpose(0, 2, 1, 3)
            q = split(self._lin(h, p + "attention.self.query"))
            k = split(self._lin(h, p + "attention.self.key"))
            v = split(self._lin(h, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(n, L, -1)
            h = self._ln(h + self._lin(ctx, p + "attention.output.dense"),
                         p + "attention.output.LayerNorm")
            inter = self._gelu(self._lin(h, p + "intermediate.dense"))
            h = self._ln(h + self._lin(inter, p + "output.dense"), p + "output.LayerNorm")
        pooled = (h * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norm, 1e-12)

    def encode(self, texts, batch_size=32):
        encs = self.tok.encode_batch(list(texts))
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
        out = [None] * len(encs)
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            vecs = self._batch([encs[i] for i in chunk])
            for i, vec in zip(chunk, vecs):
                out[i] = [float(x) for x in vec]
        return out


def install_local_litellm(encoder):
    """A stand-in `litellm` exposing just what slayer.embeddings.client calls."""
    mod = types.ModuleType("litellm")

    class BadRequestError(Exception):
        pass

    def validate_environment(model=None, **_):
        return {"keys_in_environment": True, "missing_keys": []}

    async def aembedding(model=None, input=None, **_):
        vecs = encoder.encode(input or [])
        return types.SimpleNamespace(data=[{"embedding": v} for v in vecs])

    mod.BadRequestError = BadRequestError
    mod.validate_environment = validate_environment
    mod.aembedding = aembedding
    sys.modules["litellm"] = mod


# --- the original --------------------------------------------------------------------------------

def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"eval-metrics-original: {path}: line {n}: {e}")
    return out


JOIN_KEY = re.compile(r"join (\S+) \u2192 (\S+) key '([^']*)' is "
                      r"(not a declared column|an expression column)")


def validate_with_repairs(cls, body):
    """SlayerModel.model_validate, repairing what 1.4.1's validators refuse in an exported
    slayer record; every repair is named. (None, notes) when it still cannot be validated."""
    import copy
    body = copy.deepcopy(body)
    notes = []
    for _ in range(50):
        try:
            return cls.model_validate(body), notes
        except Exception as exc:  # noqa: BLE001
            errors = exc.errors() if hasattr(exc, "errors") else []
            if not errors:
                return None, notes + [f"does not validate, skipped: {exc}"]
            err = errors[0]
            loc, msg = tuple(err.get("loc", ())), err.get("msg", "")
            fixed = False
            if len(loc) >= 2 and loc[0] == "columns" and "granularity" in msg:
                col = body["columns"][loc[1]]
                if col.pop("granularity", None) is not None:
                    notes.append(f"dropped granularity of non-temporal column '{col['name']}' "
                                 "(not rendered)")
                    fixed = True
            elif m := JOIN_KEY.search(msg):
                target, key, why = m.group(2), m.group(3), m.group(4)
                by_sql = [c["name"] for c in body.get("columns") or []
                          if c.get("sql") == key] if why.startswith("not") else []
                for j in body.get("joins") or []:
                    if j.get("target_model") != target:
                        continue
                    pairs = j.get("join_pairs") or []
                    if by_sql:
                        for pair in pairs:
                            if pair and pair[0] == key:
                                pair[0] = by_sql[0]
                                fixed = True
                    else:
                        kept = [pair for pair in pairs if not (pair and pair[0] == key)]
                        fixed = fixed or len(kept) != len(pairs)
                        j["join_pairs"] = kept
                body["joins"] = [j for j in body.get("joins") or [] if j.get("join_pairs")]
                if fixed and by_sql:
                    notes.append(f"join to {target}: source key '{key}' renamed to the column "
                                 f"'{by_sql[0]}' whose sql it is (changes its Join pairs line)")
                elif fixed:
                    notes.append(f"join to {target}: dropped the pair on key '{key}' ({why}; "
                                 "changes its Join pairs line)")
            if not fixed:
                return None, notes + [f"does not validate, skipped: {msg.splitlines()[0]}"]
    return None, notes + ["does not validate after 50 repairs, skipped"]


async def load_catalog(storage, records, label):
    """Save the catalog's datasource and model records through the original's storage API."""
    from slayer.core.models import DatasourceConfig, SlayerModel
    skipped, dropped = defaultdict(int), defaultdict(int)
    datasources, models = {}, []
    for rec in records:
        kind = rec.get("kind")
        body = {k: v for k, v in rec.items() if k != "kind"}
        if kind == "datasource":
            datasources[body["name"]] = body
        elif kind == "model":
            models.append(body)
        else:
            skipped[kind] += 1
    for body in models:
        ds = body.get("data_source") or ""
        if ds not in datasources:
            log(f"{label}: no datasource record for '{ds}'; saving a bare one")
            datasources[ds] = {"name": ds}
    for name in sorted(datasources):
        await storage.save_datasource(DatasourceConfig.model_validate(datasources[name]))
    saved, refused = 0, 0
    for body in models:
        ident = f"{body.get('data_source')}.{body.get('name')}"
        unnamed = [m for m in body.get("measures") or [] if not m.get("name")]
        if unnamed:  # not entities in slayer either; the original refuses them outright
            body = {**body, "measures": [m for m in body["measures"] if m.get("name")]}
            dropped["unnamed measure"] += len(unnamed)
        model, repairs = validate_with_repairs(SlayerModel, body)
        for r in repairs:
            log(f"{label}: {ident}: {r}")
        if model is None:
            refused += 1
            continue
        try:
            await storage.save_model(model)
        except Exception as exc:  # noqa: BLE001
            log(f"{label}: save_model refused {ident} ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); saved with _validate=False")
            try:
                await storage.save_model(model, _validate=False)
            except Exception as exc2:  # noqa: BLE001
                log(f"{label}: {ident} cannot be stored at all, skipped: {exc2}")
                refused += 1
                continue
        saved += 1
    _, unloadable = await storage.load_models()
    for err in unloadable:
        log(f"{label}: stored model cannot be loaded back by the original: {err}")
    for kind, n in sorted(skipped.items()):
        log(f"{label}: skipped {n} '{kind}' record(s)")
    for what, n in sorted(dropped.items()):
        log(f"{label}: dropped {n} {what}(s) the original cannot hold")
    return sorted(datasources), saved, refused


async def run_project(label, catalog, questions, embeddings, max_results):
    from slayer.search.service import SearchService
    from slayer.storage.sqlite_storage import SQLiteStorage
    records = read_jsonl(catalog)
    with tempfile.TemporaryDirectory(prefix="slayer-original-") as tmp:
        storage = SQLiteStorage(db_path=str(Path(tmp) / "store.db"))
        datasources, saved, refused = await load_catalog(storage, records, label)
        log(f"{label}: {len(datasources)} datasource(s), {saved} model(s) loaded"
            + (f", {refused} refused" if refused else ""))
        if embeddings:
            from slayer.engine.ingestion import _refresh_datasource_embeddings
            t0 = time.time()
            warns = []
            for ds in datasources:
                warns += await _refresh_datasource_embeddings(datasource_name=ds, storage=storage)
            rows = await storage.list_embeddings(embedding_model_name=LOCAL_MODEL_NAME) \
                if hasattr(storage, "list_embeddings") else None
            log(f"{label}: embedded entity docs in {time.time() - t0:.1f}s"
                + (f" ({len(rows)} rows)" if rows is not None else "")
                + (f"; {len(warns)} warning(s), first: {warns[0]}" if warns else ""))
        service = SearchService(storage=storage)
        out = []
        for q in questions:
            # like eval-metrics.sh (--datasource <project>) when the project is a datasource here
            ds = q.get("project") if q.get("project") in datasources else None
            resp = await service.search(question=q["question"], datasource=ds,
                                        max_results=max_results)
            line = {"project": q.get("project"), "question": q["question"],
                    "gold": q.get("gold", []),
                    "ranked": [h.id for h in resp.results if h.kind != "memory"],
                    "kinds": [h.kind for h in resp.results if h.kind != "memory"]}
            if resp.warnings:
                line["warnings"] = resp.warnings
            out.append(line)
        return out


def cmd_run(args):
    ensure_original()
    logging.basicConfig(level=logging.ERROR)
    questions = read_jsonl(args.questions)
    if args.project:
        questions = [q for q in questions if q.get("project") in args.project]
    mode = args.embeddings
    folder = model_dir()
    have_model = (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists()
    if mode == "on" and not have_model:
        sys.exit(f"eval-metrics-original: --embeddings on needs {folder} (scripts/fetch-model.sh)")
    embeddings = mode == "on" or (mode == "auto" and have_model)
    if embeddings:
        try:
            encoder = MiniLM(folder)
        except ImportError as exc:
            if mode == "on":
                sys.exit(f"eval-metrics-original: local encoder unavailable: {exc}")
            log(f"local encoder unavailable ({exc}); text channels only")
            embeddings = False
    if embeddings:
        os.environ["SLAYER_EMBEDDING_MODEL"] = LOCAL_MODEL_NAME
        install_local_litellm(encoder)
        log(f"embedding channel: {LOCAL_MODEL_NAME} from {folder}")
    else:
        os.environ.pop("SLAYER_EMBEDDING_MODEL", None)
        sys.modules["litellm"] = None  # import fails -> the original's is_available() is False
        log("embedding channel: off (text channels only)")
    import slayer.embeddings.client as client
    client.is_available.cache_clear()
    assert client.is_available() == embeddings

    groups = defaultdict(list)
    for q in questions:
        groups[q.get("project")].append(q)
    results = []
    for project, qs in groups.items():
        if args.catalog:
            catalog, label = Path(args.catalog), str(project)
        else:
            catalog, label = Path(args.catalog_dir) / str(project) / "catalog.jsonl", str(project)
            if not catalog.exists():
                log(f"{label}: {catalog} is missing; its {len(qs)} question(s) are skipped")
                continue
        results += asyncio.run(run_project(label, catalog, qs, embeddings, args.max_results))
    # grouped by project, each in the questions' order
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(score_table(results, args.json))
    else:
        sys.stdout.write(text)


# --- scoring -------------------------------------------------------------------------------------

def scores(results):
    """{"entities": {project: metrics, "overall": ...}, "measures": {...}}: eval_metrics.py's
    `score --json` shape, so `eval_metrics.py table` can put the original beside slayer."""
    import eval_metrics as em  # scripts/eval_metrics.py: the same rank_of / metrics
    out = {}
    for view, kind in (("entities", None), ("measures", "measure")):
        per, all_ranks = defaultdict(list), []
        for r in results:
            ids = r["ranked"] if kind is None else [
                i for i, k in zip(r["ranked"], r.get("kinds") or []) if k == kind]
            rank = em.rank_of(ids, r["gold"])
            per[r.get("project")].append(rank)
            all_ranks.append(rank)
        res = {str(p): em.metrics(ranks) for p, ranks in per.items()}
        res["overall"] = em.metrics(all_ranks)
        out[view] = res
    return out


def score_table(results, json_path=None):
    import eval_metrics as em
    res = scores(results)
    if json_path:
        Path(json_path).write_text(json.dumps(res, indent=1), encoding="utf-8")
    return ("Every entity:\n" + em.markdown([("", res["entities"])])
            + "\n\nMeasures alone:\n" + em.markdown([("", res["measures"])]))


def cmd_score(args):
    print(score_table(read_jsonl(args.results), args.json))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("setup")
    p.add_argument("venv", nargs="?")
    p.set_defaults(func=cmd_setup)
    p = sub.add_parser("run")
    p.add_argument("questions")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--catalog")
    src.add_argument("--catalog-dir")
    p.add_argument("--project", action="append")
    p.add_argument("--embeddings", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--max-results", type=int, default=10)
    p.add_argument("--out")
    p.add_argument("--json")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("score")
    p.add_argument("results")
    p.add_argument("--json")
    p.set_defaults(func=cmd_score)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
