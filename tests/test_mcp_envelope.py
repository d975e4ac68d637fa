"""Every JSON-RPC request the MCP endpoint receives over HTTP is answered (session 28).

The SDK read a request whose id is null, a float, a boolean, an array or an object as a
notification: 202 and no answer, the client waiting forever (JSON-RPC 2.0, section 5.1:
an invalid Request is answered -32600 with id null; MCP: a request's id is a string or
an integer, never null). It answered other envelope faults -32602 with its validation
report, and echoed an id of 10^400 or 100,000 characters back whole. The lines
tests/test_mcp_stdio_malformed.py sends over stdio are sent here as POST bodies through
the HTTP bridge, `serve`'s /mcp on 127.0.0.1 and the Lambda handler: each answered 400
with the same JSON-RPC error as over stdio, in a few hundred bytes.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from unittest.mock import ANY

import pytest

from agent_contract.mcp_endpoint import MCP_PATH, ORIGIN_VERIFY_HEADER
from agent_mcp import http as mcp_http
from agent_mcp import lambda_handler
from agent_mcp.sources import MemoryFiles
from benchmarks import sitegen
from tests.conftest import TEST_BASE_URL, running_server
from tests.test_mcp_server import published
from tests.test_mcp_stdio_malformed import MALFORMED, case_id

SECRET = "s3cret-origin-value-0123456789abcdefgh"
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}
#: No version header (the SDK's handshake era, 2025-03-26 assumed), a handshake version,
#: and the sessionless era (which the SDK routes to another handler).
VERSIONS = [None, "2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> sitegen.GeneratedSite:
    return sitegen.generate(tmp_path_factory.mktemp("mcp-envelope") / "site_data", 3)


@pytest.fixture(scope="module")
def files(site: sitegen.GeneratedSite) -> dict[str, bytes]:
    return published(site.root, TEST_BASE_URL)


@pytest.fixture(scope="module")
def serve_url(site: sitegen.GeneratedSite) -> Iterator[str]:
    with running_server(site.root) as server:
        yield server.base_url + MCP_PATH


def headers_for(version: str | None) -> dict[str, str]:
    return {**JSON_HEADERS, **({"mcp-protocol-version": version} if version else {})}


def bridge(files: dict[str, bytes], body: bytes, version: str | None) -> tuple[int, bytes]:
    status, _, payload = mcp_http.handle_http("POST", MCP_PATH, headers_for(version), body, files)
    return status, payload


def lambda_post(files: dict[str, bytes], body: bytes, version: str | None) -> tuple[int, bytes]:
    memory = MemoryFiles(files)
    saved = lambda_handler.source
    lambda_handler.source = lambda: memory  # type: ignore[assignment]
    try:
        result = lambda_handler.handler({
            "version": "2.0",
            "rawPath": MCP_PATH,
            "headers": {ORIGIN_VERIFY_HEADER: SECRET, **headers_for(version)},
            "requestContext": {"http": {"method": "POST"}},
            "body": body.decode("utf-8"),
            "isBase64Encoded": False,
        })  # fmt: skip
    finally:
        lambda_handler.source = saved  # type: ignore[assignment]
    return result["statusCode"], result["body"].encode()


def serve_post(
    url: str, body: bytes, version: str | None, extra: dict[str, str] | None = None
) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={**headers_for(version), **(extra or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


@pytest.fixture
def post(
    request: pytest.FixtureRequest, files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> Any:
    """One POST to /mcp through the named host: (status, body)."""
    monkeypatch.setenv(lambda_handler.SECRET_ENV, SECRET)
    if request.param == "bridge":
        return lambda body, version: bridge(files, body, version)
    if request.param == "lambda":
        return lambda body, version: lambda_post(files, body, version)
    url = request.getfixturevalue("serve_url")
    return lambda body, version: serve_post(url, body, version)


HOSTS = ["bridge", "serve", "lambda"]


@pytest.mark.parametrize("post", HOSTS, indirect=True)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("body", "code", "answered_id"), MALFORMED, ids=map(case_id, MALFORMED))
def test_a_malformed_body_is_answered_with_a_bounded_error(
    post: Any, version: str | None, body: bytes, code: int, answered_id: Any
) -> None:
    status, payload = post(body, version)
    assert status == 400, (status, payload[:200])
    assert len(payload) < 300, payload[:200]  # nothing sent is echoed but a usable id
    answer = json.loads(payload)
    assert answer == {"jsonrpc": "2.0", "id": answered_id, "error": {"code": code, "message": ANY}}
    assert answer["error"]["message"]


@pytest.mark.parametrize("post", HOSTS, indirect=True)
@pytest.mark.parametrize("request_id", [0, -(2**53 - 1), 2**53 - 1, "", "x" * 256])
def test_a_valid_request_is_answered_by_the_sdk_with_its_id(post: Any, request_id: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
    status, payload = post(body, "2025-11-25")
    assert status == 200
    assert json.loads(payload) == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@pytest.mark.parametrize("post", HOSTS, indirect=True)
@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}',
        b'{"jsonrpc": "2.0", "id": 5, "result": {}}',  # a response: never answered either
        b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "x"}}',
    ],
)
def test_a_notification_or_a_response_is_accepted_unanswered(post: Any, body: bytes) -> None:
    status, payload = post(body, "2025-11-25")
    assert (status, payload) == (202, b"")


def test_the_sdks_host_check_comes_first(serve_url: str) -> None:
    """A request the SDK refuses before reading its body (DNS rebinding: a foreign Host)
    is refused by the SDK as before, whatever its body."""
    body = b'{"jsonrpc": "2.0", "id": null, "method": "ping"}'
    status, payload = serve_post(serve_url, body, "2025-11-25", {"Host": "evil.example"})
    assert status == 421, (status, payload)
