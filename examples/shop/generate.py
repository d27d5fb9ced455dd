#!/usr/bin/env python3
"""Generate the demo shop warehouse in examples/shop/data/ from jafgen.

The data is produced by the Jaffle Shop simulation of dbt Labs' `jafgen`
package (version 0.4.14, Apache-2.0), run for a short window at a reduced
scale, with every source of randomness seeded so that re-running this script
produces byte-identical CSV files.

Usage (from the repository root):

    python3 -m venv /tmp/jafvenv
    /tmp/jafvenv/bin/pip install -r examples/shop/requirements.txt
    /tmp/jafvenv/bin/python examples/shop/generate.py

See examples/shop/data/README.md for what is taken from jafgen as-is and what
this script derives on top of it (order status, payments).
"""

import csv
import datetime
import os
import random
import sys
import uuid
from decimal import Decimal

import numpy as np
from faker import Faker

# --------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------

SEED = 20240601

# jafgen's Simulation sizes each store's market as `TAM * scale` with
# scale = 100 (900 to 1400 potential customers per store).  We shrink every
# market by this factor to keep the data set small.
MARKET_SCALE = 0.022

# jafgen counts days from Day.EPOCH (2018-09-01).  Stores open on days 0, 192,
# 605, 615, 920 and 1107, so a window starting on day 1096 (2021-09-01) has
# five stores trading and sees the sixth (Los Angeles) open on 2021-09-12.
START_DAY = 1096
SIM_DAYS = 61  # 2021-09-01 .. 2021-10-31 inclusive

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# --------------------------------------------------------------------------
# Determinism: seed everything *before* importing jafgen, which creates its
# Faker instance and product/supply tables at import time and calls
# uuid.uuid4(), random and numpy.random while building the simulation.
# --------------------------------------------------------------------------

random.seed(SEED)
np.random.seed(SEED)
Faker.seed(SEED)

_uuid_rng = random.Random(SEED + 1)


def _seeded_uuid4():
    return uuid.UUID(int=_uuid_rng.getrandbits(128), version=4)


uuid.uuid4 = _seeded_uuid4

from jafgen.curves import Day  # noqa: E402
from jafgen.simulation import Simulation  # noqa: E402
from jafgen.stores.inventory import Inventory  # noqa: E402
from jafgen.stores.market import Market  # noqa: E402
from jafgen.stores.stock import Stock  # noqa: E402

# jafgen seeds Faker itself on import (Faker.seed(123456789)); re-seed with ours.
Faker.seed(SEED)


def cents_to_dollars(cents: int) -> str:
    return str((Decimal(cents) / 100).quantize(Decimal("0.01")))


def write_csv(name, header, rows):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"{name}: {len(rows)} rows", file=sys.stderr)


def run():
    # ---------------------------------------------------------------- simulate
    sim = Simulation(years=1, prefix="shop")
    # Rebuild each market with a smaller addressable population, re-using the
    # Store objects jafgen created (same names, opening days, tax rates).
    sim.markets = [
        Market(market.store, num_customers=int(round(tam * MARKET_SCALE)))
        for market, (_, _, _, _, tam, _) in zip(sim.markets, sim.stores)
    ]
    # Same loop as Simulation.run_simulation, over [START_DAY, START_DAY+SIM_DAYS).
    for i in range(START_DAY, START_DAY + SIM_DAYS):
        day = Day(i)
        for market in sim.markets:
            for order, _tweet in market.sim_day(day):
                if order:
                    sim.orders.append(order)
                    cid = order.customer.customer_id
                    if cid not in sim.customers:
                        sim.customers[cid] = order.customer

    last_date = Day(START_DAY + SIM_DAYS - 1).date.date()

    # ------------------------------------------------------------- dimensions
    store_ids = {}
    store_rows = []
    for market in sim.markets:
        d = market.store.to_dict()
        store_ids[d["id"]] = len(store_ids) + 1
        store_rows.append([store_ids[d["id"]], d["name"], d["opened_at"], d["tax_rate"]])

    product_rows = []
    for d in Inventory.to_dict():
        product_rows.append(
            [d["sku"], d["name"].strip(), d["type"], cents_to_dollars(d["price"]), d["description"].strip()]
        )
    skus = {r[0] for r in product_rows}

    supply_rows = []
    for d in Stock.to_dict():
        supply_rows.append(
            [d["id"], d["name"], cents_to_dollars(d["cost"]), d["perishable"].lower(), d["sku"]]
        )

    # ------------------------------------------------------------------ orders
    # jafgen emits orders day by day, store by store; give them integer ids in
    # chronological order (ties keep jafgen's emission order).
    all_orders = list(enumerate(sim.orders))
    empty_orders = [o for _, o in all_orders if len(o.items) == 0]
    orders = [(k, o) for k, o in all_orders if len(o.items) > 0]
    orders.sort(key=lambda ko: (ko[1].order_time.date, ko[0]))

    customer_ids = {}
    for _, o in orders:
        cid = o.customer.customer_id
        if cid not in customer_ids:
            customer_ids[cid] = len(customer_ids) + 1
    # Customers whose only jafgen orders were empty (no items) still exist in
    # jafgen's customer table; keep them, numbered after the rest.
    for cid in sim.customers:
        if cid not in customer_ids:
            customer_ids[cid] = len(customer_ids) + 1

    customer_rows = sorted(
        ([customer_ids[cid], c.to_dict()["name"]] for cid, c in sim.customers.items()),
        key=lambda r: r[0],
    )

    status_rng = random.Random(SEED + 2)
    pay_rng = random.Random(SEED + 3)
    methods = ["credit_card", "debit_card", "gift_card", "bank_transfer"]
    method_weights = [0.55, 0.25, 0.08, 0.12]

    order_rows, item_rows, payment_rows = [], [], []
    for n, (_, o) in enumerate(orders, start=1):
        d = o.to_dict()
        ordered_at = d["ordered_at"]
        subtotal, tax, total = d["subtotal"], d["tax_paid"], d["order_total"]
        assert subtotal == sum(int(it.item.price * 100) for it in o.items)
        assert total == subtotal + tax

        # Derived: status.
        age = (last_date - o.order_time.date.date()).days
        r = status_rng.random()
        if age == 0 and r < 0.7 or age == 1 and r < 0.3:
            status = "placed"
        elif status_rng.random() < 0.04:
            status = "return_pending" if age < 7 else "returned"
        else:
            status = "completed"

        order_rows.append(
            [n, customer_ids[d["customer"]], store_ids[d["store_id"]], ordered_at,
             cents_to_dollars(subtotal), cents_to_dollars(tax), cents_to_dollars(total), status]
        )

        for it in o.items:
            item_rows.append([len(item_rows) + 1, n, it.item.sku, 1, cents_to_dollars(int(it.item.price * 100))])

        # Derived: payments.
        if pay_rng.random() < 0.05 and total > 500:
            gift = min(pay_rng.choice([500, 1000, 1500, 2000, 2500]), total - 100)
            gift = max(gift, 100)
            parts = [("gift_card", gift), ("credit_card", total - gift)]
        else:
            parts = [(pay_rng.choices(methods, weights=method_weights)[0], total)]
        assert sum(a for _, a in parts) == total and all(a > 0 for _, a in parts)
        for method, amount in parts:
            payment_rows.append([len(payment_rows) + 1, n, method, cents_to_dollars(amount), ordered_at])

    # ----------------------------------------------------------------- checks
    for r in item_rows:
        assert r[2] in skus
    cust_set = {r[0] for r in customer_rows}
    store_set = {r[0] for r in store_rows}
    for r in order_rows:
        assert r[1] in cust_set and r[2] in store_set
    for r in supply_rows:
        assert r[4] in skus

    os.makedirs(OUT_DIR, exist_ok=True)
    write_csv("customers.csv", ["customer_id", "name"], customer_rows)
    write_csv("stores.csv", ["store_id", "name", "opened_at", "tax_rate"], store_rows)
    write_csv("products.csv", ["sku", "name", "type", "price", "description"], product_rows)
    write_csv("supplies.csv", ["supply_id", "name", "cost", "perishable", "sku"], supply_rows)
    write_csv(
        "orders.csv",
        ["order_id", "customer_id", "store_id", "ordered_at", "subtotal", "tax_paid", "order_total", "status"],
        order_rows,
    )
    write_csv("order_items.csv", ["order_item_id", "order_id", "sku", "quantity", "unit_price"], item_rows)
    write_csv("payments.csv", ["payment_id", "order_id", "payment_method", "amount", "paid_at"], payment_rows)
    print(f"dropped {len(empty_orders)} jafgen orders with no items", file=sys.stderr)


if __name__ == "__main__":
    run()
