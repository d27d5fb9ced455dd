"""Drives `slayer-search mcp` from BIN_DIR through the official MCP Python SDK, as an agent's
host configured with the installed binary would: initialize, list the tools, search twice.
Prints what the client saw, so scripts/test-package.sh can hold an installed binary's answers
to a built one's; exits non-zero with the failed check on stderr.

    python package_mcp.py BIN_DIR STORE
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN, STORE = sys.argv[1:3]
# The SDK starts the server with a minimal environment: pass on where the model lives.
ENV = {"SLAYER_STORE": STORE}
for name in ("XDG_CACHE_HOME", "SLAYER_MODEL_DIR"):
    if os.environ.get(name):
        ENV[name] = os.environ[name]


def check(condition, what, detail=None):
    if not condition:
        sys.stderr.write(f"check failed: {what}\n")
        if detail is not None:
            sys.stderr.write(f"  got: {detail}\n")
        sys.exit(1)


async def main():
    server = StdioServerParameters(command=os.path.join(BIN, "slayer-search"), args=["mcp"], env=ENV)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "slayer-search", "server name", init.server_info)
            tools = await session.list_tools()
            names = sorted(tool.name for tool in tools.tools)
            check("search" in names, "a search tool", names)
            print("tools:", ", ".join(names))
            for question in ("net revenue without returned orders", "how much money did shoppers hand over?"):
                result = await session.call_tool("search", {"question": question, "max_results": 4})
                check(not result.is_error, f"search {question!r} succeeds", result.content)
                hits = [hit["id"] for hit in result.structured_content["results"]]
                check(hits, f"search {question!r} finds something", result.content)
                print(f"search {question!r}:")
                print(result.content[0].text.rstrip())


asyncio.run(main())
