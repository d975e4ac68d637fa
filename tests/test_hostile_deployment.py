"""What `verify` and `mcp --from` read is a deployment's answers, which are input too
(session 27, issue 24): a body they cannot use is a failed check or one `error:` line,
never a traceback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from agent_contract import paths
from agent_edge.edge import Edge, Response
from agent_edge.serve import EdgeServer
from tests.conftest import run_cli, running_server
from tests.test_hostile_content import within

#: JSON nested past the decoder's recursion limit (json.loads raised RecursionError).
DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def server(site_copy: Path) -> Iterator[EdgeServer]:
    with running_server(site_copy) as running:
        yield running


class _Answering(Edge):
    """The deployment, but `path` answers `body`."""

    def __init__(self, edge: Edge, path: str, body: bytes) -> None:
        super().__init__(edge.artifacts, edge.discovery_url)
        self.path, self.body = path, body

    def handle(self, method, target, headers) -> Response:  # type: ignore[no-untyped-def]
        answer = super().handle(method, target, headers)
        return replace(answer, body=self.body) if target == self.path else answer


def _answering(server: EdgeServer, path: str, body: bytes) -> None:
    assert server.edge is not None
    server.edge = _Answering(server.edge, path, body)


@pytest.mark.parametrize(
    ("path", "body"),
    [(paths.discovery("service"), DEEP), (paths.CONTENT_INDEX, DEEP),
     (paths.discovery("service"), b"{}"), (paths.discovery("service"), b"[]")],
)  # fmt: skip
def test_verify_reports_a_body_it_cannot_use_as_a_failed_check(
    server: EdgeServer, path: str, body: bytes
) -> None:
    # A discovery document that is JSON but not one (`{}`) raised ValidationError too.
    _answering(server, path, body)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "Traceback" not in result.out + result.err
    assert any(line.startswith("FAIL") for line in result.out.splitlines()), result.out


def test_mcp_from_a_deployment_answering_deep_json_is_one_error(server: EdgeServer) -> None:
    _answering(server, paths.MCP_MANIFEST, DEEP)
    result = run_cli("mcp", "--from", server.base_url)
    assert result.code == 1
    assert result.err.startswith("error: ") and "not an agent-access API" in result.err, result.err


@contextmanager
def _raw_server(answer: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """A TCP server on 127.0.0.1 whose every connection `answer` handles (after the
    request is read) until the server stops: its base URL; stopped on the way out."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                answer(conn, stop)
            except OSError:
                return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def _dripping_server() -> AbstractContextManager[str]:
    """Answers every request 200 with a 100,000-byte body sent one byte every 0.05 s:
    each read gets a byte before its timeout, so only a deadline for the whole answer
    ends it (about 80 minutes otherwise)."""

    def drip(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                     b"Content-Length: 100000\r\n\r\n")  # fmt: skip
        while not stop.wait(0.05):
            conn.sendall(b"x")

    return _raw_server(drip)


def test_verify_gives_up_on_an_answer_that_never_ends() -> None:
    with _dripping_server() as base_url, within(20):
        result = run_cli("verify", base_url, "--timeout", "1")
    assert result.code == 1
    assert any(line.startswith("FAIL") and base_url in line for line in result.out.splitlines())


def test_mcp_from_gives_up_on_an_answer_that_never_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_mcp import sources

    monkeypatch.setattr(sources, "ANSWER_TIMEOUTS", 0.3)  # 3 s, not 30, for the suite
    with _dripping_server() as base_url, within(20):
        result = run_cli("mcp", "--from", base_url)
    assert result.code == 1
    assert result.err.startswith("error: "), result.err


def _endless_server() -> AbstractContextManager[str]:
    """Answers every request 200 with a body that never ends, as fast as it is read."""

    def flood(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        while not stop.is_set():
            conn.sendall(b" " * 65536)

    return _raw_server(flood)


def test_an_answer_past_the_size_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # An answer was read whole into memory: 2 GB in 10 s, an endless one until the
    # deadline (gigabytes). The bound is lowered here so the test reads little.
    from agent_client import client
    from agent_mcp import sources

    monkeypatch.setattr(client, "MAX_ANSWER_BYTES", 1 << 20)
    monkeypatch.setattr(sources, "MAX_ANSWER_BYTES", 1 << 20)
    with _endless_server() as base_url, within(20):
        verified = run_cli("verify", base_url)
        served = run_cli("mcp", "--from", base_url)
    assert verified.code == 1 and "too large" in verified.out, verified.out
    assert served.code == 1 and "too large" in served.err, served.err
