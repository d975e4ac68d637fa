"""Streamable HTTP, stateless, JSON responses, behind one plain function any host can call.

    status, headers, body = handle_http("POST", "/mcp", request_headers, request_body, files)

`serve` (a threaded http.server) and the Lambda handler both call it; neither needs to
know ASGI. It bridges to the SDK's Starlette app on one event loop running in a daemon
thread, shared by every caller; each file source gets its own MCP server (created on
first use, kept while that source is the latest one seen), so `serve --watch` swaps in a
rebuilt site simply by passing the new files.

GET and HEAD of the server card's paths (SERVER_CARD_PATHS) answer the card
(agent_mcp.server_card). Only POST reaches the SDK: stateless with JSON responses, there
is no stream to GET and no session to DELETE, so every other method answers 405 with
`Allow: POST`, except a CORS preflight (OPTIONS with Origin and
Access-Control-Request-Method), which answers 204 so that browser-based MCP clients
can POST (CORS_PREFLIGHT).

Every request is answered, and framed: a body over MCP_MAX_BODY is 413 before the SDK
sees it (the SDK is given the same limit), and a request the server has not answered
within REQUEST_TIMEOUT is 504 and its task on the loop cancelled (tool work it still
waits for a thread to start is then dropped); both with a JSON-RPC error body. A body
that is no single valid JSON-RPC message (agent_mcp.envelope: an id the SDK would take
for a notification's, a batch, a wrong envelope, no JSON) is answered 400 with its
JSON-RPC error before the SDK sees it, once the SDK's own Host, Origin and
Content-Type checks have passed (a request they fail is left to the SDK to refuse).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request

from agent_contract.mcp_endpoint import MCP_MAX_BODY, MCP_PATH, SERVER_CARD_PATHS
from agent_mcp import server as mcp_server
from agent_mcp import server_card
from agent_mcp.catalog import Catalog
from agent_mcp.envelope import refusal, usable_id
from agent_mcp.server import CallGate, create_server
from agent_mcp.sources import FileSource, MemoryFiles

#: Seconds a host's thread waits for the server's answer: longer than a tool call's own
#: limit (agent_mcp.server.CallLimits.timeout, answered as a JSON-RPC error), shorter
#: than the Lambda function's timeout (infra.mcp_function.FUNCTION_TIMEOUT), so that
#: this bridge answers 504 before Lambda ends the invocation with no answer at all.
REQUEST_TIMEOUT = 25.0
METHOD_NOT_ALLOWED = (
    b'{"error":"method_not_allowed","message":"MCP over streamable HTTP: POST only '
    b'(stateless, JSON responses)"}\n'
)
Response = tuple[int, list[tuple[str, str]], bytes]
Files = FileSource | Mapping[str, Any]  # a source, or URL path -> bytes / artifact (.body)

#: CORS for browser-based clients: POST answers carry CORS_RESPONSE; a preflight answers
#: CORS_PREFLIGHT. The headers are what the SDK's clients send (content-type, accept,
#: mcp-protocol-version, mcp-session-id, last-event-id); no authorization (public API).
CORS_RESPONSE = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "mcp-session-id, mcp-protocol-version",
}
CORS_PREFLIGHT = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": (
        "content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id"
    ),
    "Access-Control-Max-Age": "86400",
}

#: Loopback hosts: a server bound to one of them refuses other Host headers (DNS
#: rebinding protection, as the SDK does for its own localhost apps).
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def jsonrpc_error(code: int, message: str, request_id: Any = None) -> bytes:
    """A JSON-RPC 2.0 error response body (id null when the request's is unknown)."""
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(error).encode() + b"\n"


def too_large() -> Response:
    """413 for a body over MCP_MAX_BODY: a JSON-RPC error an MCP client can show."""
    body = jsonrpc_error(
        types.INVALID_REQUEST,
        f"request body too large: the MCP endpoint reads at most {MCP_MAX_BODY} bytes",
    )
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    return 413, headers, body


def _request_id(body: bytes) -> Any:
    """The JSON-RPC id of a request body, when it has a usable one (else None)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    found = message.get("id") if isinstance(message, dict) else None
    return found if usable_id(found) else None


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The Content-Length the request declares, when it is one decimal number."""
    value = next((v for k, v in headers.items() if k.lower() == "content-length"), None)
    if not isinstance(value, str) or not value.isascii() or not value.strip().isdigit():
        return None
    digits = value.strip().lstrip("0")
    # RFC 9110 8.6: "anticipate potentially large decimal numerals and prevent parsing
    # errors due to integer conversion overflows" (int() refuses 4,301 digits and more).
    return int(digits or "0") if len(digits) <= 18 else 10**18


class _Loop:
    """One asyncio loop in a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-http", daemon=True).start()
                self.loop = loop
            return self.loop


_LOOP = _Loop()


class HttpEndpoint:
    """The SDK's streamable-HTTP app for one file source, with its session manager running."""

    def __init__(self, files: Files, allowed_hosts: list[str] | None = None) -> None:
        source = files if hasattr(files, "read") else _mapping_source(files)  # type: ignore[arg-type]
        self.catalog = Catalog(source)  # type: ignore[arg-type]
        security = (
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=allowed_hosts,
                allowed_origins=[f"http://{host}" for host in allowed_hosts]
                + [f"https://{host}" for host in allowed_hosts],
            )
            if allowed_hosts
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        # Its own threads for tool work, stopped with the endpoint (a rebuilt site).
        self.gate = CallGate(mcp_server.CALL_LIMITS)
        # The SDK's own Host, Origin and Content-Type checks, run before the envelope's
        # (as the SDK runs them before it reads a body): a request they refuse is left
        # to the SDK to refuse, in its words.
        self._guard = TransportSecurityMiddleware(security)
        self.server = create_server(self.catalog, gate=self.gate)
        self.app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=security,
            # The SDK's default is 4 MiB: one limit on every path, the contract's.
            max_request_body_size=MCP_MAX_BODY,
        )
        self._loop = _LOOP.get()
        self._stop = asyncio.Event()
        ready = threading.Event()

        async def run() -> None:
            async with self.server.session_manager.run():
                ready.set()
                await self._stop.wait()

        self._task = asyncio.run_coroutine_threadsafe(run(), self._loop)
        if not ready.wait(timeout=10):
            raise RuntimeError("the MCP session manager did not start")

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self.gate.close()

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        names = {k.lower() for k in headers}
        if path.partition("?")[0] in SERVER_CARD_PATHS:  # the card and catalog (SEP-2127)
            status, response_headers, payload = server_card.answer(
                self.catalog, method, path.partition("?")[0], headers
            )
        elif method.upper() == "OPTIONS" and {"origin", "access-control-request-method"} <= names:
            status, response_headers, payload = 204, list(CORS_PREFLIGHT.items()), b""
        elif method.upper() != "POST":
            status, response_headers, payload = (
                405,
                [("Allow", "POST"), ("Content-Type", "application/json")],
                METHOD_NOT_ALLOWED,
            )
        else:
            status, response_headers, payload = self._post(path, headers, body)
            cors = {k.lower() for k in CORS_RESPONSE}
            response_headers = [
                *((k, v) for k, v in response_headers if k.lower() not in cors),
                *CORS_RESPONSE.items(),
            ]
        # One framing for every answer, whatever the host does with it: the whole body and
        # its exact length (without it a keep-alive client waits for a body that never ends).
        kept = [(k, v) for k, v in response_headers if k.lower() != "content-length"]
        return status, [*kept, ("Content-Length", str(len(payload)))], payload

    def _post(self, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        if len(body) > MCP_MAX_BODY or (declared_length(headers) or 0) > MCP_MAX_BODY:
            # Hosts refuse earlier, from the Content-Length, before reading (serve, the
            # Lambda handler); this is the limit for any other caller of handle_http.
            return too_large()
        future = asyncio.run_coroutine_threadsafe(self._answer(path, headers, body), self._loop)
        try:
            return future.result(timeout=REQUEST_TIMEOUT)
        except concurrent.futures.TimeoutError:
            future.cancel()  # the request's task on the loop ends: nobody waits for it
            message = f"the MCP server did not answer within {REQUEST_TIMEOUT:g} s"
            payload = jsonrpc_error(types.REQUEST_TIMEOUT, message, _request_id(body))
            return 504, [("Content-Type", "application/json")], payload

    async def _answer(self, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        scope = _scope("POST", path, headers)
        if path.partition("?")[0] == MCP_PATH:
            admitted = await self._guard.validate_request(Request(scope), is_post=True) is None
            # Checked before the SDK, which reads a request whose id it cannot hold as a
            # notification (202, never answered) and other envelope faults as -32602.
            answer = refusal(body) if admitted else None
            if answer is not None:
                payload = jsonrpc_error(answer.error.code, answer.error.message, answer.id)
                return 400, [("Content-Type", "application/json")], payload
        return await _call_asgi(self.app, scope, body)


def _mapping_source(files: Mapping[str, Any]) -> MemoryFiles:
    return MemoryFiles(
        {path: value if isinstance(value, bytes) else value.body for path, value in files.items()}
    )


def _scope(method: str, path: str, headers: Mapping[str, str]) -> dict[str, Any]:
    raw_path, _, query = path.partition("?")
    host = next((v for k, v in headers.items() if k.lower() == "host"), "localhost")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": raw_path,
        "raw_path": raw_path.encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in headers.items()
        ],
        "client": ("127.0.0.1", 0),
        "server": (host.rsplit(":", 1)[0], 0),
    }
    return scope


async def _call_asgi(app: Any, scope: dict[str, Any], body: bytes) -> Response:
    delivered = False
    status = 500
    response_headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers.extend(
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", [])
            )
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return status, response_headers, b"".join(chunks)


_ENDPOINTS: dict[int, tuple[object, HttpEndpoint]] = {}
_ENDPOINTS_LOCK = threading.Lock()


def endpoint_for(files: Files, allowed_hosts: list[str] | None = None) -> HttpEndpoint:
    """The endpoint serving `files`, created on first use; a new `files` object replaces
    the previous one (a rebuilt site), whose server is then stopped."""
    key = id(files)
    with _ENDPOINTS_LOCK:
        known = _ENDPOINTS.get(key)
        if known is not None and known[0] is files:
            return known[1]
        endpoint = HttpEndpoint(files, allowed_hosts)
        for _, (_, old) in list(_ENDPOINTS.items()):
            old.close()
        _ENDPOINTS.clear()
        _ENDPOINTS[key] = (files, endpoint)
        return endpoint


def handle_http(
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes,
    files: Files,
    allowed_hosts: list[str] | None = None,
) -> Response:
    """Answer one HTTP request to the MCP endpoint: (status, headers, body)."""
    return endpoint_for(files, allowed_hosts).handle(method, path, headers, body)


def loopback_hosts(host: str) -> list[str] | None:
    """Host header patterns to accept when serving on `host` (None: no check)."""
    if host not in LOOPBACK:
        return None
    return [pattern for name in ("127.0.0.1", "localhost", "[::1]") for pattern in (f"{name}:*",)]
