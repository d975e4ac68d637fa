"""One MCP body limit, stated once, enforced before the body is read (issue 24, item 8).

`agent_contract.mcp_endpoint.MCP_MAX_BODY` is the number `serve`'s /mcp, the HTTP bridge
(and the SDK behind it) and the Lambda handler all refuse above: locally from the
Content-Length, before a byte of the body is read; on Lambda from the declared length or
the delivered body's size, before it is decoded or handed to the SDK.
"""

from __future__ import annotations

import base64
import json
import re
import socket
from typing import Any

import pytest

from agent_contract.mcp_endpoint import MCP_MAX_BODY, MCP_PATH, ORIGIN_VERIFY_HEADER
from agent_mcp import http as mcp_http
from agent_mcp import lambda_handler
from agent_mcp.sources import MemoryFiles
from benchmarks import sitegen
from tests.conftest import TEST_BASE_URL, running_server
from tests.test_mcp_server import published

SECRET = "s3cret-origin-value-0123456789abcdefgh"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> sitegen.GeneratedSite:
    return sitegen.generate(tmp_path_factory.mktemp("mcp-limit") / "site_data", 3)


@pytest.fixture(scope="module")
def files(site: sitegen.GeneratedSite) -> dict[str, bytes]:
    return published(site.root, TEST_BASE_URL)


def padded_ping(size: int) -> bytes:
    """A valid JSON-RPC ping of exactly `size` bytes (trailing JSON whitespace)."""
    body = json.dumps(PING).encode()
    return body + b" " * (size - len(body))


def is_too_large(status: int, payload: bytes) -> None:
    assert status == 413
    answer = json.loads(payload)  # JSON-RPC shaped: MCP clients read the error
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert str(MCP_MAX_BODY) in answer["error"]["message"]


# --- the contract ------------------------------------------------------------------------


def test_every_party_uses_the_contracts_numbers() -> None:
    from agent_edge import serve
    from infra import mcp_function

    assert MCP_MAX_BODY == 1024 * 1024
    assert serve.MAX_MCP_BODY is MCP_MAX_BODY or serve.MAX_MCP_BODY == MCP_MAX_BODY
    assert mcp_http.MCP_PATH == MCP_PATH == mcp_function.MCP_PATH
    assert lambda_handler.ORIGIN_HEADER == ORIGIN_VERIFY_HEADER == mcp_function.ORIGIN_HEADER


def test_no_party_restates_the_shared_constants() -> None:
    """Issue 22 item 3: the number and the header name are written in the contract only."""
    from tests.conftest import REPO

    for module in ("agent_edge/serve.py", "agent_mcp/http.py", "agent_mcp/lambda_handler.py",
                   "infra/mcp_function.py"):  # fmt: skip
        text = (REPO / module).read_text(encoding="utf-8")
        assert '"x-origin-verify"' not in text, module
        assert '== "/mcp"' not in text and 'MCP_PATH = "' not in text, module
        assert '"MCP_ORIGIN_SECRET"' not in text and '"site"' not in text, module
        # no body limit of its own: a MAX_... BODY name bound to a bare number
        found = re.search(r"^\w*MAX\w*BODY\w*\s*=\s*[\d_ *]+$", text, re.MULTILINE)
        assert found is None, module


# --- the bridge (and the SDK behind it) ----------------------------------------------------


def test_a_body_at_the_limit_reaches_the_sdk_and_one_byte_more_is_413(
    files: dict[str, bytes],
) -> None:
    status, _, payload = mcp_http.handle_http(
        "POST", MCP_PATH, JSON_HEADERS, padded_ping(MCP_MAX_BODY), files
    )
    assert status == 200 and json.loads(payload)["result"] == {}
    status, headers, payload = mcp_http.handle_http(
        "POST", MCP_PATH, JSON_HEADERS, padded_ping(MCP_MAX_BODY + 1), files
    )
    is_too_large(status, payload)
    assert dict(headers)["Content-Length"] == str(len(payload))


def test_the_sdk_is_told_the_same_limit(files: dict[str, bytes]) -> None:
    endpoint = mcp_http.endpoint_for(files)
    assert endpoint.server.session_manager.max_request_body_size == MCP_MAX_BODY


# --- serve: refused from the head alone ---------------------------------------------------


def _head(port: int, length: int | None, extra: str = "") -> bytes:
    declared = f"Content-Length: {length}\r\n" if length is not None else ""
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\n{declared}{extra}\r\n"
    ).encode()


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    fields = dict(
        line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:] if ": " in line
    )
    length = int(fields.get("Content-Length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def test_serve_refuses_a_declared_length_over_the_limit_without_reading_the_body(
    site: sitegen.GeneratedSite,
) -> None:
    """The head alone is sent: the 413 arrives while the client has sent no body at all."""
    with running_server(site.root) as server:
        port = server.server_address[1]
        for length in (MCP_MAX_BODY + 1, 10**15):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(_head(port, length, "Expect: 100-continue\r\n"))
                answer = _answer(sock)  # times out (5 s) if the server waits for the body
            assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]
            assert b"100 Continue" not in answer
            assert str(MCP_MAX_BODY).encode() in answer


def test_serve_reads_no_body_when_none_is_declared(site: sitegen.GeneratedSite) -> None:
    """POST /mcp without Content-Length (nor Transfer-Encoding) has an empty body (RFC 9112
    6.3): answered at once, nothing read; chunked is refused with 411."""
    with running_server(site.root) as server:
        port = server.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(_head(port, None))
            answer = _answer(sock)
        assert answer.split(b" ", 2)[1] in (b"400", b"411")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(_head(port, None, "Transfer-Encoding: chunked\r\n"))
            answer = _answer(sock)
        assert answer.startswith(b"HTTP/1.1 411 ")


# --- the Lambda handler ------------------------------------------------------------------


@pytest.fixture
def lambda_source(files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    memory = MemoryFiles(files)
    monkeypatch.setattr(lambda_handler, "source", lambda: memory)
    monkeypatch.setenv(lambda_handler.SECRET_ENV, SECRET)


def event(body: str | None, headers: dict[str, Any] | None = None, **fields: Any) -> dict:
    return {
        "version": "2.0",
        "rawPath": MCP_PATH,
        "headers": {ORIGIN_VERIFY_HEADER: SECRET, **JSON_HEADERS, **(headers or {})},
        "requestContext": {"http": {"method": "POST"}},
        "body": body,
        "isBase64Encoded": False,
        **fields,
    }


def test_lambda_accepts_a_body_at_the_limit(lambda_source: None) -> None:
    result = lambda_handler.handler(event(padded_ping(MCP_MAX_BODY).decode()))
    assert result["statusCode"] == 200
    text = base64.b64encode(padded_ping(MCP_MAX_BODY)).decode()
    result = lambda_handler.handler(event(text, isBase64Encoded=True))
    assert result["statusCode"] == 200


@pytest.mark.parametrize(
    "case",
    ["declared", "declared-huge", "text", "base64", "base64-undecodable", "multibyte"],
)
def test_lambda_refuses_a_body_over_the_limit_before_decoding_it(
    lambda_source: None, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the body reached the SDK")

    monkeypatch.setattr(lambda_handler, "handle_http", never)
    over = MCP_MAX_BODY + 1
    events = {
        # the length the client declared (the body itself may be short: refused unread)
        "declared": event("{}", {"content-length": str(over)}),
        "declared-huge": event("{}", {"content-length": "9" * 40}),
        "text": event(padded_ping(over).decode()),
        "base64": event(base64.b64encode(padded_ping(over)).decode(), isBase64Encoded=True),
        # not even valid base64: refused for its size first, so it was never decoded
        "base64-undecodable": event("!" * (2 * over), isBase64Encoded=True),
        # fewer characters than the limit, more bytes once encoded as UTF-8
        "multibyte": event("é" * (MCP_MAX_BODY // 2 + 1)),
    }
    result = lambda_handler.handler(events[case])
    is_too_large(result["statusCode"], result["body"].encode())
