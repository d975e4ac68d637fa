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


#: Lines no valid message, with the error code and id they are answered with: the same on
#: every transport (tests/test_mcp_envelope.py sends them over HTTP). An id the server
#: cannot answer with (null, a float, a boolean, an array, an object, past 2^53 - 1 or
#: 256 characters) is answered with id null and never echoed (session 28).
MALFORMED: list[tuple[bytes, int, Any]] = [
    (b"{not json", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "ping"', -32700, None),
    (b'"just a string"', -32600, None),
    (b"null", -32600, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc": "2.0", "id": 8, "method": "ping"}]', -32600, None),  # no batches in MCP
    (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "x"}', -32600, 9),
    (b'{"jsonrpc": "2.0", "id": 13, "method": "ping", "params": [1]}', -32600, 13),
    (b'{"id": "ten", "method": "ping"}', -32600, "ten"),  # no "jsonrpc"
    (b'{"jsonrpc": "1.0", "id": 14, "method": "ping"}', -32600, 14),
    (b'{"jsonrpc": 2.0, "id": 15, "method": "ping"}', -32600, 15),
    (b'{"jsonrpc": "2.0", "id": 11, "method": 5}', -32600, 11),
    (b'{"jsonrpc": "2.0", "id": 16, "method": null}', -32600, 16),
    (b'{"jsonrpc": "2.0", "id": 17}', -32600, 17),  # neither a request nor a response
    (b'{"jsonrpc": "2.0", "id": true, "method": 5}', -32600, None),  # not an id
    (b'{"jsonrpc": "2.0", "method": 5}', -32600, None),  # no notification either
    (b'{"method": "notifications/initialized"}', -32600, None),
    (DEEP, -32700, None),
    # A valid method and an id the SDK cannot take: read as a notification, unanswered.
    *(
        (b'{"jsonrpc": "2.0", "id": ' + bad_id + b', "method": "ping"}', -32600, None)
        for bad_id in (
            b"null",
            b"1.5",
            b"2.0",
            b"true",
            b"false",
            b"[1]",
            b'{"a": 1}',
            b"[]",
            str(2**53).encode(),
            str(-(2**53)).encode(),
            b"1" + b"0" * 30,
            b"1" + b"0" * 400,
            json.dumps("x" * 257).encode(),
            json.dumps("x" * 100_000).encode(),
        )
    ),
]


def case_id(case: tuple[bytes, int, Any]) -> str:
    return case[0][:50].decode("utf-8", "replace")


@pytest.mark.parametrize(("line", "code", "answered_id"), MALFORMED, ids=map(case_id, MALFORMED))
def test_a_malformed_line_is_answered_with_an_error(
    server: subprocess.Popen[bytes], line: bytes, code: int, answered_id: Any
) -> None:
    answer = exchange(server, line)
    assert answer["jsonrpc"] == "2.0"
    assert len(json.dumps(answer)) < 300  # bounded: nothing sent is echoed but a usable id
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


@pytest.mark.parametrize("request_id", [0, -1, 2**53 - 1, -(2**53 - 1), "", "x" * 256])
def test_an_id_at_the_bounds_is_answered_with_itself(
    server: subprocess.Popen[bytes], request_id: Any
) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
    assert exchange(server, line) == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_a_notification_and_a_response_get_no_answer(server: subprocess.Popen[bytes]) -> None:
    """JSON-RPC 2.0: a notification is never answered (section 4.1), nor a response
    (section 5), an error response with a null id included."""
    send(
        server,
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}',
    )
    send(server, b'{"jsonrpc": "2.0", "id": 5, "result": {}}')
    send(server, b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "x"}}')
    assert exchange(server, b'{"jsonrpc": "2.0", "id": 97, "method": "ping"}') == {
        "jsonrpc": "2.0", "id": 97, "result": {}}  # fmt: skip


def test_requests_in_flight_at_the_end_of_input_are_answered() -> None:
    # `printf '<initialize>\n...<ping>\n' | agent-access mcp`: the SDK ends its session at
    # the end of input and cancelled what was in flight, so the last answers were lost
    # (a scripted client, a test harness). Each request now gets its answer first.
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}  # fmt: skip
    lines = [
        initialize,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "cache"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"},
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "content_builder", "mcp", "--site", str(SPEC_SITE)],
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(answer["id"] for answer in answers) == [1, 3, 4, 5], answers
    assert done.returncode == 0, done.stderr[-500:]


@pytest.mark.parametrize(("asked", "cancelled"), [(7, "7"), ("7", 7)])
def test_a_cancel_naming_the_id_in_the_other_type_ends_the_wait(asked: Any, cancelled: Any) -> None:
    # The SDK takes "7" and 7 for one id (mcp.shared.dispatcher.coerce_request_id): a
    # cancel naming request 7 as "7" cancels it unanswered, and the end of input then
    # waited DRAIN_SECONDS (30 s) for an answer that never came.
    import anyio

    from agent_mcp.stdio import Pending, _track

    async def main() -> bool:
        pending = Pending()
        _track({"jsonrpc": "2.0", "id": asked, "method": "tools/call"}, pending)
        cancel = {"requestId": cancelled}
        _track({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}, pending)
        return pending.none_left.is_set()

    assert anyio.run(main)


@pytest.mark.parametrize("request_id", [[1], {"a": 1}, True, None, 1.5])
def test_a_cancel_naming_no_usable_id_leaves_the_session_up(
    server: subprocess.Popen[bytes], request_id: Any
) -> None:
    # The end-of-input bookkeeping read `requestId` raw: a list or an object there was
    # an unhashable-type traceback that ended the session (the SDK reads such a cancel
    # as naming nothing: mcp.shared.jsonrpc_dispatcher.cancelled_request_id_from_params).
    params = {"requestId": request_id}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    send(server, json.dumps(cancel).encode())
    assert exchange(server, b'{"jsonrpc": "2.0", "id": 98, "method": "ping"}') == {
        "jsonrpc": "2.0", "id": 98, "result": {}}  # fmt: skip
