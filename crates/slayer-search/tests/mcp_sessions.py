"""Drives `slayer-search mcp` sessions started with flags through the official MCP Python SDK:
the session scope (--project/--agent), --read-only, save_memory's tier, confidence, entities
and query, and the streamable HTTP transport (--http) with its bearer token. Run by the Rust
tests in `tests/it/mcp.rs`; exits non-zero with the failed check on stderr.

    python mcp_sessions.py scope|read-only|http BIN_DIR STORE
"""

import asyncio
import json
import os
import signal
import subprocess
import sys

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

MODE, BIN, STORE = sys.argv[1:4]
ENV = {"SLAYER_STORE": STORE, "SLAYER_MODEL_DIR": "/nonexistent/slayer-models", "SLAYER_NO_EMBED": "1"}
TOKEN = "test-token-5f0c2a9e41d7b836"


def check(condition, what, detail=None):
    if not condition:
        sys.stderr.write(f"check failed: {what}\n")
        if detail is not None:
            sys.stderr.write(f"  got: {detail}\n")
        sys.exit(1)


def cli(binary, *args):
    env = dict(os.environ, **ENV)
    return subprocess.run([os.path.join(BIN, binary), *args], env=env, capture_output=True, text=True)


def saved_by_cli(learning, *flags):
    out = cli("slayer-memory", "save", "--learning", learning, "--entities", "mydb.orders.amount",
              "--format", "json", *flags)
    check(out.returncode == 0, f"slayer-memory save {flags}", out.stderr)
    return json.loads(out.stdout)["memory_id"]


def stored(memory_id):
    """The memory's record as slayer-memory shows it, or None."""
    out = cli("slayer-memory", "show", memory_id, "--format", "json")
    return json.loads(out.stdout) if out.returncode == 0 else None


def ids(result):
    return [hit["id"] for hit in result.structured_content["results"]]


def text(result):
    return result.content[0].text if result.content else ""


def stdio(*flags):
    server = StdioServerParameters(command=os.path.join(BIN, "slayer-search"), args=["mcp", *flags], env=ENV)
    return stdio_client(server)


async def refused(session, tool, arguments, *fragments):
    result = await session.call_tool(tool, arguments)
    check(result.is_error, f"{tool} {arguments} is a tool error", result.content)
    for fragment in fragments:
        check(fragment in text(result), f"{tool}'s error names {fragment!r}", text(result))
    return text(result)


async def scope():
    etl = saved_by_cli("Zebra stripes: etl's own rule.", "--project", "shop", "--agent", "etl")
    bi = saved_by_cli("Zebra stripes: bi's own rule.", "--project", "shop", "--agent", "bi")
    shop = saved_by_cli("Zebra stripes: every shop agent's rule.", "--project", "shop")
    ops = saved_by_cli("Zebra stripes: the ops project's rule.", "--project", "ops")
    shared = saved_by_cli("Zebra stripes: everyone's rule.")
    question = {"question": "zebra stripes rule", "max_results": 20}

    async with stdio("--project", "shop", "--agent", "etl") as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            found = ids(await session.call_tool("search", question))
            check({etl, shop, shared} <= set(found), "the scope's and the shared memories are found", found)
            check(bi not in found and ops not in found, "no other agent's or project's memory is", found)
            same = await session.call_tool("search", dict(question, project="shop", agent="etl"))
            check(not same.is_error and set(ids(same)) == set(found), "naming the session's own scope", same.content)
            await refused(session, "search", dict(question, project="ops"),
                          "project 'ops' is outside this session's scope", "project 'shop', agent 'etl'")
            await refused(session, "search", dict(question, agent="bi"), "agent 'bi' is outside")

            # save_memory: tier, confidence, entities (a comma-separated string), in the scope.
            saved = await session.call_tool("save_memory", {
                "learning": "Zebra stripes are counted per order, not per line.",
                "entities": "mydb.orders, mydb.orders.amount", "tier": "semantic", "confidence": 0.8,
                "description": "Stripe counting"})
            check(not saved.is_error, "save_memory with tier, confidence and entities", saved.content)
            new_id = saved.structured_content["memory_id"]
            check(new_id.startswith("sem_"), "a semantic memory gets the tier's id prefix", new_id)
            check(saved.structured_content["resolved_entities"] == ["mydb.orders", "mydb.orders.amount"],
                  "entities split as slayer-memory splits them", saved.structured_content)
            record = stored(new_id)
            check(record is not None and record.get("tier") == "semantic" and record.get("confidence") == 0.8
                  and record.get("project") == "shop" and record.get("agent") == "etl",
                  "saved with its tier, confidence and the session's scope", record)
            found = ids(await session.call_tool("search", {"question": "zebra stripes counted per order",
                                                           "tiers": ["semantic"]}))
            check(new_id in found, "the saved memory is found by search", found)
            # A query as JSON text makes an example query.
            example = await session.call_tool("save_memory", {
                "learning": "Zebra stripe totals", "tier": "procedural",
                "query": json.dumps({"source_model": "orders", "measures": [{"formula": "amount:sum"}]})})
            check(not example.is_error, "save_memory with a query", example.content)
            example_id = example.structured_content["memory_id"]
            record = stored(example_id)
            check(record["query"]["source_model"] == "orders" and record.get("tier") == "procedural",
                  "the example query is stored", record)
            hit = next((h for h in (await session.call_tool("search", {"question": "zebra stripe totals",
                        "max_results": 20})).structured_content["results"] if h["id"] == example_id), None)
            check(hit is not None and hit["query"]["source_model"] == "orders", "found with its query", hit)

            # Validation is slayer-memory's.
            await refused(session, "save_memory", {"learning": "x", "entities": ["mydb.orders"], "tier": "rumour"},
                          "unknown tier 'rumour'; expected one of observation, lesson")
            message = await refused(session, "save_memory",
                                    {"learning": "x", "entities": ["mydb.orders"], "confidence": 1.5})
            cli_error = cli("slayer-memory", "save", "--learning", "x", "--entities", "mydb.orders",
                            "--confidence", "1.5")
            check(cli_error.stderr == f"Error: {message}\n", "the confidence error is the CLI's",
                  (message, cli_error.stderr))
            await refused(session, "save_memory",
                          {"learning": "x", "entities": ["mydb.orders"], "query": {"source_model": "orders"}},
                          "mutually exclusive")
            await refused(session, "save_memory", {"learning": "x"}, "must be given")

            # Writes stay within the scope: another project's, another agent's and the shared
            # memories are neither replaced nor forgotten.
            # A memory the session cannot see is answered as an absent one (issue 49: no
            # existence oracle), its owner never named.
            hijack = await refused(session, "save_memory",
                                   {"learning": "hijack", "entities": ["mydb.orders"], "id": ops},
                                   f"memory id '{ops}' is taken")
            check("ops" not in hijack.replace(ops, ""), "the owner is not named", hijack)
            check(stored(ops)["learning"] == "Zebra stripes: the ops project's rule.", "ops' memory is intact")
            absent = "no-such-memory-id"
            for foreign in (ops, bi):
                gone = await refused(session, "forget_memory", {"id": foreign}, f"No memory with id '{foreign}'.")
                unknown = await refused(session, "forget_memory", {"id": absent})
                check(gone.replace(foreign, "?") == unknown.replace(absent, "?"), "forget: out of scope = absent", gone)
                shown = await refused(session, "show", {"ids": [foreign]})
                unknown = await refused(session, "show", {"ids": [absent]})
                check(shown.replace(foreign, "?") == unknown.replace(absent, "?"), "show: out of scope = absent", shown)
                shown = await refused(session, "show", {"ids": [f"memory:{foreign}"]})
                unknown = await refused(session, "show", {"ids": [f"memory:{absent}"]})
                check(shown.replace(foreign, "?") == unknown.replace(absent, "?"), "show memory: out of scope = absent", shown)
            await refused(session, "forget_memory", {"id": shared}, "shared by every project and agent")
            check(all(stored(m) is not None for m in (ops, bi, shared)), "nothing out of scope was forgotten")
            await refused(session, "save_memory", {"learning": "x", "entities": [f"memory:{ops}"]},
                          f"No memory with id '{ops}'.")
            shown = await session.call_tool("show", {"ids": [etl, "mydb.orders"]})
            check(not shown.is_error, "show of the scope's memory and an entity", shown.content)
            forgot = await session.call_tool("forget_memory", {"id": etl})
            check(not forgot.is_error and stored(etl) is None, "the scope's own memory is forgotten", forgot.content)

    # A project-only session: an agent argument narrows it.
    async with stdio("--project", "shop") as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            found = ids(await session.call_tool("search", dict(question, agent="bi")))
            check(bi in found and shop in found and shared in found, "narrowed to agent bi", found)
            check(ops not in found and new_id not in found, "nothing of ops or of etl", found)
            found = ids(await session.call_tool("search", question))
            check(bi in found and new_id in found and ops not in found, "every agent of the project", found)
            await refused(session, "search", dict(question, project="ops"), "outside this session's scope")


async def read_only():
    async with stdio("--read-only") as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("search" in init.instructions and "save_memory" not in init.instructions,
                  "the instructions name no writing tool", init.instructions)
            names = sorted(t.name for t in (await session.list_tools()).tools)
            check(names == ["list_datasources", "search", "show"], "no writing tool is listed", names)
            for tool, arguments in [("save_memory", {"learning": "x", "entities": ["mydb.orders"]}),
                                    ("forget_memory", {"id": "42"}), ("no_such_tool", {})]:
                try:
                    await session.call_tool(tool, arguments)
                    check(False, f"{tool} is an unknown tool")
                except MCPError as e:
                    check(e.error.code == -32602 and f"unknown tool '{tool}'; the tools are search, show, "
                          "list_datasources" == e.error.message, f"{tool} is an unknown tool", e.error)
            check(stored("42") is not None, "nothing was forgotten")
            found = await session.call_tool("search", {"question": "order amounts in dollars"})
            check("42" in ids(found), "search works", found.content)


def start_http(*flags, addr="127.0.0.1"):
    env = dict(os.environ, **ENV, SLAYER_MCP_TOKEN=TOKEN)
    server = subprocess.Popen([os.path.join(BIN, "slayer-search"), "mcp", "--http", f"{addr}:0", *flags],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    line = server.stderr.readline()
    check(line.startswith(f"slayer-search mcp: listening on http://{addr}:"), "the listening line", line)
    return server, line.split()[4], line


def stop_http(server, line):
    server.send_signal(signal.SIGTERM)
    stdout, stderr = server.communicate(timeout=20)
    check(server.returncode == 0, "SIGTERM ends the server cleanly", (server.returncode, stderr))
    check(stdout == "", "nothing on stdout", stdout)
    check(TOKEN not in line + stderr, "the token is never printed", line + stderr)


async def http():
    server, url, line = start_http()
    try:
        check(url.endswith("/mcp"), "served at /mcp", url)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    check(init.server_info.name == "slayer-search", "server name", init.server_info)
                    names = sorted(t.name for t in (await session.list_tools()).tools)
                    check(names == ["forget_memory", "list_datasources", "save_memory", "search", "show"],
                          "every tool over HTTP", names)
                    found = await session.call_tool("search", {"question": "order amounts in dollars"})
                    check(not found.is_error and "42" in ids(found), "search over HTTP", found.content)

        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient() as plain:
            for auth in [None, f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN]:
                sent = dict(accept, **({"Authorization": auth} if auth else {}))
                response = await plain.post(url, json=initialize, headers=sent)
                check(response.status_code == 401, f"Authorization {auth!r} is refused", response.status_code)
                check(response.headers.get("www-authenticate") == "Bearer", "the challenge names Bearer",
                      response.headers)
                check("jsonrpc" not in response.text, "no MCP processing", response.text)
            response = await plain.get(url.replace("/mcp", "/other"))
            check(response.status_code == 401, "every path needs the token", response.status_code)
            response = await plain.post(url, content=b"x" * (2 << 20), headers=dict(
                accept, Authorization=f"Bearer {TOKEN}", **{"Content-Type": "application/json"}))
            check(response.status_code == 413, "a body over limits.request_bytes is refused", response.status_code)
    finally:
        if server.poll() is None and sys.exc_info()[0] is not None:
            server.kill()
    stop_http(server, line)

    # Read-only and the scope hold over HTTP too.
    server, url, line = start_http("--read-only", "--project", "shop")
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = sorted(t.name for t in (await session.list_tools()).tools)
                check(names == ["list_datasources", "search", "show"], "read-only over HTTP", names)
                await refused(session, "search", {"question": "x", "project": "ops"},
                              "project 'ops' is outside this session's scope")
    stop_http(server, line)

    # --allow-remote: every address, any Host, still the token.
    server, url, line = start_http("--allow-remote", addr="0.0.0.0")
    url = url.replace("0.0.0.0", "127.0.0.1")
    async with httpx2.AsyncClient() as plain:
        accept = {"Accept": "application/json, text/event-stream"}
        response = await plain.post(url, json=initialize, headers=dict(accept, Host="slayer.example"))
        check(response.status_code == 401, "remote: no token, 401", response.status_code)
        response = await plain.post(url, json=initialize, headers=dict(
            accept, Host="slayer.example", Authorization=f"Bearer {TOKEN}"))
        check(response.status_code == 200, "remote: any Host with the token", (response.status_code, response.text))
    stop_http(server, line)


asyncio.run({"scope": scope, "read-only": read_only, "http": http}[MODE]())
print("ok")
