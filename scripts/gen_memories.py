#!/usr/bin/env python3
"""Writes N synthetic memory records (JSON lines) tagged with the demo shop's entities.

Usage: gen_memories.py N   Deterministic: the same N always gives the same bytes.
"""
import json
import random
import sys

TAGS = ["shop.orders", "shop.orders.status", "shop.orders.order_total", "shop.orders.revenue",
        "shop.payments.payment_method", "shop.payments.amount", "shop.customers.name",
        "shop.stores.tax_rate", "shop.products.type", "shop.order_items.quantity"]
WORDS = ("revenue refund returned order payment split gift card tax store city customer product "
         "jaffle beverage weekend weekday growth opened dollars cents null exclude include").split()


def main():
    n = int(sys.argv[1])
    rng = random.Random(7)
    for i in range(n):
        record = {
            "kind": "memory",
            "id": f"kb.{i}",
            "learning": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + ".",
            "entities": sorted(set(rng.sample(TAGS, rng.randint(1, 3)))),
            "created_at": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
        }
        if i % 10 == 0:
            record["description"] = f"Synthetic note {i}."
        sys.stdout.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
