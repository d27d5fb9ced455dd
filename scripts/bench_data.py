#!/usr/bin/env python3
"""Synthetic data the benchmarks share (deterministic: the same arguments give the same bytes).

    bench_data.py memories N      N memory records (JSON lines), each tagged with 1-3 models of
                                  the `gen_catalog.py` catalog (`bench.model_000` ...)
    bench_data.py fill-rows STORE an embedding row for every doc of STORE under the local
                                  model: the doc's right content hash (so `slayer-embed refresh`
                                  sees it unchanged) and a random 384-dim unit vector; prints
                                  how many
"""
import hashlib
import json
import random
import sqlite3
import struct
import sys

WORDS = ("revenue refund order payment customer region channel status amount invoice product "
         "category supplier shipment warehouse discount coupon tax currency country city").split()


def memories(n):
    rng = random.Random(11)
    for i in range(n):
        tags = sorted({f"bench.model_{rng.randrange(200):03d}" for _ in range(rng.randint(1, 3))})
        print(json.dumps({"kind": "memory", "id": str(i + 1),
                          "learning": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 25))),
                          "entities": tags, "created_at": f"2026-01-01T00:00:{i % 60:02d}Z"}))


def fill_rows(store):
    c = sqlite3.connect(store)
    rng = random.Random(5)
    rows = []
    for cid, text, emb in c.execute("select canonical_id, text, embedding_text from docs"):
        body = emb if emb is not None else text
        v = [rng.gauss(0, 1) for _ in range(384)]
        n = sum(x * x for x in v) ** 0.5
        rows.append((cid, "local/all-MiniLM-L6-v2", hashlib.sha256(body.encode()).hexdigest(), 384,
                     struct.pack("<384f", *[x / n for x in v]), "t"))
    c.executemany("insert or replace into embeddings values (?,?,?,?,?,?)", rows)
    c.commit()
    print(len(rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["memories"]:
        memories(int(sys.argv[2]))
    elif sys.argv[1:2] == ["fill-rows"]:
        fill_rows(sys.argv[2])
    else:
        sys.exit(__doc__)
