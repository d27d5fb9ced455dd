#!/usr/bin/env python3
"""One long-lived slayer-search answering N requests, as an agent's tool wrapper drives it:
per-request round-trip latency (write the request, read the whole reply), median and p95.

    bench_agent.py BIN_DIR batch|mcp CHANNELS WRITER [N] [questions]

CHANNELS is `entities,text` or `entities,text,dense`; WRITER 1 runs another process that saves
a memory every 100 ms for the whole run (`slayer-memory save --no-embed`, each its own
process and transaction, as a second agent would). The requests are distinct questions (so no
question embedding is reused) alternating with entity lookups, the same for both front ends:
`--batch -` gets request lines; `mcp` gets `tools/call search` after the initialize handshake,
with the batch defaults as caps. `questions` asks only the distinct questions (no entity
lookups): the time of an all-channel search itself. Prints `median p95 writes` (ms, ms, count).
"""
import json
import os
import random
import subprocess
import sys
import threading
import time

BIN, MODE, CHANNELS, WRITER = sys.argv[1:5]
N = int(sys.argv[5]) if len(sys.argv) > 5 else 500
QUESTIONS_ONLY = len(sys.argv) > 6 and sys.argv[6] == "questions"
WORDS = ("revenue refund order payment customer region channel status amount invoice product "
         "category supplier shipment warehouse discount coupon tax currency country city").split()


def requests():
    rng = random.Random(3)
    for i in range(N):
        if i % 2 or QUESTIONS_ONLY:
            yield {"question": " ".join(rng.sample(WORDS, rng.randint(3, 6)))}
        else:
            yield {"entities": [f"bench.model_{rng.randrange(200):03d}"]}


def writer(stop, count):
    rng = random.Random(9)
    while not stop.is_set():
        start = time.monotonic()
        subprocess.run([os.path.join(BIN, "slayer-memory"), "-q", "save", "--no-embed",
                        "--learning", " ".join(rng.sample(WORDS, 8)),
                        "--entities", f"bench.model_{rng.randrange(200):03d}"],
                       check=True, stdout=subprocess.DEVNULL)
        count[0] += 1
        stop.wait(max(0.0, 0.1 - (time.monotonic() - start)))


def main():
    channels = CHANNELS.split(",")
    if MODE == "batch":
        args = ["--batch", "-", "--channels", CHANNELS]
    else:
        args = ["mcp"]
    proc = subprocess.Popen([os.path.join(BIN, "slayer-search"), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(message):
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def receive():
        line = proc.stdout.readline()
        if not line:
            sys.exit("slayer-search exited early")
        return json.loads(line)

    if MODE == "mcp":
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})
        receive()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def ask(i, request):
        if MODE == "batch":
            send(request)
            reply = receive()
            if reply.get("kind") == "error":
                sys.exit(f"request failed: {reply}")
        else:
            arguments = dict(request, channels=channels, max_results=12, max_memories=5,
                             max_example_queries=2, max_entities=5)
            send({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                  "params": {"name": "search", "arguments": arguments}})
            reply = receive()
            if "error" in reply or reply["result"].get("isError"):
                sys.exit(f"request failed: {reply}")

    # Warm up (model load, first index open) before the clock and the writer start.
    ask(-1 if MODE == "batch" else N + 1, {"question": "warm up the model"})
    stop, count = threading.Event(), [0]
    thread = threading.Thread(target=writer, args=(stop, count)) if WRITER == "1" else None
    if thread:
        thread.start()
        time.sleep(0.15)
    times = []
    for i, request in enumerate(requests()):
        start = time.perf_counter()
        ask(i, request)
        times.append((time.perf_counter() - start) * 1000)
    if thread:
        stop.set()
        thread.join()
    proc.stdin.close()
    proc.wait()
    times.sort()
    print(f"{times[len(times) // 2]:.2f} {times[int(len(times) * 0.95)]:.2f} {count[0]}")


main()
