"""Review of agent memories through `slayer-search mcp`, driven by the official MCP Python SDK:
with the store's review setting on, `save_memory` proposes (the search tool does not return the
memory until `slayer-memory approve`); `mcp --review` proposes whatever the setting. Run by the
Rust test `review::mcp_saves_wait_for_review`; exits non-zero with the failed check on stderr.

    python mcp_review_client.py BIN_DIR STORE
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN, STORE = sys.argv[1:3]
ENV = {"SLAYER_STORE": STORE, "SLAYER_MODEL_DIR": "/nonexistent/slayer-models"}


def check(condition, what, detail=None):
    if not condition:
        sys.stderr.write(f"check failed: {what}\n")
        if detail is not None:
            sys.stderr.write(f"  got: {detail}\n")
        sys.exit(1)


def memory(*args):
    """slayer-memory in another process, as the reviewing person runs it."""
    env = dict(os.environ, **ENV)
    out = subprocess.run([os.path.join(BIN, "slayer-memory"), *args], env=env, capture_output=True, text=True)
    check(out.returncode == 0, f"slayer-memory {args}", out.stderr)
    return out.stdout


async def found(session, question):
    result = await session.call_tool("search", {"question": question})
    check(not result.is_error, "search succeeds", result.content)
    return [hit["id"] for hit in result.structured_content["results"]]


async def save(session, learning):
    saved = await session.call_tool("save_memory", {"learning": learning, "linked_entities": ["mydb.orders"]})
    check(not saved.is_error, "save_memory succeeds", saved.content)
    return saved


async def session_on(args, body):
    server = StdioServerParameters(command=os.path.join(BIN, "slayer-search"), args=["mcp", "--store", STORE, *args], env=ENV)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await body(session)


async def with_the_setting(session):
    # Off (the default): an agent's save is searched at once.
    saved = await save(session, "Cobalt shipments leave on Mondays.")
    first = saved.structured_content["memory_id"]
    check("proposed" not in saved.structured_content, "not proposed with review off", saved.structured_content)
    check(first in await found(session, "cobalt shipments"), "found at once", first)
    # On: the next save waits for a person.
    memory("review", "--require", "on")
    saved = await save(session, "Cobalt shipments are insured.")
    second = saved.structured_content["memory_id"]
    check(saved.structured_content.get("proposed") is True, "proposed with review on", saved.structured_content)
    check("as proposed" in saved.content[0].text, "the text says it waits", saved.content[0].text)
    check(second not in await found(session, "cobalt shipments insured"), "a proposal is not searched", second)
    queue = [json.loads(line)["id"] for line in memory("review", "--format", "jsonl").splitlines()]
    check(queue == [second], "review lists it", queue)
    memory("approve", second)
    check(second in await found(session, "cobalt shipments insured"), "approved: searched at once", second)
    memory("review", "--require", "off")


async def with_the_flag(session):
    saved = await save(session, "Umber pallets are reused.")
    proposal = saved.structured_content["memory_id"]
    check(saved.structured_content.get("proposed") is True, "mcp --review proposes", saved.structured_content)
    check(proposal not in await found(session, "umber pallets"), "a proposal is not searched", proposal)
    memory("reject", proposal)
    shown = await session.call_tool("forget_memory", {"id": proposal})
    check(shown.is_error, "a rejected proposal is gone", shown.content)


async def main():
    await session_on([], with_the_setting)
    await session_on(["--review"], with_the_flag)
    print("ok")


asyncio.run(main())
