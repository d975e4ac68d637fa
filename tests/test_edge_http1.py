"""agent_edge.http1, the local edge's request-head reader, and `serve` on the wire.

Where `http.server` answered right, the reader must answer the same: the request-line
cases run through `BaseHTTPRequestHandler.parse_request` itself and the two are compared.
Where it guessed (a header line it could not read ended the header block silently; a bad
Content-Length raised), each refusal is fed its violation here.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler

import pytest

from agent_contract import paths
from agent_contract.routes import HEADER_POLICY, JSON
from agent_edge import http1
from agent_edge.edge import Response
from agent_edge.serve import EdgeServer, load_edge
from tests.conftest import SPEC_SITE

HOST = "127.0.0.1"
FAQ_PATH = "/api/v1/faq/q01-difference.json"

# --------------------------------------------------------------------------- request line


class _StdlibProbe(BaseHTTPRequestHandler):
    """http.server's own parse_request over bytes, its error answers recorded."""

    protocol_version = "HTTP/1.1"

    def __init__(self, raw: bytes) -> None:  # no socket, no server
        self.rfile = io.BytesIO(raw)
        self.wfile = io.BytesIO()
        self.raw_requestline = self.rfile.readline(65537)
        self.errors: list[tuple[int, str | None]] = []

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        self.errors.append((int(code), message))


REQUEST_LINES = [
    "GET /llms.txt HTTP/1.1",
    "HEAD /x?y=1 HTTP/1.1",
    "GET //llms.txt HTTP/1.1",
    "GET\t/llms.txt\tHTTP/1.1",
    "GET  /llms.txt  HTTP/1.1",
    "GET /llms.txt HTTP/1.0",
    "GET /llms.txt HTTP/1.2",
    "GET /llms.txt HTTP/01.01",
    "GET /llms.txt HTTP/0.9",
    "GET /llms.txt",  # HTTP/0.9
    # violations
    "POST /llms.txt",
    "GET /a b HTTP/1.1",
    "GET / HTTP/1.1 extra",
    "GET / HTTP/1.x",
    "GET / HTTP/1",
    "GET / HTTP/1.1.1",
    "GET / http/1.1",
    "GET / HTTP/+1.1",
    "GET / HTTP/12345678901.1",
    "GET / HTTP/2.0",
    "GET / HTTP/3.0",
    "GET",
    "GET / HTTP/1.\xb2",  # a Latin-1 superscript two: str.isdigit() says yes, int() no
    "GET / HTTP/\xb9.1",
]


@pytest.mark.parametrize("text", REQUEST_LINES)
def test_request_line_answers_as_http_server(text: str) -> None:
    probe = _StdlibProbe(text.encode("latin-1") + b"\r\nHost: x\r\n\r\n")
    accepted = probe.parse_request()
    try:
        line = http1.parse_request_line(text)
    except http1.BadRequest as refused:
        assert not accepted and probe.errors == [(refused.status, refused.message)], text
        return
    assert accepted and probe.errors == [], (text, probe.errors)
    assert line is not None
    assert (line.command, line.version) == (probe.command, probe.request_version)
    # http.server keeps an HTTP/1.1 connection open; it also did for HTTP/1.0 with
    # `Connection: keep-alive`, which `serve` no longer does (see the wire tests below).
    assert line.persistent == (not probe.close_connection), text


def test_a_blank_request_line_is_no_request() -> None:
    assert http1.parse_request_line("") is None
    assert http1.parse_request_line("  ") is None


# --------------------------------------------------------------------------- header block


def fields_of(block: bytes) -> http1.Fields | None:
    return http1.read_fields(io.BufferedReader(io.BytesIO(block)))  # type: ignore[arg-type]


def test_fields_are_kept_in_order_with_their_names_as_sent() -> None:
    fields = fields_of(
        b"Host: a\r\naccept:  text/markdown \t\r\nX-Empty:\r\nX-Latin: caf\xe9\r\n"
        b'If-None-Match: "x", W/"y"\r\nHOST: b\r\n\r\nGET / HTTP/1.1\r\n'
    )
    assert fields is not None
    assert fields.items == [
        ("Host", "a"),
        ("accept", "text/markdown"),  # whitespace around a value is not part of it
        ("X-Empty", ""),
        ("X-Latin", "caf\xe9"),
        ("If-None-Match", '"x", W/"y"'),
        ("HOST", "b"),
    ]
    assert fields.framing == {"host": ["a", "b"]}


def test_a_bare_lf_ends_lines_as_in_http_server() -> None:
    fields = fields_of(b"Host: a\nAccept: b\n\n")
    assert fields is not None and fields.items == [("Host", "a"), ("Accept", "b")]


BAD_FIELD_LINES = {
    "no-colon": (b"NoColon\r\n", "without a colon"),
    "space-before-colon": (b"Accept : x\r\n", "before the colon"),
    "tab-before-colon": (b"Accept\t: x\r\n", "before the colon"),
    "empty-name": (b": x\r\n", "before the colon"),
    "name-not-a-token": (b"X(y): z\r\n", "not a token"),
    "name-with-space": (b"X Y: z\r\n", "not a token"),
    "obs-fold-space": (b"X-A: b\r\n c\r\n", "obsolete line folding"),
    "obs-fold-tab": (b"X-A: b\r\n\tc\r\n", "obsolete line folding"),
    "nul-in-value": (b"X-A: b\x00c\r\n", "control character"),
    "bare-cr-in-value": (b"X-A: b\rc\r\n", "control character"),
    "escape-in-value": (b"X-A: \x1b[31m\r\n", "control character"),
    "del-in-value": (b"X-A: b\x7f\r\n", "control character"),
}


@pytest.mark.parametrize("name", sorted(BAD_FIELD_LINES))
def test_a_field_line_that_is_not_name_colon_value_is_400(name: str) -> None:
    line, reason = BAD_FIELD_LINES[name]
    # http.server's email parser took such a line, and every line after it, as a body:
    # the Connection: close below was silently dropped.
    with pytest.raises(http1.BadRequest) as refused:
        fields_of(b"Host: x\r\n" + line + b"Connection: close\r\n\r\n")
    assert refused.value.status == 400
    assert reason in refused.value.message


def test_header_limits_are_http_clients() -> None:
    """431 past 65,536 bytes in one line or 100 lines in the block (the blank one that
    closes it counted), exactly where `http.client.parse_headers` raised."""

    def block(count: int) -> bytes:
        return b"".join(b"X-%d: y\r\n" % i for i in range(count)) + b"\r\n"

    def stdlib_refuses(data: bytes) -> bool:
        try:
            http.client.parse_headers(io.BytesIO(data))
        except http.client.HTTPException:
            return True
        return False

    long_line = b"X-Long: " + b"a" * (http1.MAX_LINE - 10) + b"\r\n\r\n"
    longer_line = b"X-Long: " + b"a" * (http1.MAX_LINE - 9) + b"\r\n\r\n"
    for data, refused in [
        (block(99), False),
        (block(100), True),
        (block(150), True),
        (long_line, False),
        (longer_line, True),
    ]:
        assert stdlib_refuses(data) is refused
        if refused:
            with pytest.raises(http1.BadRequest) as error:
                fields_of(data)
            assert error.value.status == 431
        else:
            assert fields_of(data) is not None


def test_a_long_value_is_read_in_linear_time() -> None:
    # The pattern is greedy, without nested repetition: a 64 KiB value of spaces and
    # words that fails at its last byte does not backtrack for seconds.
    line = b"X-A: " + b"a " * 32_000 + b"\x01\r\n\r\n"
    started = time.perf_counter()
    with pytest.raises(http1.BadRequest):
        fields_of(line)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("cut", [b"Host: x\r\n", b"Host: x", b""])
def test_a_block_cut_by_the_client_is_no_request(cut: bytes) -> None:
    assert fields_of(cut) is None


def _line(text: str) -> http1.RequestLine:
    line = http1.parse_request_line(text)
    assert line is not None
    return line


def test_host_exactly_once_in_http_1_1() -> None:
    one = fields_of(b"Host: x\r\n\r\n")
    none = fields_of(b"Accept: */*\r\n\r\n")
    two = fields_of(b"Host: x\r\nhost: y\r\n\r\n")
    assert one is not None and none is not None and two is not None
    http1.check_host(_line("GET / HTTP/1.1"), one)
    http1.check_host(_line("GET / HTTP/1.0"), none)  # HTTP/1.0 had no Host
    for line, fields in [
        ("GET / HTTP/1.1", none),
        ("GET / HTTP/1.1", two),
        ("GET / HTTP/1.0", two),
    ]:
        with pytest.raises(http1.BadRequest) as refused:
            http1.check_host(_line(line), fields)
        assert refused.value.status == 400 and "Host" in refused.value.message


@pytest.mark.parametrize(
    ("lines", "length"),
    [([], 0), (["0"], 0), (["42"], 42), (["42", "42"], 42), (["007"], 7),
     (["9" * 18], 10**18 - 1), (["0" * 30 + "42"], 42)],
)  # fmt: skip
def test_content_length_read(lines: list[str], length: int) -> None:
    fields = fields_of(b"".join(b"Content-Length: %s\r\n" % v.encode() for v in lines) + b"\r\n")
    assert fields is not None and http1.content_length(fields) == length


@pytest.mark.parametrize(
    "lines",
    [["abc"], ["-1"], ["+1"], ["1.0"], ["0x10"], ["1 2"], ["1,1"], [""], ["1", "2"], ["²"],
     ["1" * 4401], ["9" * 19], ["1" + "0" * 18]],
)  # fmt: skip
def test_a_content_length_that_is_not_one_decimal_number_is_400(lines: list[str]) -> None:
    # Before, int() raised on most of these (a traceback, a dropped connection) and a
    # negative one read the connection to its end.
    data = b"".join(b"Content-Length: %s\r\n" % v.encode() for v in lines) + b"\r\n"
    fields = fields_of(data)
    assert fields is not None
    with pytest.raises(http1.BadRequest) as refused:
        http1.content_length(fields)
    assert refused.value.status == 400 and "Content-Length" in refused.value.message


def test_list_options_over_several_lines_and_without_case() -> None:
    fields = fields_of(b"Connection: keep-alive, Upgrade\r\nconnection: CLOSE\r\n\r\n")
    assert fields is not None
    assert http1.options(fields, "connection") == {"keep-alive", "upgrade", "close"}
    assert http1.options(fields, "expect") == set()


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
    for name, value in HEADER_POLICY.every_response.items():
        assert headers[name] == value
    error = json.loads(body)["error"]
    assert error["status"] == status and reason in error["message"], error


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("Content-Length: abc\r\n", "Content-Length"),
        ("Content-Length: -1\r\n", "Content-Length"),
        ("Content-Length: 1\r\nContent-Length: 2\r\n", "Content-Length"),
        ("NoColon\r\n", "colon"),
        ("X-A: b\r\n c\r\n", "folding"),
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


def test_http_0_9_gets_the_body_alone_at_once(edge_port: int) -> None:
    # No header block follows an HTTP/0.9 request line; http.server waited for one.
    assert talk(edge_port, b"GET /llms.txt\r\n") == get(edge_port, paths.LLMS_TXT)[2]


def test_the_one_write_answer_is_what_http_servers_writer_wrote(
    edge_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept answer's bytes (status line, Server, Date, header lines, body in one
    write) equal what send_response, send_header and end_headers write, which serve
    still uses when an answer carries a Connection header (header_lines None)."""
    host = f"Host: {HOST}\r\n"
    stream = "".join(
        f"{method} {target} HTTP/1.1\r\n{host}{extra}\r\n"
        for method, target, extra in [
            ("GET", FAQ_PATH, ""),
            ("GET", FAQ_PATH, "Accept: text/markdown\r\n"),
            ("GET", FAQ_PATH, "If-None-Match: *\r\n"),
            ("HEAD", paths.LLMS_TXT, ""),
            ("GET", "/nope", ""),
            ("OPTIONS", FAQ_PATH, "Access-Control-Request-Method: GET\r\n"),
            ("OPTIONS", FAQ_PATH, "Access-Control-Request-Method: PUT\r\n"),
            ("GET", paths.LLMS_TXT, "Connection: close\r\n"),
        ]
    ).encode()

    def without_dates(data: bytes) -> list[tuple[str, dict[str, str], bytes]]:
        got = answers(data, heads=(3,))
        for _, headers, _ in got:
            sent = parsedate_to_datetime(headers.pop("Date")).timestamp()
            assert abs(sent - time.time()) < 5
        return got

    fast = without_dates(talk(edge_port, stream))
    monkeypatch.setattr(Response, "header_lines", property(lambda self: None))
    slow = without_dates(talk(edge_port, stream))
    assert len(fast) == 8 and fast == slow
    assert all(next(iter(headers)) == "Server" for _, headers, _ in fast)


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
        assert answers(talk(server.server_address[1], request))[0][0].endswith("404 Not Found")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    logged = capsys.readouterr().err
    assert '"GET /\\x1b[2J HTTP/1.1" 404 -' in logged and "\x1b" not in logged


# ------------------------------------------------- outside review 8 (docs/decisions.md)


def test_a_non_ascii_digit_in_the_version_is_400_on_the_wire(edge_port: int) -> None:
    # str.isdigit() takes "\xb2" (superscript two), int() does not: a traceback and no
    # answer, where http.server answered 400.
    request = b"GET /llms.txt HTTP/1.\xb2\r\nHost: x\r\n\r\n"
    check_refused(talk(edge_port, request), 400, "Bad request version")


@pytest.mark.parametrize("digits", [19, 4401, 5000])
def test_a_content_length_too_long_to_be_a_length_is_400(edge_port: int, digits: int) -> None:
    # 4,301 digits and more passed the pattern and then int() (Python's int-size limit).
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
        b"GET /llms.txt HTTP/1.1\r\nHost: x\r\nX: \x01\r\n\r\n",
        b"BREW /llms.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["body", "chunked", "post", "asked", "head-404", "http-1.0", "bad-header", "501"],
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
    "line",
    [b"GET //llms.txt HTTP/1.1", b"GET\t//llms.txt\tHTTP/1.1", b"GET  //llms.txt  HTTP/1.1"],
    ids=["spaces", "tabs", "double-spaces"],
)
def test_a_doubled_slash_is_looked_up_as_sent_however_the_line_is_spaced(
    edge_port: int, line: bytes
) -> None:
    # The CDN looks `//llms.txt` up as it is and misses; the answer came from the
    # normalised path whenever the request line was not split by single spaces.
    data = talk(edge_port, line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answers(data)[0][0] == "HTTP/1.1 404 Not Found"


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
def test_one_empty_line_before_the_request_line_is_ignored(edge_port: int, blank: bytes) -> None:
    # RFC 9112 2.2: "SHOULD ignore at least one empty line (CRLF) received prior to the
    # request-line" (a client may end a POST body with an extra CRLF).
    request = blank + f"GET {FAQ_PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    ((status, _, body),) = answers(talk(edge_port, request))
    assert status == "HTTP/1.1 200 OK" and body == get(edge_port, FAQ_PATH)[2]


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

    def line(size: int) -> bytes:
        start, end = b"GET /", b" HTTP/1.1\r\n"
        return start + b"a" * (size - len(start) - len(end)) + end

    at_limit = line(http1.MAX_LINE)
    assert len(at_limit) == 65_536
    data = talk(edge_port, at_limit + b"Host: x\r\nConnection: close\r\n\r\n")
    assert answers(data)[0][0] == "HTTP/1.1 404 Not Found"
    check_refused(talk(edge_port, line(http1.MAX_LINE + 1)), 414, "URI Too Long")


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
