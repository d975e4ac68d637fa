"""`serve` on the wire: raw bytes to a server on 127.0.0.1, its exact answers.

h11 reads each request (issue 24, docs/decisions.md "Issue 24: the local edge"): every
request HTTP forbids gets a 4xx with a status line, and the server goes on answering.
The cases the hand-written reader it replaced got wrong are each sent here; a
hypothesis test sends hostile heads of every kind.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_contract import paths
from agent_contract.routes import HEADER_POLICY, JSON
from agent_edge.serve import EdgeServer, load_edge
from tests.conftest import SPEC_SITE

HOST = "127.0.0.1"
FAQ_PATH = "/api/v1/faq/q01-difference.json"

# --------------------------------------------------------------------------- on the wire


@pytest.fixture(scope="module")
def edge_port() -> Iterator[int]:
    server = EdgeServer((HOST, 0), quiet=True)
    server.edge = load_edge(SPEC_SITE, server.base_url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(5)


def talk(port: int, data: bytes, shut: bool = False) -> bytes:
    """Send bytes; everything the server sends until it closes (or 5 s pass)."""
    with socket.create_connection((HOST, port), timeout=5) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def answers(data: bytes, heads: tuple[int, ...] = ()) -> list[tuple[str, dict[str, str], bytes]]:
    """Split a stream of HTTP/1.1 answers, each framed by its Content-Length but those
    to HEAD requests (their indexes in `heads`) and 304s, which have no body."""
    found: list[tuple[str, dict[str, str], bytes]] = []
    while data:
        head, separator, data = data.partition(b"\r\n\r\n")
        assert separator, head
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines)
        bodiless = " 304 " in status or len(found) in heads
        length = 0 if bodiless else int(headers.get("Content-Length", "0"))
        found.append((status, headers, data[:length]))
        data = data[length:]
    return found


def get(port: int, target: str, extra: str = "") -> tuple[str, dict[str, str], bytes]:
    request = f"GET {target} HTTP/1.1\r\nHost: {HOST}\r\n{extra}Connection: close\r\n\r\n"
    (answer,) = answers(talk(port, request.encode()))
    return answer


def test_pipelined_requests_are_answered_in_order(edge_port: int) -> None:
    host = f"Host: {HOST}\r\n"
    stream = (
        f"GET {FAQ_PATH} HTTP/1.1\r\n{host}\r\n"
        f"HEAD {paths.LLMS_TXT} HTTP/1.1\r\n{host}\r\n"
        f"GET {FAQ_PATH} HTTP/1.1\r\n{host}If-None-Match: *\r\n\r\n"
        f"GET /nope HTTP/1.1\r\n{host}Connection: close\r\n\r\n"
    ).encode()
    got = answers(talk(edge_port, stream), heads=(1,))
    assert [status for status, _, _ in got] == [
        "HTTP/1.1 200 OK",
        "HTTP/1.1 200 OK",
        "HTTP/1.1 304 Not Modified",
        "HTTP/1.1 404 Not Found",
    ]
    assert got[0][2] == get(edge_port, FAQ_PATH)[2]
    assert got[1][2] == b"" and got[3][2] == get(edge_port, "/nope")[2]


def _mcp_initialize() -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
    ).encode()


def _mcp_head(port: int, length: int | str, extra: str = "") -> bytes:
    # The MCP endpoint answers a loopback Host only with the server's own port.
    return (
        f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{extra}Content-Length: {length}\r\n\r\n"
    ).encode()


def test_a_pipelined_mcp_body_is_read_to_its_length_and_no_further(edge_port: int) -> None:
    body = _mcp_initialize()
    follow = f"GET {FAQ_PATH} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode()
    got = answers(talk(edge_port, _mcp_head(edge_port, len(body)) + body + follow))
    assert [status for status, _, _ in got] == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"]
    assert json.loads(got[0][2])["result"]["serverInfo"]
    assert got[1][2] == get(edge_port, FAQ_PATH)[2]


def test_expect_100_continue_is_sent_before_the_body_is_read(edge_port: int) -> None:
    body = _mcp_initialize()
    with socket.create_connection((HOST, edge_port), timeout=5) as sock:
        sock.sendall(
            _mcp_head(edge_port, len(body), "Expect: 100-continue\r\nConnection: close\r\n")
        )
        # Before, the 100 waited in the server's write buffer for the final answer: a
        # client that waits for it (curl does, one second) waited in vain.
        sock.settimeout(2)
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.settimeout(5)
        sock.sendall(body)
        rest = b"".join(iter(lambda: sock.recv(65536), b""))
    ((status, _, payload),) = answers(rest)
    assert status == "HTTP/1.1 200 OK" and json.loads(payload)["result"]


def check_refused(data: bytes, status: int, reason: str) -> None:
    """One JSON error with the header policy, and the connection closed after it."""
    ((status_line, headers, body),) = answers(data)
    assert status_line.startswith(f"HTTP/1.1 {status} "), status_line
    assert headers["Content-Type"] == JSON
    for name, value in HEADER_POLICY.every_response(paths.discovery("service")).items():
        assert headers[name] == value
    error = json.loads(body)["error"]
    assert error["status"] == status and reason in error["message"], error


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("Content-Length: abc\r\n", "Content-Length"),
        ("Content-Length: -1\r\n", "Content-Length"),
        ("Content-Length: 1\r\nContent-Length: 2\r\n", "Content-Length"),
        ("NoColon\r\n", "Bad request"),
        ("X A: b\r\n", "Bad request"),
        ("X-A: b\x00c\r\n", "Bad request"),
    ],
)
def test_bad_framing_on_the_mcp_endpoint_is_400_not_a_traceback(
    edge_port: int, extra: str, reason: str
) -> None:
    check_refused(talk(edge_port, _mcp_head(edge_port, 2, extra) + b"{}"), 400, reason)


def test_a_chunked_mcp_body_is_411_length_required(edge_port: int) -> None:
    body = _mcp_initialize()
    request = _mcp_head(edge_port, 0).replace(b"Content-Length: 0", b"Transfer-Encoding: chunked")
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    check_refused(talk(edge_port, request + chunked), 411, "Content-Length")


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /llms.txt HTTP/1.1\r\nConnection: close\r\n\r\n",
        b"GET /llms.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n",
    ],
    ids=["no-host", "two-hosts"],
)
def test_http_1_1_needs_exactly_one_host(edge_port: int, request_bytes: bytes) -> None:
    check_refused(talk(edge_port, request_bytes), 400, "Host")


def test_http_1_0_closes_after_its_answer_even_when_asked_to_keep_alive(edge_port: int) -> None:
    # http.server kept such a connection open without saying so (no `Connection:
    # keep-alive` in its answer): a 1.0 client reading to the end of the stream hung.
    for extra in ("", "Connection: keep-alive\r\n"):
        data = talk(edge_port, f"GET {FAQ_PATH} HTTP/1.0\r\n{extra}\r\n".encode())
        ((status, _, body),) = answers(data)  # and talk() saw the server close
        assert status == "HTTP/1.1 200 OK" and body == get(edge_port, FAQ_PATH)[2]


def test_connection_close_among_other_options_closes(edge_port: int) -> None:
    request = f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\nConnection: TE, Close\r\n\r\n"
    assert len(answers(talk(edge_port, request.encode()))) == 1


def test_a_body_the_edge_does_not_read_closes_the_connection(edge_port: int) -> None:
    # Before, the body was read as the next request line ("abcGET ..." answered 405).
    stream = (
        f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\n\r\n"
    ).encode()
    assert [status for status, _, _ in answers(talk(edge_port, stream))] == ["HTTP/1.1 200 OK"]


@pytest.mark.parametrize("cut", [b"GET /llms.txt HTTP/1.1\r\nHost: x\r\n", b"GET / HTTP/1.1\r\nHo"])
def test_a_request_cut_before_its_blank_line_is_not_answered(edge_port: int, cut: bytes) -> None:
    assert talk(edge_port, cut, shut=True) == b""
    assert get(edge_port, paths.LLMS_TXT)[0] == "HTTP/1.1 200 OK"  # the server goes on


def test_http_0_9_is_refused_with_a_status_line(edge_port: int) -> None:
    # RFC 9112 makes HTTP/0.9 optional and h11 does not speak it: a 400 in HTTP/1.1
    # (before: the body alone, no status line).
    check_refused(talk(edge_port, b"GET /llms.txt\r\n\r\n"), 400, "Bad request")


def test_the_date_is_the_current_second() -> None:
    from agent_edge.serve import _http_date

    before = formatdate(int(time.time()), usegmt=True)
    date = _http_date()
    after = formatdate(int(time.time()), usegmt=True)
    assert date in (before, after)


def test_the_log_line_escapes_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    server = EdgeServer((HOST, 0), quiet=False)
    server.edge = load_edge(SPEC_SITE, server.base_url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        request = b"GET /\x1b[2J HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        # A control character in the target: 400 now (h11), and still logged escaped.
        assert answers(talk(server.server_address[1], request))[0][0].endswith("400 Bad Request")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    logged = capsys.readouterr().err
    assert '"GET /\\x1b[2J HTTP/1.1" 400 -' in logged and "\x1b" not in logged


# ------------------------------------------------- outside review 8 (docs/decisions.md)


def test_a_non_ascii_digit_in_the_version_is_400_on_the_wire(edge_port: int) -> None:
    # str.isdigit() takes "\xb2" (superscript two), int() does not: a traceback and no
    # answer, where http.server answered 400.
    request = b"GET /llms.txt HTTP/1.\xb2\r\nHost: x\r\n\r\n"
    check_refused(talk(edge_port, request), 400, "Bad request")


@pytest.mark.parametrize("digits", [21, 4401, 5000])
def test_a_content_length_too_long_to_be_a_length_is_400(edge_port: int, digits: int) -> None:
    # 4,301 digits and more passed the pattern and then int() (Python's int-size limit);
    # h11 refuses more than 20.
    for head in (
        f"GET /llms.txt HTTP/1.1\r\nHost: x\r\nContent-Length: {'9' * digits}\r\n\r\n".encode(),
        _mcp_head(edge_port, "9" * digits),
    ):
        check_refused(talk(edge_port, head), 400, "Content-Length")


def test_the_mcp_limit_is_the_contracts() -> None:
    from agent_contract.mcp_endpoint import MCP_MAX_BODY
    from agent_edge.serve import MAX_MCP_BODY

    assert MAX_MCP_BODY == MCP_MAX_BODY  # one limit on every MCP path (issue 24)


@pytest.mark.parametrize("excess", [1, 10**12])
def test_an_mcp_body_over_the_function_url_limit_is_413_before_100_continue(
    edge_port: int, excess: int
) -> None:
    """Refused from its Content-Length alone: no 100 Continue, nothing read (before, the
    server tried to read it all: a MemoryError past the machine's memory)."""
    from agent_edge.serve import MAX_MCP_BODY

    head = _mcp_head(edge_port, MAX_MCP_BODY + excess, "Expect: 100-continue\r\n")
    data = talk(edge_port, head)
    assert b"100 Continue" not in data
    check_refused(data, 413, str(MAX_MCP_BODY))
    assert answers(data)[0][1]["Connection"] == "close"


def test_an_mcp_body_at_the_limit_is_accepted(edge_port: int) -> None:
    from agent_edge.serve import MAX_MCP_BODY

    head = _mcp_head(edge_port, MAX_MCP_BODY, "Expect: 100-continue\r\n")
    with socket.create_connection((HOST, edge_port), timeout=5) as sock:
        sock.sendall(head)
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"


@pytest.fixture
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> float:
    from agent_edge.serve import EdgeRequestHandler

    # Applied to each new connection's socket (StreamRequestHandler.setup).
    assert EdgeRequestHandler.timeout is not None and 0 < EdgeRequestHandler.timeout <= 120
    monkeypatch.setattr(EdgeRequestHandler, "timeout", 0.5)
    return 0.5


@pytest.mark.parametrize("part", ["head", "mcp-body", "idle"])
def test_a_connection_that_stops_sending_is_closed(
    edge_port: int, short_timeout: float, part: str
) -> None:
    """A half-sent request held its thread for ever (slowloris); a timeout ends it."""
    sent = {
        "head": b"GET /llms.txt HTTP/1.1\r\nHo",
        "mcp-body": _mcp_head(edge_port, 100) + b'{"jsonrpc":',
        "idle": b"",  # an idle keep-alive connection
    }[part]
    with socket.create_connection((HOST, edge_port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(sent)
        assert sock.recv(65536) == b""  # closed without an answer, not the 5 s timeout
        assert time.monotonic() - started < 4 * short_timeout + 1


def _close_header(data: bytes, heads: tuple[int, ...] = ()) -> list[str | None]:
    return [headers.get("Connection") for _, headers, _ in answers(data, heads)]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /llms.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
        b"GET /llms.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
        b"\r\n",
        b"POST /llms.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"GET /llms.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"HEAD /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /llms.txt HTTP/1.0\r\n\r\n",
        b"GET /llms.txt HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n",
        b"BREW /llms.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["body", "chunked", "post", "asked", "head-404", "http-1.0", "bad-header", "405"],
)
def test_an_answer_before_a_close_says_connection_close(
    edge_port: int, request_bytes: bytes
) -> None:
    # RFC 9112 9.6 and RFC 9110 10.1.1 (SHOULD): the client learns the connection ends
    # from the answer, not from a failed next request on it.
    heads = (0,) if request_bytes.startswith(b"HEAD") else ()
    assert _close_header(talk(edge_port, request_bytes), heads) == ["close"]


def test_http_client_sees_the_close_and_reconnects(edge_port: int) -> None:
    conn = http.client.HTTPConnection(HOST, edge_port, timeout=5)
    try:
        conn.request("GET", paths.LLMS_TXT, body=b"x")
        first = conn.getresponse()
        first.read()
        assert first.status == 200 and first.will_close
        conn.request("GET", paths.LLMS_TXT)  # before: RemoteDisconnected
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_the_mcp_answer_before_a_close_says_connection_close(edge_port: int) -> None:
    body = _mcp_initialize()
    data = talk(edge_port, _mcp_head(edge_port, len(body), "Connection: close\r\n") + body)
    assert _close_header(data) == ["close"]


def test_kept_alive_answers_carry_no_connection_header(edge_port: int) -> None:
    body = _mcp_initialize()
    stream = (
        f"GET {FAQ_PATH} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
        + _mcp_head(edge_port, len(body))
        + body
        + f"GET /nope HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode()
    )
    assert _close_header(talk(edge_port, stream)) == [None, None, "close"]


@pytest.mark.parametrize(
    ("line", "status"),
    [
        (b"GET //llms.txt HTTP/1.1", "404 Not Found"),
        (b"GET\t//llms.txt\tHTTP/1.1", "400 Bad Request"),
        (b"GET  //llms.txt  HTTP/1.1", "400 Bad Request"),
    ],
    ids=["spaces", "tabs", "double-spaces"],
)
def test_a_doubled_slash_is_looked_up_as_sent(edge_port: int, line: bytes, status: str) -> None:
    # The CDN looks `//llms.txt` up as it is and misses. RFC 9112 3: the request line's
    # words are separated by single spaces; h11 refuses any other separator.
    data = talk(edge_port, line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answers(data)[0][0] == "HTTP/1.1 " + status


@pytest.mark.parametrize(("version", "continued"), [("HTTP/1.2", True), ("HTTP/1.0", False)])
def test_100_continue_for_http_1_1_and_later_minors_only(
    edge_port: int, version: str, continued: bool
) -> None:
    # RFC 9110 2.5: a 1.x message with a higher minor is handled as 1.1; RFC 9110
    # 10.1.1: a 100-continue expectation in an HTTP/1.0 request is ignored ("MUST").
    body = _mcp_initialize()
    head = _mcp_head(edge_port, len(body), "Expect: 100-continue\r\nConnection: close\r\n")
    head = head.replace(b"HTTP/1.1", version.encode(), 1)
    with socket.create_connection((HOST, edge_port), timeout=5) as sock:
        sock.sendall(head)
        if continued:
            assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        rest = b"".join(iter(lambda: sock.recv(65536), b""))
    ((status, _, payload),) = answers(rest)
    assert status == "HTTP/1.1 200 OK" and json.loads(payload)["result"]


@pytest.mark.parametrize("blank", [b"\r\n", b"\n"])
def test_an_empty_line_before_the_request_line_is_a_400(edge_port: int, blank: bytes) -> None:
    # RFC 9112 2.2 says a server SHOULD ignore one; h11 refuses it ("no request line
    # received"), and this server answers as h11 reads (docs/decisions.md, issue 24).
    request = blank + f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    check_refused(talk(edge_port, request), 400, "Bad request")


def test_a_chunked_body_to_a_static_path_is_not_read_as_the_next_request(
    edge_port: int,
) -> None:
    # The chunk "3\r\nabc" would otherwise be parsed as a request line (a 400 answer).
    stream = (
        f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n"
        f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\n\r\n"
    ).encode()
    got = answers(talk(edge_port, stream))
    assert [status for status, _, _ in got] == ["HTTP/1.1 200 OK"]


def test_the_date_follows_the_clock_across_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_edge import serve

    now = [1_700_000_000.2]
    monkeypatch.setattr(serve.time, "time", lambda: now[0])
    first = serve._http_date()
    now[0] += 0.5  # the same second
    assert serve._http_date() == first == formatdate(1_700_000_000, usegmt=True)
    now[0] += 0.5  # the next one
    assert serve._http_date() == formatdate(1_700_000_001, usegmt=True)


def test_an_mcp_body_cut_by_the_client_is_not_answered(edge_port: int) -> None:
    body = _mcp_initialize()
    data = talk(edge_port, _mcp_head(edge_port, len(body)) + body[: len(body) // 2], shut=True)
    assert data == b""


def test_the_request_line_limit_on_the_wire(edge_port: int) -> None:
    """414 past 65,536 bytes of request line (its CRLF counted), as http.server."""
    from agent_edge.serve import MAX_HEAD

    def line(size: int) -> bytes:
        start, end = b"GET /", b" HTTP/1.1\r\n"
        return start + b"a" * (size - len(start) - len(end)) + end

    at_limit = line(MAX_HEAD)
    assert len(at_limit) == 65_536
    data = talk(edge_port, at_limit + b"Host: x\r\nConnection: close\r\n\r\n")
    assert answers(data)[0][0] == "HTTP/1.1 404 Not Found"
    check_refused(talk(edge_port, line(MAX_HEAD + 1)), 414, "URI Too Long")
    # Sent whole with its Host, the same line is refused the same way.
    longer = line(MAX_HEAD + 100) + b"Host: x\r\n\r\n"
    check_refused(talk(edge_port, longer), 414, "URI Too Long")


@pytest.mark.parametrize("target", [paths.LLMS_TXT, "/mcp"])
def test_a_client_sending_a_large_unread_body_still_reads_its_answer(
    edge_port: int, target: str
) -> None:
    """http.client sends the whole body before it reads. Closed with the body unread,
    the connection was reset: the client's send failed and it never saw the answer."""
    from agent_edge.serve import MAX_MCP_BODY

    conn = http.client.HTTPConnection(f"{HOST}:{edge_port}", timeout=10)
    try:
        conn.request("POST" if target == "/mcp" else "GET", target, body=b" " * (MAX_MCP_BODY + 1))
        response = conn.getresponse()
        assert response.status == (413 if target == "/mcp" else 200)
        assert response.will_close and response.read()
    finally:
        conn.close()


# --------------------------------------------------- issue 24: what HTTP forbids, refused

#: Request lines the hand-written reader answered 200 (str.split() took these for
#: spaces), 405 (a NUL in the method) or 200 (a version of three digits); each fails
#: against that reader. RFC 9112 3: method SP request-target SP HTTP-version, one space
#: each; a method is a token (RFC 9110 9.1); the version is HTTP/DIGIT.DIGIT (2.3).
FORBIDDEN_LINES = [
    pytest.param(b"GET\xa0/llms.txt HTTP/1.1", id="nbsp"),
    pytest.param(b"GET\x85/llms.txt HTTP/1.1", id="nel"),
    pytest.param(b"GET\x0b/llms.txt HTTP/1.1", id="vt"),
    pytest.param(b"GET\x0c/llms.txt HTTP/1.1", id="ff"),
    pytest.param(b"GET\x1c/llms.txt HTTP/1.1", id="fs"),
    pytest.param(b"GET\r/llms.txt HTTP/1.1", id="bare-cr"),
    pytest.param(b"GET /llms.txt\xa0HTTP/1.1", id="nbsp-before-version"),
    pytest.param(b"G\x00ET /llms.txt HTTP/1.1", id="nul-in-method"),
    pytest.param(b"GET\x00 /llms.txt HTTP/1.1", id="nul-after-method"),
    pytest.param(b"GET /llms.txt HTTP/1.01", id="version-1.01"),
    pytest.param(b"GET /llms.txt HTTP/01.1", id="version-01.1"),
]


@pytest.mark.parametrize("line", FORBIDDEN_LINES)
def test_a_request_line_http_forbids_is_400_and_the_server_goes_on(
    edge_port: int, line: bytes
) -> None:
    check_refused(talk(edge_port, line + b"\r\nHost: x\r\n\r\n"), 400, "Bad request")
    assert get(edge_port, paths.LLMS_TXT)[0] == "HTTP/1.1 200 OK"


def test_an_unknown_well_formed_method_is_405(edge_port: int) -> None:
    check_refused(talk(edge_port, b"BREW /llms.txt HTTP/1.1\r\nHost: x\r\n\r\n"), 405, "BREW")


@pytest.mark.parametrize(
    "target", [b"//evil.example/llms.txt", b"//evil.example/", b"//llms.txt", b"///llms.txt"]
)
def test_a_target_starting_with_two_slashes_is_a_path_not_an_authority(
    edge_port: int, target: bytes
) -> None:
    # urlsplit() read `evil.example` as a host and `/llms.txt` as the path: 200 llms.txt.
    # RFC 9112 3.2.1: origin-form is an absolute-path; the CDN looks it up as sent.
    status, _, body = get(edge_port, target.decode())
    assert status == "HTTP/1.1 404 Not Found"
    assert body == get(edge_port, "/nope")[2]


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("http://evil.example/llms.txt", paths.LLMS_TXT),
        ("HTTP://EVIL.EXAMPLE/llms.txt?x=1", paths.LLMS_TXT),
        ("https://evil.example" + FAQ_PATH, FAQ_PATH),
        ("http://evil.example", "/"),
        ("http://evil.example?x=1", "/"),
        ("http://evil.example//llms.txt", "/nope"),
        ("ftp://evil.example/llms.txt", "/nope"),
    ],
)
def test_an_absolute_form_target_answers_for_its_path(
    edge_port: int, target: str, path: str
) -> None:
    # RFC 9112 3.2.2: a server MUST accept the absolute form; its authority replaces the
    # Host (one site is served, so it changes nothing) and its path is looked up.
    got, expected = get(edge_port, target), get(edge_port, path)
    assert got[0] == expected[0] and got[2] == expected[2]


# ------------------------------------------------------- hostile heads (hypothesis)

_SEPARATORS = [b" ", b"\t", b"  ", b"\xa0", b"\x85", b"\x0b", b"\x0c", b"\x1c", b"\r", b""]
_CONTROL = st.binary(min_size=1, max_size=3).map(
    lambda raw: bytes(b % 32 if b < 128 else b for b in raw)
)


def _with_noise(good: list[bytes]) -> st.SearchStrategy[bytes]:
    """A good word, a random one, or a good one with control bytes spliced in."""
    return st.one_of(
        st.sampled_from(good),
        st.binary(max_size=12),
        st.tuples(st.sampled_from(good), _CONTROL, st.integers(0, 8)).map(
            lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]
        ),
    )


_METHODS = _with_noise([b"GET", b"HEAD", b"OPTIONS", b"POST", b"BREW", b"CONNECT"])
_TARGETS = _with_noise([b"/llms.txt", b"/", b"//x/llms.txt", b"http://x/llms.txt", b"*", b"/%00"])
_VERSIONS = _with_noise([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/1.01", b"HTTP/2.0", b"http/1.1", b""])
_FIELD = st.tuples(
    _with_noise([b"Host", b"Accept", b"Content-Length", b"Transfer-Encoding", b"Expect"]),
    _with_noise([b"x", b"0", b"5", b"chunked", b"100-continue", b"-1", b"text/markdown"]),
)


def _head(
    method: bytes,
    sep1: bytes,
    target: bytes,
    sep2: bytes,
    version: bytes,
    fields: list[tuple[bytes, bytes]],
    huge: int,
    end: bytes,
) -> bytes:
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in fields)
    padding = b"X-Huge: " + b"a" * huge + b"\r\n" if huge else b""
    return method + sep1 + target + sep2 + version + b"\r\n" + lines + padding + end


_HEADS = st.one_of(
    st.binary(max_size=300),
    st.builds(
        _head,
        _METHODS,
        st.sampled_from(_SEPARATORS),
        _TARGETS,
        st.sampled_from(_SEPARATORS),
        _VERSIONS,
        st.lists(_FIELD, max_size=6),
        st.sampled_from([0, 0, 0, 70_000, 200_000]),
        st.sampled_from([b"\r\n", b"\n", b"", b"\r\nabc", b"\r\n\r\n"]),
    ),
)
_STATUS_LINE = re.compile(rb"HTTP/1\.1 [1-5][0-9][0-9] [^\r\n]*\r\n")


def _check_answers(data: bytes) -> None:
    """Each answer in the stream starts with a status line, ends its head with a blank
    line and carries a Content-Length its body (none for HEAD, which a random head may
    be, and 304) fills."""
    while data:
        assert _STATUS_LINE.match(data), data[:200]
        head, blank, rest = data.partition(b"\r\n\r\n")
        assert blank, data[:200]
        length = re.search(rb"\r\nContent-Length: ([0-9]+)\r\n", head + b"\r\n")
        assert length, head
        bodiless = b" 304 " in head[:13] or rest == b"" or rest.startswith(b"HTTP/1.1 ")
        data = rest if bodiless else rest[int(length.group(1)) :]


@pytest.fixture(scope="module")
def watched_server() -> Iterator[tuple[int, list[BaseException]]]:
    """A server whose handler errors (a traceback, in a real one) are recorded."""
    errors: list[BaseException] = []

    class Recording(EdgeServer):
        def handle_error(self, request: object, client_address: tuple[str, int]) -> None:
            errors.append(sys.exc_info()[1] or RuntimeError("?"))
            super().handle_error(request, client_address)

    server = Recording((HOST, 0), quiet=True)
    server.edge = load_edge(SPEC_SITE, server.base_url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], errors
    server.shutdown()
    server.server_close()
    thread.join(5)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(head=_HEADS)
def test_every_hostile_head_gets_a_status_line_or_a_clean_close(
    watched_server: tuple[int, list[BaseException]], head: bytes
) -> None:
    port, errors = watched_server
    started = time.monotonic()
    with socket.create_connection((HOST, port), timeout=5) as sock:
        # The server may answer (a 4xx) and stop reading before a huge head is all sent.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head)
            sock.shutdown(socket.SHUT_WR)  # no more: a head cut here is the client's end
        chunks = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):  # raises TimeoutError after 5 s: a hang
                chunks.append(chunk)
    data = b"".join(chunks)
    assert time.monotonic() - started < 5
    _check_answers(data)
    assert errors == [], errors
    assert get(port, paths.LLMS_TXT)[0] == "HTTP/1.1 200 OK"  # and it goes on


# ------------------------------------------------- the answers, read by h11 as a client


def _read_as_h11_client(port: int, requests: list[tuple[str, str, list[tuple[str, str]]]]) -> list:
    """Send the requests on one connection, one after the other, and read each answer
    with h11's client: it refuses an answer whose framing is wrong (a body longer or
    shorter than its Content-Length, a body on HEAD or 304, a keep-alive after close)."""
    import h11

    client = h11.Connection(h11.CLIENT)
    got = []
    with socket.create_connection((HOST, port), timeout=5) as sock:
        for method, target, headers in requests:
            request = h11.Request(method=method, target=target, headers=[("Host", HOST), *headers])
            sock.sendall(client.send(request) + client.send(h11.EndOfMessage()))
            status, body = None, b""
            while True:
                event = client.next_event()
                if event is h11.NEED_DATA:
                    client.receive_data(sock.recv(65536))
                elif type(event) is h11.Response:
                    status = event.status_code
                elif type(event) is h11.Data:
                    body += bytes(event.data)
                elif type(event) is h11.EndOfMessage:
                    break
                else:
                    raise AssertionError(event)
            got.append((status, body, client.our_state))
            if client.our_state is h11.MUST_CLOSE:
                break
            client.start_next_cycle()
    return got


CLOSE = [("Connection", "close")]


def test_every_kind_of_answer_is_framed_as_h11_reads_it(edge_port: int) -> None:
    import h11

    requests = [
        ("GET", FAQ_PATH, []),
        ("GET", FAQ_PATH, [("Accept", "text/markdown")]),
        ("GET", FAQ_PATH, [("If-None-Match", "*")]),
        ("HEAD", paths.LLMS_TXT, []),
        ("HEAD", "/nope", []),
        ("GET", "/nope", []),
        ("OPTIONS", FAQ_PATH, [("Access-Control-Request-Method", "GET")]),
        ("OPTIONS", FAQ_PATH, [("Access-Control-Request-Method", "PUT")]),
        ("GET", paths.LLMS_TXT, []),
        ("DELETE", paths.LLMS_TXT, []),  # 405, and the connection closes
    ]
    got = _read_as_h11_client(edge_port, requests)
    assert [status for status, _, _ in got] == [200, 200, 304, 200, 404, 404, 200, 403, 200, 405]
    assert got[0][1] == get(edge_port, FAQ_PATH)[2]
    assert got[2][1] == got[3][1] == got[4][1] == b""  # 304, HEAD: no body
    assert got[-1][2] is h11.MUST_CLOSE and all(s is h11.DONE for _, _, s in got[:-1])
    # `Connection: close` ends the connection after its answer.
    ((status, _, state),) = _read_as_h11_client(edge_port, [("GET", FAQ_PATH, CLOSE)])
    assert status == 200 and state is h11.MUST_CLOSE


def test_a_refused_head_request_gets_headers_and_no_body(edge_port: int) -> None:
    # RFC 9110 9.3.2: the answer to HEAD has no content, an error's included.
    data = talk(edge_port, b"HEAD /llms.txt HTTP/2.0\r\nHost: x\r\n\r\n")
    ((status, headers, body),) = answers(data, heads=(0,))
    assert status.startswith("HTTP/1.1 505 ") and body == b"" and data.endswith(b"\r\n\r\n")
    assert int(headers["Content-Length"]) > 0 and headers["Connection"] == "close"
