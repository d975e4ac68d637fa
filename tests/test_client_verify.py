"""The agent client and `verify`, against a real local server; verify must catch breakage."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_client.client import AgentClient, ClientError
from agent_client.verify import verify
from agent_contract.artifacts import Artifact
from agent_edge.edge import Edge, Response
from agent_edge.serve import EdgeServer, load_edge
from tests.conftest import SPEC_SITE, run_cli, running_server


@pytest.fixture
def server(site_copy: Path) -> Iterator[EdgeServer]:
    with running_server(site_copy) as running:
        yield running


def test_verify_passes_against_a_good_server(server: EdgeServer, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    assert (
        run_cli(
            "build", "--site", SPEC_SITE, "--frozen", "--out", out, "--base-url", server.base_url
        ).code
        == 0
    )
    result = run_cli("verify", server.base_url, "--expect-from", out)
    assert result.code == 0, result.out
    assert ", 0 failed" in result.out
    report = verify(server.base_url, out)
    subjects = {finding.subject for finding in report.findings}
    assert "/api/v1/faq/q06-architecture.json" in subjects  # reached through discovery
    assert "/api/v1/verify-probe-does-not-exist.json" in subjects  # the 404 probe ran
    assert len(report.findings) > 300


def _without(edge: Edge, path: str) -> Edge:
    artifacts = dict(edge.artifacts)
    del artifacts[path]
    return Edge(artifacts, edge.discovery_url)


def test_verify_names_a_missing_file(server: EdgeServer) -> None:
    assert server.edge is not None
    server.edge = _without(server.edge, "/api/v1/faq/q04-protocols.json")
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "FAIL /api/v1/faq/q04-protocols.json: status 404" in result.out
    assert "get_faq(faq_id=q04-protocols)" in result.out


def test_verify_names_an_altered_file(server: EdgeServer, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    assert (
        run_cli(
            "build", "--site", SPEC_SITE, "--frozen", "--out", out, "--base-url", server.base_url
        ).code
        == 0
    )
    assert server.edge is not None
    artifacts = dict(server.edge.artifacts)
    path = "/api/v1/content/compatibility.json"
    document = json.loads(artifacts[path].body)
    document["title"] = "Compatible with everything"
    artifacts[path] = Artifact(path, json.dumps(document).encode())
    server.edge = Edge(artifacts, server.edge.discovery_url)

    result = run_cli("verify", server.base_url, "--expect-from", out)
    assert result.code == 1
    failures = [line for line in result.out.splitlines() if line.startswith("FAIL")]
    assert any(path in line and "content_hash" in line for line in failures), failures
    assert any(path in line and "differs from the local build" in line for line in failures)
    assert all(path in line for line in failures), "nothing else is blamed"


class _Decorated(Edge):
    """An edge whose responses a test rewrites, as a misconfigured CDN would."""

    def __init__(self, edge: Edge, rewrite) -> None:  # type: ignore[no-untyped-def]
        super().__init__(edge.artifacts, edge.discovery_url)
        self.rewrite = rewrite

    def handle(self, method, target, headers) -> Response:  # type: ignore[no-untyped-def]
        return self.rewrite(super().handle(method, target, headers), method, headers)


def test_verify_catches_a_missing_cors_header_on_errors(server: EdgeServer) -> None:
    def drop_cors_on_errors(response: Response, method: str, headers: dict) -> Response:
        if response.status < 400:
            return response
        kept = tuple(h for h in response.headers if h[0] != "Access-Control-Allow-Origin")
        return replace(response, headers=kept)

    assert server.edge is not None
    server.edge = _Decorated(server.edge, drop_cors_on_errors)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "Access-Control-Allow-Origin on a 404 without Origin" in result.out
    assert "Access-Control-Allow-Origin on a 404 with Origin" in result.out


def test_verify_catches_a_duplicated_cors_header_with_origin(server: EdgeServer) -> None:
    def duplicate_when_origin(response: Response, method: str, headers: dict) -> Response:
        if "Origin" not in headers:
            return response
        return replace(response, headers=(*response.headers, ("Access-Control-Allow-Origin", "*")))

    assert server.edge is not None
    server.edge = _Decorated(server.edge, duplicate_when_origin)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "with Origin: expected exactly one '*', got ['*', '*']" in result.out


def test_verify_reports_an_unreachable_server() -> None:
    result = run_cli("verify", "http://127.0.0.1:9", "--timeout", "2")
    assert result.code == 1
    assert "cannot" in result.out


def test_client_discovers_searches_and_reads(server: EdgeServer) -> None:
    client = AgentClient(server.base_url)
    discovery = client.discover()
    assert client.discovery_path == "/.well-known/service.json"
    assert (
        discovery.interfaces.search_index == server.base_url + "/api/v1/content/search-index.json"
    )
    hits = client.search("What do AI agents ask about my site? Privacy analytics")
    # The product page answers it best; the FAQ entry about it is among the results.
    assert hits[0].id == "llm-search-console"
    assert "q05-insights" in {hit.id for hit in hits}
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert client.get_document("developer-guide").content_type == "page"
    assert client.get_faq("q02-endpoints").question.endswith("?")
    with pytest.raises(ClientError) as missing:
        client.get_faq("q99-nothing")
    assert missing.value.status == 404


def test_client_search_matches_word_forms_the_naive_rule_misses(server: EdgeServer) -> None:
    client = AgentClient(server.base_url)
    # "deploys" and "telemetries" are not in the index as written; their stems are.
    hits = client.search("telemetries deploys")
    assert hits and set(hits[0].matched) == {"telemetries", "deploys"}


def test_client_uses_conditional_gets(server: EdgeServer) -> None:
    client = AgentClient(server.base_url)
    first = client.get_document("site")
    assert client.requests == {200: 1}
    again = client.get_document("site")
    assert again == first
    assert client.requests == {200: 1, 304: 1}


def test_is_fresh_follows_updated_at_and_content_hash(server: EdgeServer, site_copy: Path) -> None:
    client = AgentClient(server.base_url)
    document = client.get_document("compatibility")
    assert client.is_fresh(document)

    changed_site = site_copy.parent / "changed"
    shutil.copytree(site_copy, changed_site)
    doc_file = changed_site / "content" / "compatibility.yaml"
    data = yaml.safe_load(doc_file.read_text())
    data["title"] += " today"
    doc_file.write_text(yaml.safe_dump(data, sort_keys=False))
    server.edge = load_edge(changed_site, server.base_url)

    assert not client.is_fresh(document)
    assert client.get_document("compatibility").title.endswith(" today")
    assert client.is_fresh(client.get_document("compatibility"))


def _built_and_still_propagating(server: EdgeServer, tmp_path: Path) -> tuple[Path, Edge]:
    """The sample built for `server` into tmp_path/dist, and `server` answering without
    one FAQ file (a publish not yet through the CDN): the folder and the whole edge."""
    out = tmp_path / "dist"
    assert (
        run_cli(
            "build", "--site", SPEC_SITE, "--frozen", "--out", out, "--base-url", server.base_url
        ).code
        == 0
    )
    assert server.edge is not None
    good = server.edge
    server.edge = _without(good, "/api/v1/faq/q04-protocols.json")
    return out, good


def test_verify_retries_until_the_deployment_catches_up(server: EdgeServer, tmp_path: Path) -> None:
    """Right after a publish the CDN may still serve old copies: --retry-for waits it out."""
    out, good = _built_and_still_propagating(server, tmp_path)
    attempts: list[float] = []

    def sleep(seconds: float) -> None:
        attempts.append(seconds)
        server.edge = good  # the invalidation completed meanwhile

    now = iter(range(1000))
    report = verify(server.base_url, out, retry_for=60, sleep=sleep, clock=lambda: next(now))
    assert not report.failures
    assert len(attempts) == 1

    server.edge = _without(good, "/api/v1/faq/q04-protocols.json")
    stuck = verify(server.base_url, out, retry_for=2, sleep=lambda _: None, clock=lambda: next(now))
    assert stuck.failures, "gives up when the time is up, with the failures"


def test_the_retry_time_starts_after_the_first_build_of_the_expected_files(
    server: EdgeServer, tmp_path: Path
) -> None:
    """`verify --site --retry-for 60` on a site whose build takes longer than 60 s still
    retries: the deployment's time to catch up starts once the expected files exist."""
    out, good = _built_and_still_propagating(server, tmp_path)
    now = [0.0]

    def a_long_build() -> Path:
        now[0] += 100.0  # longer than the retry time
        return out

    def sleep(seconds: float) -> None:
        now[0] += seconds
        server.edge = good

    report = verify(
        server.base_url, retry_for=60, sleep=sleep, clock=lambda: now[0], expected=a_long_build
    )
    assert not report.failures, "retried after the build, within the retry time"


# --- verify is total: network failures are failed checks naming the URL ----------------


@contextmanager
def _misbehaving_server(mode: str) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts and then resets, stalls, or sends a cut-off
    answer; or, for "refuse", a port nothing listens on."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if mode == "refuse":
        listener.close()
        yield f"http://127.0.0.1:{port}"
        return
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.recv(65536)
            if mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            elif mode == "truncate":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nshort")
                conn.close()
            else:  # stall: never answer
                held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.parametrize("mode", ["refuse", "reset", "stall", "truncate"])
def test_verify_never_crashes_on_network_errors(mode: str) -> None:
    with _misbehaving_server(mode) as base_url:
        result = run_cli("verify", base_url, "--timeout", "0.5")
    assert result.code == 1, result.out
    assert "Traceback" not in result.out
    failures = [line for line in result.out.splitlines() if line.startswith("FAIL")]
    assert failures and all(base_url in line for line in failures), failures


@pytest.mark.parametrize(
    "error", [ConnectionResetError(104, "reset"), TimeoutError("timed out"),
              http.client.IncompleteRead(b"x", 10), ConnectionRefusedError(111, "refused")],
)  # fmt: skip
def test_a_network_error_mid_walk_is_a_failed_check_naming_the_url(
    server: EdgeServer, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    real = AgentClient.request

    def flaky(self, url, method="GET", headers=None):  # type: ignore[no-untyped-def]
        if method == "OPTIONS" or "verify-probe" in url:
            raise error
        return real(self, url, method, headers)

    monkeypatch.setattr(AgentClient, "request", flaky)
    report = verify(server.base_url)
    failed = [f"{f.subject}: {f.message}" for f in report.failures]
    assert any("OPTIONS" in line and server.base_url in line for line in failed), failed
    assert any("verify-probe-does-not-exist.json" in line for line in failed), failed
    assert len(report.findings) > 300, "the rest of the walk still ran"


def test_retry_for_retries_network_errors(
    server: EdgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = AgentClient.request
    broken = {"on": True}

    def flaky(self, url, method="GET", headers=None):  # type: ignore[no-untyped-def]
        if broken["on"]:
            raise ConnectionResetError(104, "reset")
        return real(self, url, method, headers)

    monkeypatch.setattr(AgentClient, "request", flaky)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        broken["on"] = False  # the network came back

    now = iter(range(1000))
    report = verify(server.base_url, retry_for=60, sleep=sleep, clock=lambda: next(now))
    assert not report.failures and len(sleeps) == 1


def test_verify_catches_an_unexposed_etag_and_a_304_with_content_type(
    server: EdgeServer,
) -> None:
    def misconfigure(response: Response, method: str, headers: dict) -> Response:
        kept = tuple(h for h in response.headers if h[0] != "Access-Control-Expose-Headers")
        if response.status == 304:
            kept = (*kept, ("Content-Type", "application/json"))
        return replace(response, headers=kept)

    assert server.edge is not None
    server.edge = _Decorated(server.edge, misconfigure)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "Access-Control-Expose-Headers without Origin includes ETag" in result.out
    assert "no Content-Type on a 304 without Origin" in result.out


def test_verify_catches_a_missing_alternate_link_and_a_wrong_token_estimate(
    server: EdgeServer,
) -> None:
    """Issue 26: the Link an answer carries is exactly the contract's, the alternate on an
    entry's answer included, and a Markdown answer's X-Markdown-Tokens is its estimate."""

    def as_cloudfront_without_its_function(
        response: Response, method: str, headers: dict
    ) -> Response:
        kept = []
        for name, value in response.headers:
            if name == "Link":
                value = ", ".join(v for v in value.split(", ") if 'rel="alternate"' not in v)
            if name == "X-Markdown-Tokens":
                value = str(int(value) + 1)
            kept.append((name, value))
        return replace(response, headers=tuple(kept))

    assert server.edge is not None
    server.edge = _Decorated(server.edge, as_cloudfront_without_its_function)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "FAIL /api/v1/content/site.json: Link" in result.out, result.out
    assert "FAIL /api/v1/content/site.md: X-Markdown-Tokens" in result.out, result.out
    assert "FAIL /api/v1/content/site.json (Accept: text/markdown): Link" in result.out
    # Answers that carry no alternate are not reported.
    assert "FAIL /api/v1/content/index.json" not in result.out


@pytest.mark.parametrize(
    ("altered", "expected"),
    [
        # The artifact the v0.2.0 index pins: its digest no longer matches.
        ("/.well-known/agent-skills/service/SKILL.md", "skill service: digest sha256:"),
        # The v0.1.0 copy: no longer the bytes the v0.2.0 index pins.
        ("/.well-known/skills/service/SKILL.md", "the same bytes as the SKILL.md"),
    ],
)
def test_verify_catches_a_skill_that_is_not_the_one_its_index_pins(
    server: EdgeServer, altered: str, expected: str
) -> None:
    """Issue 26: the Agent Skills discovery RFC's digest is the sha256 of the bytes served
    at the skill's `url` (clients reject a mismatch), and v0.1.0 clients get those bytes."""
    assert server.edge is not None
    artifacts = dict(server.edge.artifacts)
    artifacts[altered] = Artifact(altered, artifacts[altered].body + b"\nEdited by hand.\n")
    server.edge = Edge(artifacts, server.edge.discovery_url)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    failures = [line for line in result.out.splitlines() if line.startswith("FAIL")]
    assert any(expected in line for line in failures), failures
    assert all("skill" in line for line in failures), failures


# --- `verify --site` and a deployment's live MCP server -----------------------------


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (403, b'{"message": "methods: GET, HEAD, OPTIONS"}'),  # a CDN without the function
        (200, b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32600}}'),  # not an answer
        (200, b"<html>a catch-all page</html>"),
    ],
)
def test_no_live_mcp_server_is_assumed_where_none_answers_initialize(
    status: int, body: bytes
) -> None:
    """Only an `initialize` result makes `verify --site` expect files naming a server."""
    from agent_client.verify import live_mcp_endpoint

    with _probe_server(_answer(status, body)) as (base, _):
        assert live_mcp_endpoint(base) is None


def test_a_live_mcp_server_is_found_where_it_answers_initialize(server: EdgeServer) -> None:
    from agent_client.verify import live_mcp_endpoint

    assert live_mcp_endpoint(server.base_url) == server.base_url + "/mcp"


_RESULT = (
    '{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", '
    '"capabilities": {}, "serverInfo": {"name": "docs", "version": "1"}}}'
)


@pytest.mark.parametrize(
    "stream",
    [
        # "The server MAY send JSON-RPC requests and notifications before sending the
        # JSON-RPC response" (MCP 2025-06-18, Transports, Sending Messages to the Server),
        # logging among them before `initialized` (Lifecycle).
        'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/message", '
        '"params": {"level": "info", "data": "starting"}}\n\n'
        f"event: message\ndata: {_RESULT}\n\n",
        # A priming event (an id, empty data) first, as servers of the 2025-11-25 revision send.
        f"id: 0\ndata:\n\nid: 1\ndata: {_RESULT}\n\n",
        # One event's data over several `data:` lines (joined by newlines: the SSE format).
        "data: " + _RESULT.replace(", ", ",\ndata: ") + "\n\n",
    ],
)
def test_a_live_mcp_server_is_found_whatever_its_stream_sends_before_the_answer(
    stream: str,
) -> None:
    from agent_client.verify import live_mcp_endpoint

    with _probe_server(_answer(200, stream.encode("utf-8"), "text/event-stream")) as (base, _):
        assert live_mcp_endpoint(base) == base + "/mcp"


@contextmanager
def _probe_server(answer: Callable[[Any], None]) -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 whose every request `answer` handles: its base URL and the
    requests' lines; shut down on the way out."""
    import http.server

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            seen.append(self.requestline)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer(self)

        def do_GET(self) -> None:
            seen.append(self.requestline)
            answer(self)

        def do_DELETE(self) -> None:
            session = self.headers.get("Mcp-Session-Id")
            version = self.headers.get("MCP-Protocol-Version")
            seen.append(f"{self.requestline} session={session} version={version}")
            answer(self)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False  # a handler holding its stream open is not waited for
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _answer(status: int, body: bytes, content_type: str | None = None) -> Callable[[Any], None]:
    """An answer of `status` and `body`, its length given."""

    def send(handler: Any) -> None:
        handler.send_response(status)
        if content_type:
            handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return send


def _drip(handler: Any, data: bytes) -> None:
    """`data` every 0.25 s for 10 s, or until the probe hangs up: each write within the
    probe's read timeout."""
    import time

    try:
        for _ in range(40):
            handler.wfile.flush()
            time.sleep(0.25)
            handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True  # the probe gave up, as it should


def _probe_within(base: str, seconds: float) -> str | None:
    """The probe's finding (timeout 1.5 s), asserted to come within `seconds`."""
    import time

    from agent_client.verify import live_mcp_endpoint

    started = time.monotonic()
    found = live_mcp_endpoint(base, timeout=1.5)
    assert time.monotonic() - started < seconds, "held past the probe's timeout"
    return found


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_the_mcp_probe_ends_the_session_a_stateful_server_opened(content_type: str) -> None:
    """ "Clients that no longer need a particular session ... SHOULD send an HTTP DELETE to
    the MCP endpoint with the Mcp-Session-Id header" (2025-06-18, Transports), with the
    version the server negotiated in MCP-Protocol-Version, as on every later request."""
    negotiated = _RESULT.replace("2025-06-18", "2025-03-26")
    body = f"data: {negotiated}\n\n" if content_type == "text/event-stream" else negotiated

    def stateful(handler: Any) -> None:
        if handler.command == "DELETE":
            handler.send_response(200)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Mcp-Session-Id", "1868a90c-session")
        handler.send_header("Content-Length", str(len(body.encode())))
        handler.end_headers()
        handler.wfile.write(body.encode())

    with _probe_server(stateful) as (base, seen):
        assert _probe_within(base, 5) == base + "/mcp"
        assert seen == [
            "POST /mcp HTTP/1.1",
            "DELETE /mcp HTTP/1.1 session=1868a90c-session version=2025-03-26",
        ], seen


def test_the_mcp_probe_opens_no_session_to_end_where_the_server_keeps_none() -> None:
    with _probe_server(_answer(200, _RESULT.encode(), "application/json")) as (base, seen):
        assert _probe_within(base, 5) == base + "/mcp"
        assert seen == ["POST /mcp HTTP/1.1"], seen


def test_the_mcp_probe_does_not_follow_a_redirect() -> None:
    """urllib would repeat the POST as a GET, which a server may hold open as a stream."""
    from agent_client.verify import live_mcp_endpoint

    def redirect(handler: Any) -> None:
        handler.send_response(302)
        handler.send_header("Location", "/mcp/")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with _probe_server(redirect) as (base, seen):
        assert live_mcp_endpoint(base, timeout=2) is None
        assert seen == ["POST /mcp HTTP/1.1"], seen


@pytest.mark.parametrize("answers", [True, False])
def test_the_mcp_probe_stops_reading_a_stream_held_open(answers: bool) -> None:
    """A server SHOULD close its stream after the response, and may not: the probe takes
    the answer as it comes (or gives up at its timeout), never waits for the end."""
    result = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "s"}}})

    def held_open(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()  # no length: the stream lasts as long as the server likes
        handler.wfile.write(b": ping\n\n")
        if answers:
            handler.wfile.write(f"data: {result}\n\n".encode())
        _drip(handler, b": ping\n\n")

    with _probe_server(held_open) as (base, _):
        assert _probe_within(base, 4) == (base + "/mcp" if answers else None)


def test_the_mcp_probe_gives_up_on_headers_sent_a_byte_at_a_time() -> None:
    """The socket's timeout bounds each read, not the exchange: a server that sends its
    headers a byte at a time, each within it, held `verify --site` for as long as it
    liked (http.client reads a header line of up to 64 KiB: 18 hours at a byte a
    second). The probe gives up within its timeout in all, as it does on a body."""

    def trickled(handler: Any) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        _drip(handler, b"x")

    with _probe_server(trickled) as (base, _):
        assert _probe_within(base, 4) is None


def test_a_server_slow_to_end_its_session_is_still_found_live() -> None:
    """The probe's verdict is made before the session's DELETE: a server that answers
    `initialize` at once but holds the DELETE (its headers a line at a time) was
    reported as no MCP server, the verdict waiting behind the DELETE past the bound."""
    body = _RESULT.encode()

    def stateful(handler: Any) -> None:
        if handler.command == "DELETE":
            handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
            _drip(handler, b"X-Slow: 1\r\n")
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Mcp-Session-Id", "s1")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with _probe_server(stateful) as (base, seen):
        assert _probe_within(base, 5) == base + "/mcp"
        assert seen[0] == "POST /mcp HTTP/1.1" and seen[1].startswith("DELETE"), seen
