"""The stdio transport: one MCP session on stdin/stdout, for Claude Desktop, Cursor,
Claude Code and any client that launches a local command."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import anyio
from anyio.abc import ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError

from agent_mcp.catalog import Catalog
from agent_mcp.envelope import refusal
from agent_mcp.server import create_server


def run_stdio(catalog: Catalog) -> None:
    server = create_server(catalog)

    async def main() -> None:
        # Each raw line is checked before the SDK's transport reads it: the SDK takes a
        # request whose id it cannot hold for a notification and answers a line it
        # cannot read with nothing, so the client would wait forever. A refused line
        # is answered here (agent_mcp.envelope); the rest pass on untouched.
        refused, answers = anyio.create_memory_object_stream[JSONRPCError](0)
        # Our own reader of fd 0 (the SDK reads it in place, unclaimed, when given
        # one): no tool of this server reads stdin or starts a process that could.
        # The SDK still claims stdout, where a stray print would corrupt the stream.
        with open(0, encoding="utf-8", errors="replace", closefd=False) as stdin:
            lines = checked_lines(anyio.wrap_file(stdin), refused)
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

                async def answer_refused() -> None:
                    async with answers:
                        async for answer in answers:
                            await write_stream.send(SessionMessage(answer))

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(answer_refused)
                    await server.run(
                        read_stream, write_stream, server.create_initialization_options()
                    )
                    tasks.cancel_scope.cancel()

    anyio.run(main)


async def checked_lines(
    lines: AsyncIterable[str], refused: ObjectSendStream[JSONRPCError]
) -> AsyncIterator[str]:
    """The lines that may go to the SDK; each refused one's answer goes to `refused`."""
    async with refused:
        async for line in lines:
            if not line.strip():
                # A newline-delimited stream's empty line holds no message (MCP,
                # Transports, stdio): answering it would alarm a client that sends one.
                continue
            answer = refusal(line)
            if answer is None:
                yield line
            else:
                await refused.send(answer)
