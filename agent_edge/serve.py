"""`python -m content_builder serve`: the whole API on a local port, with the CDN's headers.

A thin shell around `edge.Edge`: a threaded HTTP server, one log line per request, an
optional watcher that rebuilds when site_data/ changes (a bad edit prints the error and
the last good build keeps being served). The build lives in memory: serving writes
neither dist/ nor the lock.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agent_contract import paths
from agent_contract.mcp_endpoint import MCP_MAX_BODY, MCP_PATH
from agent_contract.routes import HEADER_POLICY
from agent_edge import http1
from agent_edge.changes import DirectoryEvents
from agent_edge.edge import Edge
from content_builder.build import plan
from content_builder.errors import SiteDataError


class EdgeServer(ThreadingHTTPServer):
    daemon_threads = True
    # Many agents at once: the default backlog of 5 refuses connections under load.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], quiet: bool = False) -> None:
        super().__init__(address, EdgeRequestHandler)
        self.edge: Edge | None = None
        self.quiet = quiet

    def handle_error(self, request: object, client_address: tuple[str, int]) -> None:
        # A client that hangs up mid-answer is routine for a server, not a traceback.
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            if not self.quiet:
                sys.stderr.write(f"{client_address[0]} connection closed by client\n")
            return
        super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


#: The answer's first lines for each status (what `send_response` writes before the Date).
_STATUS_LINES: dict[int, bytes] = {}
#: (second, its HTTP date): `email.utils.formatdate` once per second, not per answer.
_date: tuple[int, str] = (0, "")
#: Bodies up to this size leave with their headers in one write (a copy of the body);
#: larger ones follow the headers in a second write (TCP_NODELAY sends both at once).
_JOINED_BODY = 64 * 1024
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_CLOSE = b"Connection: close\r\n"
#: The largest request body /mcp reads: the contract's one limit for every MCP path
#: (agent_contract.mcp_endpoint, which says why), refused from its Content-Length,
#: before 100 Continue and before anything is read.
MAX_MCP_BODY = MCP_MAX_BODY
#: After an answer that leaves request bytes unread (an error, a body the edge does not
#: read), the connection is drained this long before it is closed: closing with unread
#: data sends a reset, which can destroy the answer before the client reads it.
LINGER_SECONDS = 2.0


def _http_date() -> str:
    global _date
    second = int(time.time())
    cached = _date
    if cached[0] != second:  # threads may both format the same second: harmless
        cached = _date = (second, formatdate(second, usegmt=True))
    return cached[1]


class EdgeRequestHandler(BaseHTTPRequestHandler):
    server: EdgeServer
    protocol_version = "HTTP/1.1"
    # One send per answer: a kept answer is joined and sent at once (`_answer`), the
    # others (errors, /mcp) collect in this buffered writer until the answer is flushed,
    # and TCP_NODELAY (setup) sends what does not fit at once. Unbuffered, headers and
    # body went out in two writes and Nagle's algorithm held the second one until the
    # client's delayed ACK: ~40 ms per keep-alive request on loopback.
    wbufsize = 64 * 1024
    #: Seconds a read or a write may wait (StreamRequestHandler sets it on the socket): a
    #: client that stops sending mid-request, or leaves a keep-alive connection idle,
    #: otherwise holds its thread for ever (one thread per connection, no cap).
    timeout = 60.0
    #: The request's header fields, names as sent (what `dict(HTTPMessage.items())` gave).
    headers: dict[str, str]  # type: ignore[assignment]

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._unread_input = False

    def finish(self) -> None:
        super().finish()
        if self._unread_input:
            self._linger()

    def _linger(self) -> None:
        """Close in stages, as RFC 9112 9.6 describes: half-close, read and drop what
        the client still sends until it closes (or LINGER_SECONDS pass), then close. A
        full close with unread data sends a reset, which "might erase the client's
        unacknowledged input buffers" (the answer) before the client reads them."""
        deadline = time.monotonic() + LINGER_SECONDS
        try:
            self.connection.shutdown(socket.SHUT_WR)
            while (left := deadline - time.monotonic()) > 0:
                self.connection.settimeout(left)
                if not self.connection.recv(65536):
                    break
        except OSError:  # reset, timed out: the close goes ahead
            pass

    def version_string(self) -> str:
        return "agent-access-serve"

    def date_time_string(self, timestamp: float | None = None) -> str:
        return _http_date() if timestamp is None else super().date_time_string(timestamp)

    def handle_one_request(self) -> None:
        """http.server's step of the keep-alive loop, reading the request head with
        agent_edge.http1 instead of the email package (docs/decisions.md, "The local edge
        reads its requests itself"); the answers and their errors are http.server's."""
        try:
            self.raw_requestline = self.rfile.readline(http1.MAX_LINE + 1)
            if self.raw_requestline in (b"\r\n", b"\n"):
                # RFC 9112 2.2: "SHOULD ignore at least one empty line (CRLF) received
                # prior to the request-line" (a client may end a POST body with a CRLF).
                self.raw_requestline = self.rfile.readline(http1.MAX_LINE + 1)
            if len(self.raw_requestline) > http1.MAX_LINE:
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self._read_head():
                return
            handler = getattr(self, "do_" + self.command, None)
            if handler is None:
                self.send_error(
                    HTTPStatus.NOT_IMPLEMENTED, f"Unsupported method ({self.command!r})"
                )
                return
            handler()
            self.wfile.flush()  # one send per answer
        except TimeoutError as error:  # a read or a write timed out: drop the connection
            self.log_error("Request timed out: %r", error)
            self.close_connection = True

    def _read_head(self) -> bool:
        """The request line and header block; False when answered (an error) or cut."""
        self.command = None  # type: ignore[assignment]  # as http.server: none yet
        self.request_version = "HTTP/0.9"
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        try:
            line = http1.parse_request_line(self.requestline)
            if line is None:
                return False
            self.request_version = line.version
            self.command = line.command
            # As sent: http.server turns a leading "//" into "/" (gh-87389, a redirect-
            # safety measure); the CDN looks the doubled path up as it is, and misses.
            self.path = line.target
            if line.version == "HTTP/0.9":  # a bare `GET /path`: no header block follows
                self.headers, self._body_length = {}, 0
                self._body_framed, self._expect_continue = True, False
                return True
            fields = http1.read_fields(self.rfile)
            if fields is None:  # the client hung up before the blank line
                return False
            http1.check_host(line, fields)
            self._body_length = http1.content_length(fields)
        except http1.BadRequest as refused:
            self.send_error(refused.status, refused.message)
            return False
        self.headers = dict(fields.items)
        # HTTP/1.1 and later minors (RFC 9110 2.5), which `persistent` says; RFC 9110
        # 10.1.1: "A server that receives a 100-continue expectation in an HTTP/1.0
        # request MUST ignore that expectation."
        self._expect_continue = (
            line.persistent
            and "expect" in fields.framing
            and "100-continue" in http1.options(fields, "expect")
        )
        # A body no Content-Length frames cannot be skipped to reach the next request.
        self._body_framed = "transfer-encoding" not in fields.framing
        self.close_connection = not line.persistent or (
            "connection" in fields.framing and "close" in http1.options(fields, "connection")
        )
        return True

    def _answer(self) -> None:
        edge = self.server.edge
        assert edge is not None, "the server is published only after its first build"
        target = self.path
        if target.split("?", 1)[0] == MCP_PATH:  # the live MCP server (agent_mcp)
            return self._answer_mcp(edge, target)
        response = edge.handle(self.command, target, self.headers)
        if (
            self.command not in ("GET", "HEAD", "OPTIONS")
            or self._body_length
            or not self._body_framed
        ):
            # A body the edge does not read: the connection cannot be reused.
            self.close_connection = self._unread_input = True
        lines = response.header_lines if self.request_version != "HTTP/0.9" else None
        body = response.body
        if lines is None:  # a Connection header to act on, or HTTP/0.9's bare body
            self.send_response(response.status)
            for name, value in response.headers:
                self.send_header(name, value)
            if not any(name.lower() == "connection" for name, _ in response.headers):
                self._say_close()
            self.end_headers()
            if body:
                self.wfile.write(body)
            return
        # What send_response, send_header per line and end_headers write, in one piece.
        if not self.server.quiet:
            self.log_request(response.status)
        status_line = _STATUS_LINES.get(response.status)
        if status_line is None:
            status_line = _STATUS_LINES[response.status] = (
                f"{self.protocol_version} {response.status} "
                f"{self.responses.get(response.status, ('',))[0]}"
                f"\r\nServer: {self.version_string()}\r\n"
            ).encode("latin-1")
        date = f"Date: {_http_date()}\r\n".encode("latin-1")
        if self.close_connection:  # what _say_close sends on the other paths
            lines += _CLOSE
        # Straight to the socket (wfile holds nothing here: every answer is flushed).
        if len(body) <= _JOINED_BODY:
            self.connection.sendall(b"".join((status_line, date, lines, b"\r\n", body)))
        else:
            self.connection.sendall(b"".join((status_line, date, lines, b"\r\n")))
            # send() until all is out, not sendall(): with a timeout, sendall() must finish
            # within it, and an 86 MB llms-full.txt to a slow reader may not.
            view = memoryview(body)
            while view:
                view = view[self.connection.send(view) :]

    def _say_close(self) -> None:
        # A client's `close`: the server "SHOULD send a close connection option in its
        # final response" (RFC 9112 9.6); a final answer sent before the request content
        # is read "SHOULD indicate whether it intends to close the connection" (RFC 9110
        # 10.1.1). http.server's own send_error sends it.
        if self.close_connection:
            self.send_header("Connection", "close")

    def _answer_mcp(self, edge: Edge, target: str) -> None:
        from agent_mcp.http import handle_http, loopback_hosts

        if not self._body_framed:
            # The SDK's clients send a Content-Length; a chunked body is refused by name
            # (RFC 9110 15.5.12) rather than read as the next request.
            self.send_error(HTTPStatus.LENGTH_REQUIRED, "Send the body with a Content-Length")
            return
        if self._body_length > MAX_MCP_BODY:
            self.send_error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"The MCP endpoint reads request bodies of at most {MAX_MCP_BODY} bytes",
            )
            return
        if self._body_length and self._expect_continue:
            # Sent now, not buffered with the answer: the client waits for it (RFC 9110
            # 10.1.1), curl for a second, before it sends a body of more than 1 KiB.
            self.wfile.write(_CONTINUE)
            self.wfile.flush()
        body = self.rfile.read(self._body_length)
        if len(body) < self._body_length:  # the client hung up mid-body
            self.close_connection = True
            return
        status, headers, payload = handle_http(
            self.command, target, self.headers, body,
            edge.artifacts, loopback_hosts(self.server.server_address[0]),
        )  # fmt: skip
        self.send_response(status)
        own = {name.lower() for name, _ in headers}  # /mcp's CORS headers win, as on the CDN
        policy = [(k, v) for k, v in HEADER_POLICY.every_response.items() if k.lower() not in own]
        for name, value in [*headers, *policy]:  # as the CDN
            self.send_header(name, value)
        self._say_close()
        self.end_headers()
        self.wfile.write(payload if self.command != "HEAD" else b"")

    do_GET = do_HEAD = do_OPTIONS = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Malformed requests (bad request line, unknown method names, oversized headers)
        # still get a JSON body and the header policy, CORS included, instead of
        # http.server's bare HTML page.
        edge = self.server.edge
        if edge is None:
            super().send_error(code, message, explain)
            return
        if code == 501:  # http.server's answer to a method it has no do_ handler for
            response = edge.handle(self.command or "UNKNOWN", "/", {})
        else:
            status = HTTPStatus(code)
            error_code = status.phrase.lower().replace(" ", "_").replace("-", "_")
            response = edge.error(code, error_code, message or status.phrase)
        # An error found before the version token was read leaves http.server assuming
        # HTTP/0.9, which has no status line and no headers: answer in HTTP/1.1 instead.
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.1"
        # What is left of the request (a body, the rest of its head) is not read.
        self.close_connection = self._unread_input = True
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self._say_close()
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: object) -> None:
        if not self.server.quiet:
            # Escaped as http.server's own log_message does: a request line is the
            # client's bytes, and a terminal obeys the escape sequences in it.
            line = (format % args).translate(self._control_char_table)
            sys.stderr.write(f"{self.address_string()} {line}\n")


def load_edge(site_dir: Path, base_url: str) -> Edge:
    result = plan(site_dir, base_url)
    artifacts = {artifact.path: artifact for artifact in result.artifacts}
    return Edge(artifacts, base_url + paths.discovery(result.site.config.brand))


Fingerprint = tuple[tuple[str, int, int], ...]


def fingerprint(site_dir: Path) -> Fingerprint:
    """(path, mtime, size) of every file under `site_dir` but dot-files, in path order.

    One `os.scandir` walk (no Path objects, no sort of Paths): the watcher takes this
    every poll, and at 20,000 files the rglob version cost 64 % of a core while idle.
    Symlinked folders are not entered (as rglob did); symlinked files are followed.
    """
    found: list[tuple[str, int, int]] = []
    pending = [str(site_dir)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:  # removed while we walked: the next poll sees the new state
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file() and not entry.name.startswith("."):
                    stat = entry.stat()
                    found.append((entry.path, stat.st_mtime_ns, stat.st_size))
            except OSError:
                continue
    found.sort()
    return tuple(found)


#: The watcher waits at least this many times as long as its last scan took, so that
#: polling stays under 2 % of a core however large site_data grows.
IDLE_FACTOR = 50
#: With inotify (agent_edge.changes) the watcher scans when woken, and otherwise only
#: this often, in case an event was lost (a watch limit, a network filesystem).
SAFETY_SCAN_SECONDS = 60.0


def _say(message: str) -> None:
    # Flushed: when stdout is a file or a pipe (a log, a supervisor), a rebuild's news
    # must not wait for a buffer to fill, nor be lost if the server is killed.
    print(message, flush=True)


def watch(
    server: EdgeServer,
    site_dir: Path,
    base_url: str,
    stop: threading.Event,
    interval: float = 0.5,
    report: Callable[[str], None] | None = None,
    built_from: Fingerprint | None = None,
) -> None:
    """Poll site_data/ and swap in a new build; a bad edit keeps the last good one.

    `built_from` is the state of site_data/ taken *before* the build being served was
    loaded, so that an edit made while it loaded is not missed.
    """
    report = report or _say
    seen = built_from if built_from is not None else fingerprint(site_dir)
    events = DirectoryEvents.open(site_dir)
    # With events, the first scan comes at once: an edit made before the watches were
    # set sent no event, and `seen` may predate it.
    wait = interval
    woken = events is not None
    while True:
        if woken:
            woken = False
        elif events is not None:
            events.wait(max(wait, SAFETY_SCAN_SECONDS), stop)  # woken by a change
            if stop.is_set():
                events.close()
                return
        elif stop.wait(wait):
            return
        # Nothing may end this loop but `stop`: a watcher that dies on one bad edit
        # leaves a server that silently serves stale content for the rest of the session.
        try:
            started = time.perf_counter()
            current = fingerprint(site_dir)
            wait = max(interval, IDLE_FACTOR * (time.perf_counter() - started))
            if current == seen:
                continue
            seen = current
            server.edge = load_edge(site_dir, base_url)
            report("rebuilt: serving the new content")
        except SiteDataError as error:
            report(f"rebuild failed, still serving the last good build:\n{error}")
        except Exception as error:  # a bug or an unforeseen input: report it, keep watching
            where = "".join(traceback.format_exception(error)).rstrip()
            report(
                f"rebuild failed with an unexpected error, still serving the last good "
                f"build (please report it):\n{where}"
            )


def serve(
    site_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    base_url: str | None = None,
    watch_changes: bool = False,
    ready: Callable[[EdgeServer], None] | None = None,
) -> int:
    try:
        server = EdgeServer((host, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            reason = f"port {port} on {host} is already in use (another `serve`?)"
            hint = "choose another with --port N (`make serve PORT=N`), or 0 for any free port"
        else:
            reason = f"cannot listen on {host}:{port}: {error.strerror or error}"
            hint = "check --host and --port"
        print(f"error: {reason}; {hint}", file=sys.stderr)
        return 1
    effective_base = (base_url or server.base_url).rstrip("/")
    built_from = fingerprint(site_dir)
    try:
        server.edge = load_edge(site_dir, effective_base)
    except SiteDataError:
        server.server_close()
        raise
    stop = threading.Event()
    if watch_changes:
        threading.Thread(
            target=watch,
            args=(server, site_dir, effective_base, stop),
            kwargs={"built_from": built_from},
            daemon=True,
        ).start()
    print(f"serving {len(server.edge.artifacts)} files on {server.base_url}")
    print(f"discovery: {server.edge.discovery_url}")
    sys.stdout.flush()
    if ready:
        ready(server)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("\nstopping")
    finally:
        stop.set()
        server.server_close()
    return 0
