#!/usr/bin/env python3
"""The data and scoring side of scripts/eval-scifact.sh (standard library only).

  eval_scifact.py memories CORPUS [--docs IDS_FILE]      memory records for slayer-memory import
  eval_scifact.py requests QUERIES QRELS CHANNELS [--queries N] [--tuning JSON] [--plan JSON]
                                                          slayer-search --batch requests
  eval_scifact.py score QRELS RESPONSES [--queries N]    nDCG@10 recall@100 MRR@10 (one line)
  eval_scifact.py smoke-docs CORPUS QRELS N Q            ids of a small corpus holding the
                                                          judged docs of the first Q queries
  eval_scifact.py selftest                                the metrics against hand-computed values

Metrics follow trec_eval: gain = the judged relevance, discount log2(rank + 1), ideal from the
judgements; recall over judged-relevant docs; reciprocal rank of the first relevant doc in the
top 10. Every test query counts (no answer scores 0); ties keep the ranking's order.
"""
import json
import math
import sys


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path):
    qrels = {}
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, rel = line.split("\t")
            qrels.setdefault(qid, {})[did] = int(rel)
    return qrels


def test_queries(qrels, limit=None):
    ids = sorted(qrels, key=lambda q: int(q) if q.isdigit() else q)
    return ids[:limit] if limit else ids


def ndcg_at(ranking, judged, k=10):
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted((r for r in judged.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranking, judged, k=100):
    relevant = {d for d, r in judged.items() if r > 0}
    return len(relevant & set(ranking[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranking, judged, k=10):
    for i, d in enumerate(ranking[:k]):
        if judged.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def score(qrels, rankings, queries):
    n = len(queries)
    return (
        sum(ndcg_at(rankings.get(q, []), qrels[q]) for q in queries) / n,
        sum(recall_at(rankings.get(q, []), qrels[q]) for q in queries) / n,
        sum(mrr_at(rankings.get(q, []), qrels[q]) for q in queries) / n,
    )


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    cmd = sys.argv[1]
    if cmd == "memories":
        keep = None
        if arg("--docs"):
            with open(arg("--docs"), encoding="utf-8") as f:
                keep = {line.strip() for line in f if line.strip()}
        for doc in read_jsonl(sys.argv[2]):
            if keep is not None and doc["_id"] not in keep:
                continue
            learning = f"{doc['title']}\n\n{doc['text']}" if doc["title"] else doc["text"]
            print(json.dumps({"kind": "memory", "id": doc["_id"], "learning": learning,
                              "entities": [], "created_at": "2020-01-01T00:00:00Z"}))
    elif cmd == "requests":
        texts = {q["_id"]: q["text"] for q in read_jsonl(sys.argv[2])}
        limit = int(arg("--queries", 0)) or None
        channels = sys.argv[4].split(",")
        tuning = json.loads(arg("--tuning", "{}"))
        plan = json.loads(arg("--plan", "{}"))
        for q in test_queries(read_qrels(sys.argv[3]), limit):
            print(json.dumps({"question": texts[q], "max_memories": 100, "max_example_queries": 0,
                              "max_entities": 0, "channels": channels, "tuning": tuning,
                              **plan}))
    elif cmd == "score":
        qrels = read_qrels(sys.argv[2])
        limit = int(arg("--queries", 0)) or None
        queries = test_queries(qrels, limit)
        responses = read_jsonl(sys.argv[3])
        assert len(responses) == len(queries), (len(responses), len(queries))
        rankings = {q: [h["id"] for h in r["memories"]] for q, r in zip(queries, responses)}
        print("%.3f %.3f %.3f" % score(qrels, rankings, queries))
    elif cmd == "smoke-docs":
        qrels = read_qrels(sys.argv[3])
        n, q = int(sys.argv[4]), int(sys.argv[5])
        ids = []
        for query in test_queries(qrels, q):
            ids.extend(d for d in qrels[query] if d not in ids)
        for doc in read_jsonl(sys.argv[2]):
            if len(ids) >= n:
                break
            if doc["_id"] not in ids:
                ids.append(doc["_id"])
        print("\n".join(ids))
    elif cmd == "selftest":
        judged = {"a": 1, "b": 1}
        # Relevant at ranks 2 and 3: DCG = 1/log2(3) + 1/log2(4), IDCG = 1 + 1/log2(3).
        got = ndcg_at(["x", "a", "b"], judged)
        want = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3))
        assert abs(got - want) < 1e-12, (got, want)
        assert abs(want - 0.6934264036172708) < 1e-12
        assert recall_at(["x", "a"], judged) == 0.5
        assert mrr_at(["x", "y", "b"], judged) == 1 / 3
        assert mrr_at(["x"] * 10 + ["a"], judged) == 0.0
        assert ndcg_at([], judged) == 0.0
        # Graded relevance: gain is the grade itself (trec_eval), not 2^grade - 1.
        assert abs(ndcg_at(["g"], {"g": 2, "h": 1}) - 2 / (2 + 1 / math.log2(3))) < 1e-12
        qrels = {"1": judged, "2": {"c": 1}}
        assert score(qrels, {"1": ["a", "b"]}, ["1", "2"]) == (0.5, 0.5, 0.5)
        print("selftest ok")
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
