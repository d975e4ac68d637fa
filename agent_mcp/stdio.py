"""The stdio transport: one MCP session on stdin/stdout, for Claude Desktop, Cursor,
Claude Code and any client that launches a local command."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from agent_mcp.catalog import Catalog
from agent_mcp.server import create_server


def run_stdio(catalog: Catalog) -> None:
    server = create_server(catalog)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
