#!/usr/bin/env python3
"""Writes a synthetic dbt project for benchmarks: M semantic models x C columns, legacy spec.

Usage: gen_dbt.py DIR MODELS COLUMNS [--latest]
Each model has a primary entity, a foreign entity to the model before it, C-4 dimensions (one
a time dimension), two measures and three metrics (simple, filtered simple, ratio), one file per
model. --latest writes the same layer in dbt's latest spec. Deterministic.
"""
import os
import sys


def legacy(i, columns):
    prev = f"  - name: m{i - 1:04d}\n        type: foreign\n        expr: m{i - 1:04d}_id\n" if i else ""
    dims = "".join(
        f"      - name: d{j:02d}\n        type: categorical\n        description: Dimension {j} of model {i}.\n"
        for j in range(columns - 4))
    return f"""semantic_models:
  - name: m{i:04d}
    description: Model {i} of the benchmark.
    model: ref('t{i:04d}')
    defaults:
      agg_time_dimension: created_at
    entities:
      - name: m{i:04d}
        type: primary
        expr: m{i:04d}_id
{prev.replace("  - name", "      - name") if prev else ""}    dimensions:
      - name: created_at
        type: time
        type_params:
          time_granularity: day
{dims}    measures:
      - name: amount_{i:04d}
        agg: sum
        expr: amount
      - name: rows_{i:04d}
        agg: count
        expr: m{i:04d}_id
metrics:
  - name: amount_{i:04d}
    label: Amount {i}
    type: simple
    type_params:
      measure: amount_{i:04d}
  - name: big_amount_{i:04d}
    label: Big amount {i}
    type: simple
    type_params:
      measure: amount_{i:04d}
    filter: "{{{{ Dimension('m{i:04d}__d00') }}}} = 'big'"
  - name: share_{i:04d}
    label: Share {i}
    type: ratio
    type_params:
      numerator: big_amount_{i:04d}
      denominator: amount_{i:04d}
"""


def latest(i, columns):
    fk = (f"      - name: m{i - 1:04d}_id\n        entity:\n          name: m{i - 1:04d}\n          type: foreign\n"
          if i else "")
    dims = "".join(
        f"      - name: d{j:02d}\n        description: Dimension {j} of model {i}.\n        dimension: categorical\n"
        for j in range(columns - 4))
    return f"""models:
  - name: m{i:04d}
    description: Model {i} of the benchmark.
    semantic_model: true
    agg_time_dimension: created_at
    columns:
      - name: m{i:04d}_id
        entity:
          name: m{i:04d}
          type: primary
{fk}      - name: created_at
        dimension:
          type: time
        granularity: day
{dims}    metrics:
      - name: amount_{i:04d}
        agg: sum
        expr: amount
      - name: big_amount_{i:04d}
        agg: sum
        expr: amount
        filter: "{{{{ Dimension('m{i:04d}__d00') }}}} = 'big'"
      - name: share_{i:04d}
        type: ratio
        numerator: big_amount_{i:04d}
        denominator: amount_{i:04d}
"""


def main():
    out, models, columns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    write = latest if "--latest" in sys.argv else legacy
    os.makedirs(f"{out}/models", exist_ok=True)
    with open(f"{out}/dbt_project.yml", "w") as f:
        f.write("name: bench\nconfig-version: 2\n")
    for i in range(models):
        with open(f"{out}/models/m{i:04d}.yml", "w") as f:
            f.write(write(i, columns))


main()
