"""Drives `slayer-search mcp` through the official MCP Python SDK (`mcp` on PyPI), as an agent's
host would: initialize, list tools, search, save, search, forget, search, a tool error, a
protocol error, and writes by other processes between calls; then a second session on the
2026-07-28 protocol (discover instead of initialize). Run by the Rust test
`mcp::the_python_sdk_drives_the_server`; exits non-zero with the failed check on stderr.

    python mcp_client.py BIN_DIR STORE CATALOG_UPDATE
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

BIN, STORE, CATALOG_UPDATE = sys.argv[1:4]
ENV = {"SLAYER_STORE": STORE, "SLAYER_MODEL_DIR": "/nonexistent/slayer-models"}
# A store on a server keeps its caches where the test says (the SDK starts the server with a
# minimal environment of its own).
if os.environ.get("SLAYER_CACHE_DIR"):
    ENV["SLAYER_CACHE_DIR"] = os.environ["SLAYER_CACHE_DIR"]


def check(condition, what, detail=None):
    if not condition:
        sys.stderr.write(f"check failed: {what}\n")
        if detail is not None:
            sys.stderr.write(f"  got: {detail}\n")
        sys.exit(1)


def cli(binary, *args):
    """Another process writing the store (or reporting an error), as a user would run it."""
    env = dict(os.environ, **ENV)
    return subprocess.run([os.path.join(BIN, binary), *args], env=env, capture_output=True, text=True)


def ids(result):
    return [hit["id"] for hit in result.structured_content["results"]]


async def search(session, **arguments):
    result = await session.call_tool("search", arguments)
    check(not result.is_error, f"search {arguments} succeeds", result.content)
    check(result.content and result.content[0].type == "text", "search has a text rendering")
    check("\nResults (" in result.content[0].text, "the text rendering lists the results", result.content[0].text)
    return result


async def main():
    server = StdioServerParameters(command=os.path.join(BIN, "slayer-search"), args=["mcp", "--store", STORE], env=ENV)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "slayer-search", "server name", init.server_info)
            check(init.capabilities.tools is not None, "tools capability")

            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            check(names == ["forget_memory", "list_datasources", "save_memory", "search", "show"], "tool names", names)
            search_schema = next(t for t in tools.tools if t.name == "search").input_schema
            for field in ["entities", "query", "question", "datasource", "max_results", "cypher_filter", "compact"]:
                check(field in search_schema["properties"], f"search takes {field}", search_schema)

            # The original's arguments: a question, a result cap, compact hits.
            result = await search(session, question="order amounts in dollars", max_results=3)
            hits = result.structured_content["results"]
            check("42" in ids(result), "memory 42 answers the question", hits)
            check(len(hits) <= 3, "max_results caps the hits", hits)
            memory = next(h for h in hits if h["id"] == "42")
            check(memory["text"] == "" and memory["description"] == "Order amounts are in dollars, not cents.",
                  "a compact memory hit is one line", memory)
            verbose = await search(session, question="order amounts in dollars", compact=False)
            memory = next(h for h in verbose.structured_content["results"] if h["id"] == "42")
            check(memory["text"].startswith("Order amounts are in dollars"), "compact=false gives the text", memory)

            # save_memory -> search finds it -> forget_memory -> search does not.
            saved = await session.call_tool("save_memory", {
                "learning": "Gift card payments settle three days late.",
                "linked_entities": ["mydb.orders.amount"],
            })
            check(not saved.is_error, "save_memory succeeds", saved.content)
            new_id = saved.structured_content["memory_id"]
            check(saved.structured_content["resolved_entities"] == ["mydb.orders.amount"], "resolved", saved.structured_content)
            check(saved.content[0].text.startswith(f"Saved memory {new_id}."), "save text", saved.content)
            found = await search(session, question="gift card settle")
            check(new_id in ids(found), "the saved memory is found", ids(found))
            forgot = await session.call_tool("forget_memory", {"id": new_id})
            check(not forgot.is_error and forgot.structured_content == {"deleted_id": new_id}, "forget", forgot)
            gone = await search(session, question="gift card settle")
            check(new_id not in ids(gone), "the forgotten memory is gone", ids(gone))

            # A query object as linked_entities makes an example query.
            example = await session.call_tool("save_memory", {
                "learning": "Paid order count",
                "linked_entities": {"source_model": "orders", "measures": [{"formula": "*:count"}]},
            })
            check(not example.is_error, "save_memory with a query", example.content)
            example_id = example.structured_content["memory_id"]
            found = await search(session, entities=["mydb.orders"], question="paid order count")
            hit = next((h for h in found.structured_content["results"] if h["id"] == example_id), None)
            check(hit is not None and hit["query"]["source_model"] == "orders", "an example query carries its query", hit)

            # Tool errors carry the CLI's message.
            bad = await session.call_tool("search", {"question": "x", "datasource": "nope"})
            check(bad.is_error, "an unknown datasource is a tool error", bad)
            cli_error = cli("slayer-search", "--question", "x", "--datasource", "nope")
            check(cli_error.returncode == 2, "the CLI refuses it too", cli_error)
            check(f"Error: {bad.content[0].text}\n" == cli_error.stderr, "same message as the CLI",
                  (bad.content[0].text, cli_error.stderr))
            bad = await session.call_tool("save_memory", {"learning": "x", "linked_entities": ["mydb.nothing_here"]})
            cli_error = cli("slayer-memory", "save", "--learning", "x", "--entities", "mydb.nothing_here")
            check(bad.is_error and f"Error: {bad.content[0].text}\n" == cli_error.stderr, "save error as the CLI's",
                  (bad.content, cli_error.stderr))
            bad = await session.call_tool("search", {"max_results": 0})
            check(bad.is_error and bad.content[0].text == "max_results must be >= 1; got 0.", "max_results >= 1", bad)
            bad = await session.call_tool("search", {"cypher_filter": "MATCH (n) RETURN n.id AS id"})
            check(bad.is_error and "cypher_filter is not supported" in bad.content[0].text, "cypher refused", bad)
            bad = await session.call_tool("search", {"questoin": "typo"})
            check(bad.is_error and "unknown field `questoin`" in bad.content[0].text, "unknown argument", bad)

            # Hostile and unlucky arguments (docs/spec/limits.md §16): each is refused naming its
            # limit, or cut with a warning, and the server goes on answering.
            bad = await session.call_tool("save_memory", {"learning": "x" * 200_000, "linked_entities": ["mydb.orders"]})
            check(bad.is_error and bad.content[0].text ==
                  "learning is 200000 bytes; the limit is 65536 (limits.learning_bytes in slayer.toml).",
                  "a long learning is refused", bad.content)
            deep = "sum(" * 5000 + "amount" + ")" * 5000
            bad = await session.call_tool("search", {"query": json.dumps({"source_model": "orders", "measures": [{"formula": deep}]})})
            check(bad.is_error and "nests parentheses 5000 deep; the limit is 32" in bad.content[0].text,
                  "a deep formula is refused", bad.content)
            bad = await session.call_tool("show", {"ids": ["mydb.orders"] * 300})
            check(bad.is_error and "ids holds more than 256 items" in bad.content[0].text, "too many ids", bad.content)
            cut = await search(session, question="order amount " * 20_000)
            check(cut.structured_content["warnings"][0].startswith("question cut to its first 16384 bytes"),
                  "a long question is cut with a warning", cut.structured_content["warnings"])
            try:
                await session.call_tool("search", {"question": "q" * (2 << 20)})
                check(False, "a message over limits.request_bytes is a JSON-RPC error")
            except MCPError as e:
                check(e.error.code == -32600 and "limits.request_bytes" in e.error.message, "request too long", e.error)
            await search(session, question="order amounts in dollars")

            # A protocol error: a tool that does not exist.
            try:
                await session.call_tool("no_such_tool", {})
                check(False, "an unknown tool is a JSON-RPC error")
            except MCPError as e:
                check(e.error.code == -32602 and "no_such_tool" in e.error.message, "unknown tool error", e.error)

            # Other processes write; the next call sees each write.
            outside = cli("slayer-memory", "save", "--learning", "Quarter close freezes the ledger.",
                          "--entities", "mydb.orders", "--format", "json", "--no-embed")
            check(outside.returncode == 0, "slayer-memory save", outside.stderr)
            outside_id = json.loads(outside.stdout)["memory_id"]
            found = await search(session, question="quarter close ledger")
            check(outside_id in ids(found), "another process's save is visible", ids(found))
            check(cli("slayer-memory", "forget", outside_id).returncode == 0, "slayer-memory forget")
            found = await search(session, question="quarter close ledger")
            check(outside_id not in ids(found), "another process's forget is visible", ids(found))
            loaded = cli("slayer-index", "load", CATALOG_UPDATE)
            check(loaded.returncode == 0, "slayer-index load", loaded.stderr)
            found = await search(session, question="warehouse shipments carrier")
            check("mydb.shipments" in ids(found), "a re-loaded catalog is visible", ids(found))
            shown = await session.call_tool("show", {"ids": ["mydb.shipments", "42"]})
            check(not shown.is_error, "show", shown.content)
            docs = shown.structured_content["docs"]
            check([d["id"] for d in docs] == ["mydb.shipments", "memory:42"], "show both", docs)
            listed = await session.call_tool("list_datasources", {})
            check([d["name"] for d in listed.structured_content["datasources"]] == ["mydb", "prod", "prod_v2"],
                  "list_datasources", listed.structured_content)

            await session.send_ping()

    # The 2026-07-28 protocol has no initialize: the client discovers, then calls.
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            discovered = await session.discover()
            check("2026-07-28" in discovered.supported_versions, "the newest version is offered", discovered)
            tools = await session.list_tools()
            check(len(tools.tools) == 5, "tools after discover", tools)
            result = await search(session, question="order amounts in dollars")
            check("42" in ids(result), "search after discover", ids(result))
    print("ok")


asyncio.run(main())
