#!/usr/bin/env python3
"""Writes a synthetic catalog for benchmarks: one datasource, M models x C columns.

Usage: gen_catalog.py MODELS COLUMNS [--touch MODEL_INDEX]  (writes JSON lines to stdout)
--touch changes one column's description in that model, for the incremental-load benchmark.
Deterministic: the same arguments always give the same bytes.
"""
import json
import random
import sys

TYPES = ["TEXT", "INT", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP"]
WORDS = ("order customer payment refund region channel status amount revenue invoice product "
         "category supplier shipment warehouse discount coupon tax currency country city").split()


def main():
    models, columns = int(sys.argv[1]), int(sys.argv[2])
    touch = int(sys.argv[sys.argv.index("--touch") + 1]) if "--touch" in sys.argv else None
    rng = random.Random(42)
    out = sys.stdout
    out.write(json.dumps({"kind": "datasource", "name": "bench", "type": "duckdb",
                          "description": "Synthetic warehouse for benchmarks."}) + "\n")
    for m in range(models):
        cols = []
        for c in range(columns):
            ctype = TYPES[(m + c) % len(TYPES)]
            col = {"name": f"col_{c:02d}_{rng.choice(WORDS)}", "type": ctype,
                   "sql": f"col_{c:02d}",
                   "description": f"The {rng.choice(WORDS)} {rng.choice(WORDS)} of the row."}
            if c == 0:
                col["primary_key"] = True
            elif ctype == "TEXT":
                values = [f"{rng.choice(WORDS)}_{i}" for i in range(rng.randint(3, 50))]
                col["sampled_values"] = values
                col["distinct_count"] = len(values) + rng.choice([0, 0, 100])
            elif ctype in ("INT", "DOUBLE"):
                col["format"] = {"type": "integer" if ctype == "INT" else "float"}
                col["sampled"] = f"{rng.randint(0, 10)} .. {rng.randint(100, 10000)}"
            if touch == m and c == 1:
                col["description"] = "Changed description for the incremental benchmark."
            cols.append(col)
        model = {"kind": "model", "name": f"model_{m:03d}", "data_source": "bench",
                 "sql_table": f"analytics.model_{m:03d}",
                 "description": f"Model {m} about {rng.choice(WORDS)}s.",
                 "columns": cols,
                 "measures": [{"name": "total", "formula": f"{cols[2]['name']}:sum"}]}
        out.write(json.dumps(model, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
