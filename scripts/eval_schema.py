#!/usr/bin/env python3
"""The data and scoring side of scripts/eval-schema.sh (standard library only).

  eval_schema.py requests QUESTIONS CHANNELS [--evidence] [--limit N] [--tuning JSON]
                        [--plan JSON] [--inject-evidence] [--inject-anchors] [--schema]
                        [--no-datasource]
                                        slayer-search --batch requests, one per question;
                                        --plan merges its fields into each request ({"plan":
                                        "auto", "rerank": "none"}), --inject-evidence passes
                                        terms derived from BIRD's evidence as `injected`
                                        synonyms and phrases, --inject-anchors the question's
                                        and the evidence's words as anchors; --schema asks for
                                        the schema answer; --no-datasource leaves the
                                        question's database out (the store holds all 11)
  eval_schema.py score QUESTIONS RESPONSES [--limit N] [--by-difficulty]
                                        T@k T+c@k C@k for k = 1, 3, 5, 10, 20 (one line each
                                        group: all, then simple / moderate / challenging); with
                                        schema answers also S-T, S-C, S-J (their table, column
                                        and join-pair recall), S-cols and S-tokens (mean columns
                                        and tokens, ~4 characters of its compact JSON each)
  eval_schema.py latency QUESTIONS CHANNELS STORE BIN [--evidence] [--n N] [--plan JSON]
                        [--inject-evidence] [--inject-anchors]
                                        median whole-process time of N one-shot searches (ms)
  eval_schema.py selftest               the metrics against hand-computed values

Metrics, as the data's README defines them. Every question runs with --datasource <its
database> and --max-entities 50; rank = position in the returned `entities` list, every entity
kind taking a position. Per question, then averaged over questions:
  T@k    the fraction of its gold tables whose model id is in the top k;
  T+c@k  a gold table counts as found when its model id or any of its columns is in the top k;
  C@k    the fraction of its gold columns in the top k (questions with no gold column skipped).
A question whose batch line failed scores 0 everywhere.

A gold join pair is a `T1.x = T2.y` condition of the gold SQL between two tables (aliases
resolved); the schema answer finds it when one of its joins pairs the same two columns.
"""
import json
import re
import statistics
import subprocess
import sys
import time

KS = (1, 3, 5, 10, 20)
DIFFICULTIES = ("simple", "moderate", "challenging")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def text_of(q, evidence):
    if evidence and q.get("evidence"):
        return q["question"] + " " + q["evidence"]
    return q["question"]


# Words of BIRD's evidence sentences that say how, not what (the hint's grammar).
EVIDENCE_STOP = {
    "refers", "refer", "means", "mean", "stands", "indicates", "indicate", "where", "when", "the",
    "and", "for", "with", "that", "this", "from", "are", "was", "were", "which", "than", "then",
    "divide", "divided", "sum", "count", "max", "min", "avg", "average", "percentage", "ratio",
    "total", "number", "calculation", "calculate", "name", "names", "full", "value", "values",
}


def injected_from_evidence(evidence):
    """Expansion terms as an agent would pass its own hints, derived deterministically from
    BIRD's evidence: the names it quotes in backticks become phrases (several words) or
    synonyms (one), and its other content words synonyms; nothing from the gold SQL."""
    if not evidence:
        return None
    quoted = [n.strip() for n in re.findall(r"`([^`]+)`", evidence)]
    rest = re.sub(r"`[^`]+`|'[^']*'|\"[^\"]*\"", " ", evidence)
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]+", rest)
             if len(w) > 2 and w.lower() not in EVIDENCE_STOP]
    phrases, synonyms = [], []
    for name in quoted:
        (phrases if len(name.split()) > 1 else synonyms).append(name)
    for w in words:
        if w.lower() not in (s.lower() for s in synonyms):
            synonyms.append(w)
    out = {"phrases": phrases[:6], "synonyms": synonyms[:12]}
    return out if out["phrases"] or out["synonyms"] else None


def anchored_from_evidence(question, evidence):
    """The same hints passed as anchors: the question's words and the evidence's (names with
    several words as phrases), so they join pass A instead of the budgeted pass B."""
    terms = injected_from_evidence(evidence) or {"phrases": [], "synonyms": []}
    words = re.findall(r"[A-Za-z][A-Za-z0-9_]+", question)
    return {"anchors": words + terms["synonyms"], "phrases": terms["phrases"]}


IDENT = r'(`[^`]+`|"[^"]+"|\[[^\]]+\]|\w+)'
CLAUSE_WORDS = {"on", "where", "inner", "left", "right", "cross", "join", "group", "order",
                "limit", "as", "union", "having"}


def gold_joins(q):
    """The gold SQL's join pairs between two tables, as sorted (column, column) tuples."""
    unquote = lambda name: name.strip('`"[] ').lower()
    sql, ds = q["sql"], q["datasource"]
    alias = {}
    for m in re.finditer(r"(?:FROM|JOIN)\s+" + IDENT + r"(?:\s+(?:AS\s+)?(\w+))?", sql, re.I):
        table = unquote(m.group(1))
        alias[table] = table
        if m.group(2) and m.group(2).lower() not in CLAUSE_WORDS:
            alias[m.group(2).lower()] = table
    pairs = set()
    for m in re.finditer(IDENT + r"\." + IDENT + r"\s*=\s*" + IDENT + r"\." + IDENT, sql):
        a, x, b, y = (unquote(g) for g in m.groups())
        if a in alias and b in alias and alias[a] != alias[b]:
            pairs.add(tuple(sorted((f"{ds}.{alias[a]}.{x}", f"{ds}.{alias[b]}.{y}"))))
    return sorted(pairs)


def schema_scores(schema, q):
    """{S-T, S-C, S-J, S-cols, S-tokens} for one schema answer (None where undefined)."""
    schema = schema or {"models": [], "joins": []}
    models = {m["id"] for m in schema["models"]}
    columns = {c["id"] for m in schema["models"] for c in m["columns"]}
    joins = {tuple(sorted((j["from"], j["to"]))) for j in schema["joins"]}
    gold = gold_joins(q)
    return {
        "S-T": sum(t in models for t in q["gold_tables"]) / len(q["gold_tables"])
        if q["gold_tables"] else None,
        "S-C": sum(c in columns for c in q["gold_columns"]) / len(q["gold_columns"])
        if q["gold_columns"] else None,
        "S-J": sum(g in joins for g in gold) / len(gold) if gold else None,
        "S-cols": len(columns),
        "S-tokens": len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False)) / 4,
    }


def request(q, channels, evidence, tuning=None, plan=None, inject=False, anchored=False,
            schema=False, datasource=True):
    req = {
        "question": text_of(q, evidence),
        "datasource": q["datasource"],
        "max_entities": 50,
        "max_memories": 0,
        "max_example_queries": 0,
        "channels": channels,
    }
    if tuning:
        req["tuning"] = tuning
    if plan:
        req.update(plan)
    if inject:
        terms = injected_from_evidence(q.get("evidence"))
        if terms:
            req["injected"] = terms
    if anchored:
        req["injected"] = anchored_from_evidence(q["question"], q.get("evidence"))
    if schema:
        req["schema"] = True
    if not datasource:
        del req["datasource"]
    return req


def table_recall(ranking, gold_tables, k, with_columns):
    if not gold_tables:
        return None
    top = ranking[:k]
    found = 0
    for table in gold_tables:
        if table in top or (with_columns and any(e.startswith(table + ".") for e in top)):
            found += 1
    return found / len(gold_tables)


def column_recall(ranking, gold_columns, k):
    if not gold_columns:
        return None
    top = set(ranking[:k])
    return sum(1 for c in gold_columns if c in top) / len(gold_columns)


def question_scores(ranking, q):
    """{metric@k: value or None} for one question."""
    scores = {}
    for k in KS:
        scores[f"T@{k}"] = table_recall(ranking, q["gold_tables"], k, False)
        scores[f"T+c@{k}"] = table_recall(ranking, q["gold_tables"], k, True)
        scores[f"C@{k}"] = column_recall(ranking, q["gold_columns"], k)
    return scores


SCHEMA_METRICS = ("S-T", "S-C", "S-J", "S-cols", "S-tokens")


def mean_scores(per_question):
    """Averages each metric over the questions where it is defined."""
    names = [f"{m}@{k}" for m in ("T", "T+c", "C") for k in KS]
    names += [m for m in SCHEMA_METRICS if any(m in s for s in per_question)]
    out = {}
    for name in names:
        values = [s[name] for s in per_question if s.get(name) is not None]
        out[name] = sum(values) / len(values) if values else 0.0
    return out


def rankings(responses):
    """The entity ids of each response, in order; None for an error line."""
    out = []
    for r in responses:
        if r.get("kind") == "error":
            out.append([])
        else:
            out.append([e["id"] for e in r.get("entities", [])])
    return out


def score(questions, responses, by_difficulty):
    if len(responses) != len(questions):
        sys.exit(f"eval_schema: {len(responses)} responses for {len(questions)} questions")
    per_question = [question_scores(r, q) for r, q in zip(rankings(responses), questions)]
    if any("schema" in r for r in responses):
        for s, r, q in zip(per_question, responses, questions):
            s.update(schema_scores(r.get("schema"), q))
    groups = [("all", per_question)]
    if by_difficulty:
        for d in DIFFICULTIES:
            groups.append(
                (d, [s for s, q in zip(per_question, questions) if q.get("difficulty") == d])
            )
    for name, group in groups:
        means = mean_scores(group)
        print(name, len(group), " ".join(
            f"{k}={v:.1f}" if k in ("S-cols", "S-tokens") else f"{k}={v:.3f}"
            for k, v in means.items()))


def latency(questions, channels, store, binary, evidence, n, plan=None, inject=False,
            anchored=False):
    """Median wall time of n whole-process searches, spread over the question list."""
    step = max(1, len(questions) // n)
    times = []
    for q in questions[::step][:n]:
        args = [
            binary, "--store", store, "--question", text_of(q, evidence),
            "--datasource", q["datasource"], "--max-entities", "50", "--max-memories", "0",
            "--max-example-queries", "0", "--channels", ",".join(channels), "--format", "jsonl",
        ]
        for key, value in (plan or {}).items():
            args += ["--" + key, value]
        terms = injected_from_evidence(q.get("evidence")) if inject else None
        if anchored:
            terms = anchored_from_evidence(q["question"], q.get("evidence"))
        if terms:
            args += ["--inject", json.dumps(terms)]
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    print(f"{statistics.median(times):.1f}")


def selftest():
    q = {
        "gold_tables": ["db.a", "db.b"],
        "gold_columns": ["db.a.x", "db.b.y", "db.b.z"],
    }
    ranking = ["db.a.x", "db.c", "db.b", "db.a", "db.b.z", "db.b.y"]
    s = question_scores(ranking, q)
    # top 1: a's column only -> T 0, T+c 1/2 (a via a.x), C 1/3
    assert (s["T@1"], s["T+c@1"], round(s["C@1"], 4)) == (0.0, 0.5, 0.3333), s
    # top 3: b is in, a only through its column
    assert (s["T@3"], s["T+c@3"], round(s["C@3"], 4)) == (0.5, 1.0, 0.3333), s
    # top 5: both tables, columns x and z
    assert (s["T@5"], s["T+c@5"], round(s["C@5"], 4)) == (1.0, 1.0, 0.6667), s
    assert (s["T@20"], s["C@20"]) == (1.0, 1.0), s
    # A prefix is not a child: db.ab.x does not find db.a.
    assert table_recall(["db.ab.x"], ["db.a"], 1, True) == 0.0
    # No gold column: C undefined and left out of the mean; an error line ranks nothing.
    none = question_scores([], {"gold_tables": ["db.a"], "gold_columns": []})
    assert none["C@10"] is None and none["T+c@10"] == 0.0
    means = mean_scores([s, none])
    assert means["T@5"] == 0.5 and round(means["C@5"], 4) == 0.6667, means
    assert rankings([{"kind": "error"}, {"entities": [{"id": "db.a"}]}]) == [[], ["db.a"]]
    terms = injected_from_evidence(
        "Eligible free rate for K-12 = `Free Meal Count (K-12)` / `Enrollment (K-12)`; "
        "'Alameda' refers to County Name")
    assert terms == {"phrases": ["Free Meal Count (K-12)", "Enrollment (K-12)"],
                     "synonyms": ["Eligible", "free", "rate", "County"]}, terms
    assert injected_from_evidence("") is None
    join_q = {"datasource": "db", "sql": "SELECT T2.Zip FROM frpm AS T1 INNER JOIN schools AS T2 "
              "ON T1.CDSCode = T2.`CDS Code` JOIN x ON x.id = T1.x_id WHERE T1.a = 1"}
    assert gold_joins(join_q) == [("db.frpm.cdscode", "db.schools.cds code"),
                                  ("db.frpm.x_id", "db.x.id")], gold_joins(join_q)
    answer = {"models": [{"id": "db.frpm", "columns": [{"id": "db.frpm.cdscode"}]},
                         {"id": "db.schools", "columns": [{"id": "db.schools.cds code"}]}],
              "joins": [{"from": "db.schools.cds code", "to": "db.frpm.cdscode"}]}
    got = schema_scores(answer, dict(join_q, gold_tables=["db.frpm", "db.x"],
                                     gold_columns=["db.frpm.cdscode", "db.x.id"]))
    assert (got["S-T"], got["S-C"], got["S-J"], got["S-cols"]) == (0.5, 0.5, 0.5, 2), got
    print("eval_schema selftest: ok")


def main(argv):
    if not argv:
        sys.exit(__doc__)
    cmd, rest = argv[0], argv[1:]
    flag = lambda name: name in rest
    def opt(name, default):
        return int(rest[rest.index(name) + 1]) if name in rest else default
    if cmd == "requests":
        questions = read_jsonl(rest[0])[: opt("--limit", None)]
        channels = rest[1].split(",")
        tuning = json.loads(rest[rest.index("--tuning") + 1]) if "--tuning" in rest else None
        plan = json.loads(rest[rest.index("--plan") + 1]) if "--plan" in rest else None
        for q in questions:
            print(json.dumps(request(q, channels, flag("--evidence"), tuning, plan,
                                     flag("--inject-evidence"), flag("--inject-anchors"),
                                     flag("--schema"), not flag("--no-datasource"))))
    elif cmd == "score":
        questions = read_jsonl(rest[0])[: opt("--limit", None)]
        score(questions, read_jsonl(rest[1]), flag("--by-difficulty"))
    elif cmd == "latency":
        questions = read_jsonl(rest[0])
        plan = json.loads(rest[rest.index("--plan") + 1]) if "--plan" in rest else None
        latency(questions, rest[1].split(","), rest[2], rest[3], flag("--evidence"), opt("--n", 30),
                plan, flag("--inject-evidence"), flag("--inject-anchors"))
    elif cmd == "selftest":
        selftest()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
