"""The stdio MCP server answers a line it cannot read (session 27, issue 24): a client
that sent a malformed request gets a JSON-RPC error, never silence (JSON-RPC 2.0,
section 5.1: -32700 for invalid JSON, -32600 for JSON that is no request; the id when
the line names one, else null). The SDK's stdio transport dropped such lines, so a
client waited forever for its answer."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SPEC_SITE

REPO = Path(__file__).resolve().parent.parent
#: Params nested 5,000 deep: past the JSON reader's depth limit.
DEEP = b'{"jsonrpc": "2.0", "id": 12, "params": ' + b"[" * 5000 + b"]" * 5000 + b"}"


@pytest.fixture(scope="module")
def server() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "content_builder", "mcp", "--site", str(SPEC_SITE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=os.environ,
    )
    try:
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}  # fmt: skip
        assert "result" in exchange(process, json.dumps(initialize).encode(), 60)
        send(process, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield process
    finally:
        process.kill()
        process.wait()


def send(process: subprocess.Popen[bytes], line: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(line + b"\n")
    process.stdin.flush()


def exchange(process: subprocess.Popen[bytes], line: bytes, seconds: float = 10) -> Any:
    """Send one line; the one line answered within `seconds`, as JSON."""
    send(process, line)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    assert ready, f"no answer to {line[:80]!r} within {seconds} s"
    return json.loads(process.stdout.readline())


@pytest.mark.parametrize(
    ("line", "code", "answered_id"),
    [
        (b"{not json", -32700, None),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "ping"', -32700, None),
        (b'"just a string"', -32600, None),
        (b"[]", -32600, None),
        (b'[{"jsonrpc": "2.0", "id": 8, "method": "ping"}]', -32600, None),  # no batches in MCP
        (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "x"}', -32600, 9),
        (b'{"id": "ten", "method": "ping"}', -32600, "ten"),  # no "jsonrpc"
        (b'{"jsonrpc": "2.0", "id": 11, "method": 5}', -32600, 11),
        (b'{"jsonrpc": "2.0", "id": true, "method": 5}', -32600, None),  # not an id
        (DEEP, -32700, None),
    ],
)
def test_a_malformed_line_is_answered_with_an_error(
    server: subprocess.Popen[bytes], line: bytes, code: int, answered_id: Any
) -> None:
    answer = exchange(server, line)
    assert answer["jsonrpc"] == "2.0"
    assert answer["error"]["code"] == code, answer
    assert answer["id"] == answered_id
    # The session goes on.
    assert exchange(server, b'{"jsonrpc": "2.0", "id": 99, "method": "ping"}') == {
        "jsonrpc": "2.0", "id": 99, "result": {}}  # fmt: skip


def test_a_blank_line_is_no_message_and_gets_no_answer(server: subprocess.Popen[bytes]) -> None:
    """A newline-delimited stream's empty or whitespace line holds no message: answering
    it with an error of id null would only alarm a client that sends such lines."""
    send(server, b"")
    send(server, b"   \t")
    # The next line answered is the ping's, not an error for the blank lines.
    assert exchange(server, b'{"jsonrpc": "2.0", "id": 98, "method": "ping"}') == {
        "jsonrpc": "2.0", "id": 98, "result": {}}  # fmt: skip
