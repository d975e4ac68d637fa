"""The stdio transport: one MCP session on stdin/stdout, for Claude Desktop, Cursor,
Claude Code and any client that launches a local command."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from agent_mcp.catalog import Catalog
from agent_mcp.server import create_server


def run_stdio(catalog: Catalog) -> None:
    server = create_server(catalog)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            # The SDK's transport hands a line it cannot read to the session as an
            # exception, which the session drops: the client that sent it would wait
            # for an answer forever. Such lines are answered here; the rest pass on.
            passed, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def answer_malformed() -> None:
                async with passed:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            if not _blank(item):
                                await write_stream.send(SessionMessage(malformed_answer(item)))
                        else:
                            await passed.send(item)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(answer_malformed)
                await server.run(inbound, write_stream, server.create_initialization_options())

    anyio.run(main)


def malformed_answer(error: Exception) -> JSONRPCError:
    """The JSON-RPC 2.0 error for a line that is no message (section 5.1): -32700 when
    it is not JSON, else -32600; with the line's id when it names one (a string or an
    integer, as MCP's ids are), so the client's pending request gets its answer."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if not problems or any(problem["type"] == "json_invalid" for problem in problems):
        return JSONRPCError(
            jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error")
        )
    return JSONRPCError(
        jsonrpc="2.0",
        id=_named_id(problem.get("input") for problem in problems),
        error=ErrorData(code=INVALID_REQUEST, message="Invalid Request: not one JSON-RPC message"),
    )


def _named_id(inputs: Any) -> str | int | None:
    for value in inputs:
        if isinstance(value, dict):
            found = value.get("id")
            if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
                return found
    return None


def _blank(error: Exception) -> bool:
    """Whether the line the transport could not read held nothing but whitespace: no
    message at all in a newline-delimited stream (MCP, Transports, stdio), so nothing to
    answer (an error with a null id would only alarm a client that sends empty lines)."""
    if not isinstance(error, ValidationError):
        return False
    inputs = [problem.get("input") for problem in error.errors()]
    return bool(inputs) and all(isinstance(text, str) and not text.strip() for text in inputs)
