"""The stdio transport: one MCP session on stdin/stdout, for Claude Desktop, Cursor,
Claude Code and any client that launches a local command."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
from anyio.abc import ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCResponse

from agent_mcp.catalog import Catalog
from agent_mcp.envelope import read_message
from agent_mcp.server import CALL_LIMITS, create_server

#: How long the end of input waits for the requests still being answered: past a tool
#: call's time limit, by which each has its answer or its error.
DRAIN_SECONDS = CALL_LIMITS.timeout + 10


def run_stdio(catalog: Catalog) -> None:
    server = create_server(catalog)

    async def main() -> None:
        # Each raw line is checked before the SDK's transport reads it: the SDK takes a
        # request whose id it cannot hold for a notification and answers a line it
        # cannot read with nothing, so the client would wait forever. A refused line
        # is answered here (agent_mcp.envelope); the rest pass on untouched.
        refused, answers = anyio.create_memory_object_stream[JSONRPCError](0)
        pending = Pending()
        # Our own reader of fd 0 (the SDK reads it in place, unclaimed, when given
        # one): no tool of this server reads stdin or starts a process that could.
        # The SDK still claims stdout, where a stray print would corrupt the stream.
        with open(0, encoding="utf-8", errors="replace", closefd=False) as stdin:
            lines = checked_lines(anyio.wrap_file(stdin), refused, pending)
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

                async def answer_refused() -> None:
                    async with answers:
                        async for answer in answers:
                            await write_stream.send(SessionMessage(answer))

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(answer_refused)
                    await server.run(
                        read_stream,
                        AnswerWatch(write_stream, pending),  # type: ignore[arg-type]
                        server.create_initialization_options(),
                    )
                    tasks.cancel_scope.cancel()

    anyio.run(main)


class Pending:
    """The ids of the requests handed to the SDK and not answered yet.

    Each id is kept as the SDK correlates it (`coerce_request_id`: "7" and 7 are one
    id), so a cancel naming request 7 as "7", which the SDK honours, ends its wait."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.none_left = anyio.Event()
        self.none_left.set()

    def asked(self, request_id: Any) -> None:
        if not self.ids:
            self.none_left = anyio.Event()
        self.ids.add(coerce_request_id(request_id))

    def answered(self, request_id: Any) -> None:
        self.ids.discard(coerce_request_id(request_id))
        if not self.ids:
            self.none_left.set()


class AnswerWatch:
    """The SDK's write stream, seeing which requests it answers."""

    def __init__(self, stream: Any, pending: Pending) -> None:
        self._stream = stream
        self._pending = pending

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        await self._stream.send(item)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._pending.answered(message.id)

    async def __aenter__(self) -> AnswerWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


async def checked_lines(
    lines: AsyncIterable[str], refused: ObjectSendStream[JSONRPCError], pending: Pending
) -> AsyncIterator[str]:
    """The lines that may go to the SDK; each refused one's answer goes to `refused`.

    At the end of input, the requests still being answered are waited for (at most
    DRAIN_SECONDS): the SDK ends its session at end of input and cancels every request
    in flight, so `printf '<initialize>\\n<ping>\\n' | agent-access mcp` lost its last
    answers."""
    async with refused:
        async for line in lines:
            if not line.strip():
                # A newline-delimited stream's empty line holds no message (MCP,
                # Transports, stdio): answering it would alarm a client that sends one.
                continue
            message, answer = read_message(line)
            if answer is not None:
                await refused.send(answer)
                continue
            _track(message, pending)
            yield line
        with anyio.move_on_after(DRAIN_SECONDS):
            await pending.none_left.wait()


def _track(message: Any, pending: Pending) -> None:
    """Note a request handed on (a cancelled one is never answered: JSON-RPC's
    `notifications/cancelled` names it)."""
    if not isinstance(message, dict) or "method" not in message:
        return
    if "id" in message:
        pending.asked(message["id"])
    elif message["method"] == "notifications/cancelled":
        # Read as the SDK reads it: a requestId that is no str or int (a list, an
        # object, a bool) names nothing, and a list here was an unhashable traceback.
        # `params` is an object or null: envelope_refusal turned away the rest.
        request_id = cancelled_request_id_from_params(message.get("params"))
        if request_id is not None:
            pending.answered(request_id)
