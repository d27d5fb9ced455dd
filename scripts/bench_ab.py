#!/usr/bin/env python3
"""The A/B of two builds of slayer-search, in one run, base and head alternating (issue 47).

    bench_ab.py BASE_BIN HEAD_BIN WORK SIZES...

scripts/bench_ab.sh builds both and lays out the stores: WORK/{base,head}-N.db for each size N
(a 200 x 20 catalog, N memories, a 384-dim row for every doc). Per size it prints one table:
whole-process one-shot searches (median of ROUNDS calls per build, the builds taking turns
call by call; peak RSS is the largest of those calls), a search right after a memory is saved,
and one long-lived `--batch -` per build answering REQUESTS distinct questions, the two
processes asked in turn, question by question. Then the served searches' stages
(`SLAYER_TIMINGS`), per question.

Questions are broad (every word common in the generated memories: they match most of them,
as an analyst's words match most notes of a busy store) and selective (words of the catalog
that no memory uses). Sizes of 1,000,000 and more run the served rows only, as every size does
with SERVED_ONLY=1.
"""
import json
import os
import random
import subprocess
import sys
import time

BASE_BIN, HEAD_BIN, WORK = sys.argv[1:4]
SIZES = [int(n) for n in sys.argv[4:]]
ROUNDS = int(os.environ.get("ROUNDS", "11"))
REQUESTS = int(os.environ.get("REQUESTS", "200"))
BUILDS = {"base": BASE_BIN, "head": HEAD_BIN}

# scripts/bench_data.py's memory vocabulary: each word is in about half of the memories.
WORDS = ("revenue refund order payment customer region channel status amount invoice product "
         "category supplier shipment warehouse discount coupon tax currency country city").split()
BROAD = ["refund amount by customer region", "payment status by channel",
         "revenue by product category", "invoice tax by country and currency",
         "discount coupon orders by city", "shipment warehouse status by supplier",
         "refunds by region", "customer revenue"]
# Words of the catalog only (the datasource's description, every column's "of the row").
SELECTIVE = ["synthetic benchmarks", "which row is synthetic", "the row of benchmarks",
             "synthetic warehouse"]


def one_shot(binary, store, args):
    """Runs one search; returns (ms, peak MiB)."""
    env = dict(os.environ, SLAYER_STORE=store)
    started = time.perf_counter()
    proc = subprocess.Popen([os.path.join(binary, "slayer-search"), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    ms = (time.perf_counter() - started) * 1000
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{binary}: slayer-search {args} failed ({proc.returncode}): {err}")
    return ms, usage.ru_maxrss / 1024


def save(binary, store, i):
    env = dict(os.environ, SLAYER_STORE=store)
    subprocess.run([os.path.join(binary, "slayer-memory"), "-q", "save", "--learning",
                    f"refunds of order {i} are booked net of tax in the region",
                    "--entities", f"bench.model_{i % 200:03d}"],
                   env=env, check=True, stdout=subprocess.DEVNULL)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def row(name, base, head, peaks=None):
    b, h = median(base), median(head)
    ratio = h / b if b else float("nan")
    peak = f"{peaks['base']:.0f} / {peaks['head']:.0f}" if peaks else ""
    print(f"| {name:<46} | {b:8.1f} | {h:8.1f} | {ratio:5.2f} | {peak:>13} |")


def one_shot_rows(n):
    stores = {b: f"{WORK}/{b}-{n}.db" for b in BUILDS}
    shapes = [
        ("question, text channels, broad", lambda i: ["--channels", "entities,text", "--question",
                                                      BROAD[i % len(BROAD)]]),
        ("question, text channels, selective", lambda i: ["--channels", "entities,text",
                                                          "--question",
                                                          SELECTIVE[i % len(SELECTIVE)]]),
        ("question, all channels, broad", lambda i: ["--question", BROAD[i % len(BROAD)]]),
        ("question, all channels, selective", lambda i: ["--question",
                                                         SELECTIVE[i % len(SELECTIVE)]]),
        ("entity lookup", lambda i: ["--entity", f"bench.model_{(i * 37) % 200:03d}"]),
    ]
    for name, args in shapes:
        times = {b: [] for b in BUILDS}
        peaks = {b: 0.0 for b in BUILDS}
        for i in range(ROUNDS):
            order = list(BUILDS) if i % 2 == 0 else list(reversed(list(BUILDS)))
            for b in order:
                ms, mib = one_shot(BUILDS[b], stores[b], args(i))
                times[b].append(ms)
                peaks[b] = max(peaks[b], mib)
        row(name, times["base"], times["head"], peaks)
    times = {b: [] for b in BUILDS}
    peaks = {b: 0.0 for b in BUILDS}
    for i in range(ROUNDS):
        order = list(BUILDS) if i % 2 == 0 else list(reversed(list(BUILDS)))
        for b in order:
            save(BUILDS[b], stores[b], i)
            ms, mib = one_shot(BUILDS[b], stores[b], ["--question", BROAD[i % len(BROAD)]])
            times[b].append(ms)
            peaks[b] = max(peaks[b], mib)
    row("search right after a save, all channels", times["base"], times["head"], peaks)


class Served:
    """One `slayer-search --batch -` of a build, its stages timed."""

    def __init__(self, binary, store, channels):
        env = dict(os.environ, SLAYER_STORE=store, SLAYER_TIMINGS="1")
        self.proc = subprocess.Popen(
            [os.path.join(binary, "slayer-search"), "--batch", "-", "--channels", channels],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1)

    def ask(self, question):
        started = time.perf_counter()
        self.proc.stdin.write(json.dumps({"question": question}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        ms = (time.perf_counter() - started) * 1000
        if not line or json.loads(line).get("kind") == "error":
            sys.exit(f"served search failed: {line!r} {self.proc.stderr.read()}")
        return ms

    def stages(self):
        self.proc.stdin.close()
        err = self.proc.stderr.read()
        self.proc.wait()
        for line in reversed(err.splitlines()):
            if '"timings"' in line:
                return json.loads(line)["stages"]
        return {}


def served_rows(n, stages_out):
    stores = {b: f"{WORK}/{b}-{n}.db" for b in BUILDS}
    rng = random.Random(3)
    questions = [" ".join(rng.sample(WORDS, rng.randint(3, 6))) for _ in range(REQUESTS)]
    for channels in ["entities,text,dense", "entities,text"]:
        served = {b: Served(BUILDS[b], stores[b], channels) for b in BUILDS}
        for s in served.values():
            s.ask("warm up the model")
        times = {b: [] for b in BUILDS}
        for i, q in enumerate(questions):
            order = list(BUILDS) if i % 2 == 0 else list(reversed(list(BUILDS)))
            for b in order:
                times[b].append(served[b].ask(q))
        label = "all channels" if "dense" in channels else "text channels"
        row(f"served --batch, broad, {label} (median)", times["base"], times["head"])
        print(f"| {'  p95':<46} | {p95(times['base']):8.1f} | {p95(times['head']):8.1f} |"
              f" {p95(times['head']) / p95(times['base']):5.2f} | {'':>13} |")
        if "dense" in channels:
            for b, s in served.items():
                stages_out[b] = s.stages()
        else:
            for s in served.values():
                s.stages()


def main():
    print(f"A/B of slayer-search: base {BASE_BIN}, head {HEAD_BIN}; 200 models x 20 columns,"
          f" 384-dim rows; {os.cpu_count()} cores; one-shot: median of {ROUNDS} calls each,"
          f" served: {REQUESTS} distinct broad questions each, the builds in turn")
    for n in SIZES:
        print()
        print(f"{n} memories")
        print()
        print(f"| {'workload':<46} | {'base ms':>8} | {'head ms':>8} | {'h/b':>5} |"
              f" {'peak MiB b/h':>13} |")
        print(f"|{'-' * 48}|{'-' * 10}|{'-' * 10}|{'-' * 7}|{'-' * 15}|")
        if n < 1_000_000 and not os.environ.get("SERVED_ONLY"):
            one_shot_rows(n)
        stages = {}
        served_rows(n, stages)
        print()
        print(f"Served stages, all channels, ms per question ({REQUESTS + 1} questions,"
              " summed where a stage runs beside another):")
        print()
        names = list(dict.fromkeys([*stages.get("base", {}), *stages.get("head", {})]))
        print(f"| {'stage':<16} | {'base':>7} | {'head':>7} |")
        print(f"|{'-' * 18}|{'-' * 9}|{'-' * 9}|")
        for name in names:
            cells = [stages.get(b, {}).get(name) for b in ("base", "head")]
            shown = [f"{c / (REQUESTS + 1):7.2f}" if c is not None else f"{'-':>7}"
                     for c in cells]
            print(f"| {name:<16} | {shown[0]} | {shown[1]} |")


if __name__ == "__main__":
    main()
