#!/usr/bin/env python3
"""The data and scoring side of scripts/eval-metrics.sh (standard library only): metric lookup
on public semantic layers (tests/fixtures/metric-eval).

  eval_metrics.py requests QUESTIONS PROJECT CHANNELS [--max-entities N]
                                        slayer-search --batch requests, one per question of
                                        PROJECT, in file order; CHANNELS is a comma list
                                        (entities,text) or `default` (the field left out: every
                                        channel runs)
  eval_metrics.py score QUESTIONS RESPONSES... [--misses FILE] [--json FILE]
                                        hit@1, hit@3, hit@5 and MRR per project and overall, as
                                        markdown tables (over every entity, then over the
                                        measures alone); each RESPONSES is PROJECT=FILE (or a
                                        FILE in a folder named as the project), its lines the
                                        answers to that project's questions in order;
                                        --misses writes one line per question whose first
                                        entity is not gold (question, gold, top 5 ids);
                                        --json writes the numbers for `table`
  eval_metrics.py table LABEL=JSON...   the tables of several runs (from score --json): a row
                                        per project and overall, hit@1 / hit@3 / hit@5 / MRR
                                        per run; over every entity, then over the measures
  eval_metrics.py digest DIR            the sha256 of a question set's folder: every file's path
                                        (relative, '/'-separated) and bytes, in path order, so
                                        any change to a frozen set shows (docs/quality/metrics.md)
  eval_metrics.py selftest              the metrics against hand-computed values

questions.jsonl: one {"project", "question", "gold": [canonical measure ids]} per line. A
question's rank is the first position (1-based) in the response's `entities` list of any of its
gold ids, every entity kind taking a position; hit@k = rank <= k; MRR averages 1/rank, 0 past
rank 10 or with no gold id returned. A batch line that failed ranks nothing. Overall is over all
questions (each counts once), not a mean of the projects. The second table ranks the same lists
with every entity that is not a measure left out (models, columns and datasources take no
position): whether the right measure leads the measures returned, whatever comes above it.
"""
import hashlib
import json
import os
import sys

KS = (1, 3, 5)
MRR_CUTOFF = 10


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def request(q, channels, max_entities=10):
    req = {
        "question": q["question"],
        "datasource": q["project"],
        "max_entities": max_entities,
        "max_memories": 0,
        "max_example_queries": 0,
    }
    if channels and channels != "default":
        req["channels"] = channels.split(",")
    return req


def ranking(response, kind=None):
    """The entity ids of one response, in order (only those of `kind` when given); [] for an
    error line."""
    if response.get("kind") == "error":
        return []
    return [e["id"] for e in response.get("entities", []) if kind is None or e.get("kind") == kind]


def rank_of(ids, gold):
    """1-based position of the first gold id in ids, or None."""
    gold = set(gold)
    for i, entity in enumerate(ids, 1):
        if entity in gold:
            return i
    return None


def metrics(ranks):
    """{hit@k..., MRR, n} over a list of ranks (None = not found)."""
    n = len(ranks)
    out = {"n": n}
    for k in KS:
        out[f"hit@{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n if n else 0.0
    out["MRR"] = sum(1 / r for r in ranks if r is not None and r <= MRR_CUTOFF) / n if n else 0.0
    return out


def pair_responses(questions, args):
    """[(project, responses)] from PROJECT=FILE args (or FILE inside a folder named PROJECT)."""
    projects = {q["project"] for q in questions}
    pairs = []
    for arg in args:
        if "=" in arg:
            project, path = arg.split("=", 1)
        else:
            path = arg
            project = os.path.basename(os.path.dirname(os.path.abspath(path)))
        if project not in projects:
            sys.exit(f"eval_metrics: {arg}: '{project}' is not a project of the questions "
                     f"({', '.join(sorted(projects))}); pass PROJECT=FILE")
        pairs.append((project, read_jsonl(path)))
    return pairs


def score(questions, pairs, kind=None):
    """({project: metrics, 'overall': metrics}, [miss records]), ranking the entities of `kind`
    alone when given."""
    per_project, misses, all_ranks = {}, [], []
    for project, responses in pairs:
        qs = [q for q in questions if q["project"] == project]
        if len(responses) != len(qs):
            sys.exit(f"eval_metrics: {project}: {len(responses)} responses for {len(qs)} questions")
        ranks = []
        for q, r in zip(qs, responses):
            ids = ranking(r, kind)
            rank = rank_of(ids, q["gold"])
            ranks.append(rank)
            if rank != 1:
                measures = ranking(r, "measure")
                misses.append({"project": project, "question": q["question"], "gold": q["gold"],
                               "rank": rank, "top5": ids[:5],
                               "measure_rank": rank_of(measures, q["gold"]),
                               "top5_measures": measures[:5],
                               "error": r.get("error") if r.get("kind") == "error" else None})
        per_project[project] = metrics(ranks)
        all_ranks += ranks
    per_project["overall"] = metrics(all_ranks)
    return per_project, misses


def markdown(runs):
    """One table: runs is [(label, {project: metrics})]; rows are the projects, then overall."""
    projects = []
    for _, res in runs:
        for p in res:
            if p != "overall" and p not in projects:
                projects.append(p)
    projects.sort()
    projects.append("overall")
    head = "| project | n |"
    rule = "|---|---|"
    for label, _ in runs:
        head += f" {label} hit@1 | hit@3 | hit@5 | MRR |"
        rule += "---|---|---|---|"
    lines = [head, rule]
    for p in projects:
        n = next((res[p]["n"] for _, res in runs if p in res), 0)
        row = f"| {'**overall**' if p == 'overall' else p} | {n} |"
        for _, res in runs:
            m = res.get(p)
            if m is None:
                row += " – | – | – | – |"
            else:
                row += "".join(f" {m[k]:.3f} |" for k in ("hit@1", "hit@3", "hit@5", "MRR"))
        lines.append(row)
    return "\n".join(lines)


def miss_line(m):
    absent = "not returned"
    text = (f"[{m['project']}] {m['question']}\n  gold: {', '.join(m['gold'])}\n"
            f"  rank: {m['rank'] or absent} (among measures: {m.get('measure_rank') or absent})\n"
            f"  top5: {', '.join(m['top5']) or '(none)'}\n"
            f"  top5 measures: {', '.join(m.get('top5_measures') or []) or '(none)'}")
    if m.get("error"):
        text += f"\n  error: {m['error']}"
    return text


def selftest():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "p"))
        with open(os.path.join(d, "p", "a.yml"), "wb") as f:
            f.write(b"x")
        first = digest(d)
        h = hashlib.sha256(b"p/a.yml\x001\x00x").hexdigest()
        assert first == h, (first, h)
        with open(os.path.join(d, "p", "a.yml"), "wb") as f:
            f.write(b"y")
        assert digest(d) != first
    assert rank_of(["a", "b", "c"], ["c", "b"]) == 2
    assert rank_of(["a"], ["z"]) is None
    assert ranking({"kind": "error", "line": 1, "error": "x"}) == []
    assert ranking({"entities": [{"id": "ds.m.x"}, {"id": "ds.m"}]}) == ["ds.m.x", "ds.m"]
    mixed = {"entities": [{"id": "ds.m", "kind": "model"}, {"id": "ds.m.c", "kind": "column"},
                          {"id": "ds.m.x", "kind": "measure"}]}
    assert ranking(mixed, "measure") == ["ds.m.x"]
    assert rank_of(ranking(mixed), ["ds.m.x"]) == 3
    assert rank_of(ranking(mixed, "measure"), ["ds.m.x"]) == 1
    # ranks 1, 2, 4, 11 (past the MRR cutoff), absent
    m = metrics([1, 2, 4, 11, None])
    assert m["n"] == 5
    assert (m["hit@1"], m["hit@3"], m["hit@5"]) == (0.2, 0.4, 0.6), m
    assert abs(m["MRR"] - (1 + 1 / 2 + 1 / 4) / 5) < 1e-12, m
    assert metrics([])["MRR"] == 0.0
    qs = [
        {"project": "p", "question": "q1", "gold": ["p.m.a"]},
        {"project": "p", "question": "q2", "gold": ["p.m.b", "p.m.c"]},
        {"project": "r", "question": "q3", "gold": ["r.m.x"]},
    ]
    responses_p = [
        {"entities": [{"id": "p.m.a"}, {"id": "p.m"}]},
        {"entities": [{"id": "p.m"}, {"id": "p.m.z"}, {"id": "p.m.c"}, {"id": "p.m.b"}]},
    ]
    responses_r = [{"kind": "error", "line": 1, "error": "line 1: boom"}]
    res, misses = score(qs, [("p", responses_p), ("r", responses_r)])
    assert res["p"]["hit@1"] == 0.5 and res["p"]["hit@3"] == 1.0
    assert abs(res["p"]["MRR"] - (1 + 1 / 3) / 2) < 1e-12
    assert res["r"]["hit@5"] == 0.0 and res["r"]["MRR"] == 0.0
    o = res["overall"]
    assert o["n"] == 3 and abs(o["hit@1"] - 1 / 3) < 1e-12 and abs(o["hit@3"] - 2 / 3) < 1e-12
    assert [m["question"] for m in misses] == ["q2", "q3"] and misses[0]["rank"] == 3
    assert misses[1]["error"] == "line 1: boom"
    assert request(qs[0], "default") == {"question": "q1", "datasource": "p", "max_entities": 10,
                                         "max_memories": 0, "max_example_queries": 0}
    assert request(qs[0], "entities,text")["channels"] == ["entities", "text"]
    table = markdown([("all", res), ("text", res)])
    assert table.splitlines()[2].startswith("| p | 2 | 0.500 | 1.000 | 1.000 | 0.667 |"), table
    assert table.splitlines()[-1].startswith("| **overall** | 3 |"), table
    print("eval_metrics selftest: ok")


def digest(folder):
    """sha256 over each file under `folder`: its relative path, a NUL, its length, a NUL, its
    bytes; files in path order. Caches (__pycache__, .DS_Store) are not part of a set."""
    files = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name == ".DS_Store":
                continue
            full = os.path.join(dirpath, name)
            files.append((os.path.relpath(full, folder).replace(os.sep, "/"), full))
    h = hashlib.sha256()
    for rel, full in sorted(files):
        with open(full, "rb") as f:
            data = f.read()
        h.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def main(argv):
    if not argv:
        sys.exit(__doc__)
    cmd, rest = argv[0], argv[1:]

    def option(name):
        if name in rest:
            i = rest.index(name)
            value = rest[i + 1]
            del rest[i:i + 2]
            return value
        return None

    if cmd == "requests":
        max_entities = int(option("--max-entities") or 10)
        if len(rest) != 3:
            sys.exit(__doc__)
        questions = [q for q in read_jsonl(rest[0]) if q["project"] == rest[1]]
        if not questions:
            sys.exit(f"eval_metrics: no question of project '{rest[1]}' in {rest[0]}")
        for q in questions:
            print(json.dumps(request(q, rest[2], max_entities)))
    elif cmd == "digest":
        if len(rest) != 1:
            sys.exit(__doc__)
        print(digest(rest[0]))
    elif cmd == "score":
        misses_path, json_path = option("--misses"), option("--json")
        if len(rest) < 2:
            sys.exit(__doc__)
        questions = read_jsonl(rest[0])
        pairs = pair_responses(questions, rest[1:])
        res, misses = score(questions, pairs)
        res_measures, _ = score(questions, pairs, "measure")
        print("Every entity:\n" + markdown([("", res)]))
        print("\nMeasures alone:\n" + markdown([("", res_measures)]))
        if misses_path:
            with open(misses_path, "w", encoding="utf-8") as f:
                for m in misses:
                    f.write(miss_line(m) + "\n")
        if json_path:
            with open(json_path, "w", encoding="utf-8") as f:
                json.dump({"entities": res, "measures": res_measures}, f, indent=1)
    elif cmd == "table":
        runs = []
        for arg in rest:
            label, path = arg.split("=", 1)
            with open(path, encoding="utf-8") as f:
                runs.append((label, json.load(f)))
        print("Rank among every entity returned (models, columns, measures):\n")
        print(markdown([(label, res["entities"]) for label, res in runs]))
        print("\nRank among the measures returned (other kinds skipped):\n")
        print(markdown([(label, res["measures"]) for label, res in runs]))
    elif cmd == "selftest":
        selftest()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
