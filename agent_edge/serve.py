"""`python -m content_builder serve`: the whole API on a local port, with the CDN's headers.

A thin shell around `edge.Edge`: a threaded HTTP/1.1 server whose requests h11 reads,
one log line per request, an optional watcher that rebuilds when site_data/ changes (a
bad edit prints the error and the last good build keeps being served). The build lives
in memory: serving writes neither dist/ nor the lock.
"""

from __future__ import annotations

import errno
import importlib.metadata
import itertools
import os
import socket
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path
from typing import cast

import h11

from agent_contract import paths
from agent_contract.mcp_endpoint import MCP_MAX_BODY, MCP_PATH, SERVER_CARD_PATHS
from agent_contract.routes import HEADER_POLICY
from agent_edge.changes import SiteChanges
from agent_edge.edge import Edge, Response
from content_builder.build import Plan, plan
from content_builder.errors import BuildStopped, SiteDataError


class EdgeServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    # As http.server's: a restarted `serve` binds its port again at once.
    allow_reuse_address = True
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


#: The request head (request line and header block) a client may send, in bytes: h11
#: answers 431 past it (414 here when no line ended within it: the request line alone).
#: http.server allowed 65,536 bytes per line and 100 lines; one bound for the whole head
#: is what a server needs to know how much it may hold per connection.
MAX_HEAD = 65_536
#: Header lines a request may have (http.client's _MAXHEADERS, which http.server used):
#: more is 431, as before.
MAX_HEADERS = 100
#: Bodies up to this size leave with their headers in one write (a copy of the body);
#: larger ones follow the headers in a second write (TCP_NODELAY sends both at once).
_JOINED_BODY = 64 * 1024
#: The largest request body /mcp reads: the contract's one limit for every MCP path
#: (agent_contract.mcp_endpoint, which says why), refused from its Content-Length,
#: before 100 Continue and before anything is read.
MAX_MCP_BODY = MCP_MAX_BODY
#: After an answer that leaves request bytes unread (an error, a body the edge does not
#: read), the connection is drained this long before it is closed: closing with unread
#: data sends a reset, which can destroy the answer before the client reads it.
LINGER_SECONDS = 2.0
_SERVER = b"agent-access-serve"
#: Reason phrases by status, as http.server wrote them.
_REASONS = {status.value: status.phrase.encode("latin-1") for status in HTTPStatus}
#: What a log line shows of the client's bytes: control characters escaped, as
#: http.server's log_message does (a terminal obeys the escape sequences in them).
_CONTROL = str.maketrans(
    {c: rf"\x{c:02x}" for c in itertools.chain(range(0x20), range(0x7F, 0xA0))} | {0x5C: r"\\"}
)


def _http_date() -> str:
    global _date
    second = int(time.time())
    cached = _date
    if cached[0] != second:  # threads may both format the same second: harmless
        cached = _date = (second, formatdate(second, usegmt=True))
    return cached[1]


#: (second, its HTTP date): `email.utils.formatdate` once per second, not per answer.
_date: tuple[int, str] = (0, "")


class _Refused(Exception):
    """A request h11 read but this server will not answer (an HTTP version it does not
    speak, too many header lines): `status`, then the connection closes."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class EdgeRequestHandler(socketserver.BaseRequestHandler):
    """One connection: h11 reads each request, the edge answers it, and the answer
    leaves in one write. h11 is the sans-IO HTTP/1.1 parser httpx and uvicorn use: it
    refuses what RFC 9112 forbids where the hand-written reader before it guessed
    (docs/decisions.md, "Issue 24: the local edge").

    h11 reads; it does not write the answers: sending through its state machine cost
    ~20 µs more per request (three events, each header checked again), and issue 11's
    speed floor did not hold on a loaded machine. The answer's bytes are the edge's own
    headers, which h11 would only have copied; the framing rules it would have applied
    are these, and the tests send each: every answer carries its Content-Length (HEAD
    and 304 without a body), and `Connection: close` comes before a close, which follows
    HTTP/1.0, the client's `close`, a body left unread, or an error. Each request gets a
    fresh h11 connection fed what the last one left over (pipelined requests): h11 ends
    a request's cycle only once its own writer has sent the answer.
    """

    server: EdgeServer
    #: Seconds a read or a write may wait: a client that stops sending mid-request, or
    #: leaves a keep-alive connection idle, otherwise holds its thread for ever (one
    #: thread per connection, no cap).
    timeout: float | None = 60.0

    def setup(self) -> None:
        self.connection: socket.socket = self.request
        self.connection.settimeout(self.timeout)
        # One send per answer and no Nagle delay on it: unbuffered headers and body in
        # two writes waited ~40 ms for the client's delayed ACK on loopback.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self._unread_input = False
        self._received = b""

    def handle(self) -> None:
        try:
            while self._exchange():
                # What the client sent beyond this request (pipelining) starts the next.
                left, closed = self.conn.trailing_data
                self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
                if left:
                    self.conn.receive_data(left)
                if closed:
                    self.conn.receive_data(b"")
        except TimeoutError as error:  # a read or a write timed out: drop the connection
            self._log(f"Request timed out: {error!r}")

    def finish(self) -> None:
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

    def _next_event(self) -> object:
        conn = self.conn
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = self.connection.recv(65536)
            self._received = data  # for the log line of a request h11 refuses
            conn.receive_data(data)  # b"": the client closed

    def _exchange(self) -> bool:
        """Read one request and answer it; whether the connection goes on."""
        try:
            request = self._next_event()
        except h11.RemoteProtocolError as error:
            if not self._received:  # the client hung up mid-head: no one to answer
                return False
            status, message = self._status_of(error)
            self._refuse(status, message, self._first_line())
            return False
        if type(request) is not h11.Request:  # closed, or cut before its blank line
            return False
        method = request.method.decode("ascii")  # h11 let only a token through
        target = request.target.decode("ascii")  # and only visible ASCII here
        requestline = f"{method} {target} HTTP/{request.http_version.decode('ascii')}"
        try:
            _check(request)
        except _Refused as refused:
            self._refuse(refused.status, str(refused), requestline, method == "HEAD")
            return False
        # Names as sent (the edge and /mcp look them up without case; a repeated field's
        # last value wins, as `dict(HTTPMessage.items())` gave before). One pass: h11's
        # Headers is a Sequence whose iteration costs a Python call per field.
        headers: dict[str, str] = {}
        chunked, length, closing = False, 0, False
        for raw_name, raw_value in request.headers.raw_items():
            name = raw_name.decode("latin-1")
            headers[name] = raw_value.decode("latin-1")
            if name[0] in "CcTt":  # h11 checked the framing fields; read their values
                lowered = name.lower()
                if lowered == "transfer-encoding":
                    chunked = True
                elif lowered == "content-length":
                    length = int(raw_value)
                elif lowered == "connection":
                    # RFC 9110 7.6.1: a list of options, over one line or several.
                    options = [o.strip().lower() for o in raw_value.split(b",")]
                    closing = closing or b"close" in options
        # RFC 9112 9.3: HTTP/1.1 (and later minors) persist unless `close` is sent; h11
        # keeps nothing else open either (an HTTP/1.0 keep-alive among them).
        persistent = request.http_version != b"1.0" and not closing
        edge = self.server.edge
        assert edge is not None, "the server is published only after its first build"
        # The live MCP server (agent_mcp), and its server card where clients look for it.
        if target.partition("?")[0] in (MCP_PATH, *SERVER_CARD_PATHS):
            return self._answer_mcp(
                edge, request, method, target, headers, chunked, length, persistent
            )
        unread = chunked or length > 0
        if not unread and type(self._next_event()) is not h11.EndOfMessage:
            return False  # (no body: h11 has its end already)
        response = edge.handle(method, target, headers)
        # A body the edge does not read: the connection cannot be reused. Other methods
        # than the three the edge answers close too, as the CDN's 405 does.
        close = unread or not persistent or method not in ("GET", "HEAD", "OPTIONS")
        self._send(response, requestline, close)
        self._unread_input = unread
        return not close

    def _status_of(self, error: h11.RemoteProtocolError) -> tuple[int, str]:
        status = error.error_status_hint
        if status == 431 and b"\n" not in self.conn.trailing_data[0][:MAX_HEAD]:
            return 414, "URI Too Long: the request line is longer than the server reads"
        return status, f"Bad request: {error}"

    def _first_line(self) -> str:
        """The start of what the client sent, for the log line of a request h11 refused."""
        data = self.conn.trailing_data[0] or self._received
        return data[:200].partition(b"\n")[0].rstrip(b"\r").decode("latin-1")

    def _send(self, response: Response, requestline: str, close: bool) -> None:
        """The answer in one write (head and a small body), as http.server's
        send_response, send_header per line and end_headers wrote it."""
        if not self.server.quiet:
            self._log(f'"{requestline}" {response.status} -')
        head = b"".join((_head_of(response), _date_line(), _CLOSE if close else b"", b"\r\n"))
        body = response.body
        if len(body) <= _JOINED_BODY:
            self.connection.sendall(head + body if body else head)
            return
        self.connection.sendall(head)
        # send() until all is out, not sendall(): with a timeout, sendall() must finish
        # within it, and an 86 MB llms-full.txt to a slow reader may not.
        view = memoryview(body)
        while view:
            view = view[self.connection.send(view) :]

    def _refuse(self, status: int, message: str, requestline: str, head: bool = False) -> None:
        """A JSON error with the header policy (not http.server's HTML page), and the
        connection closed after it: what is left of the request is not read. `head`: the
        request was a HEAD, whose answer has the headers and no body (RFC 9110 9.3.2)."""
        self._unread_input = True
        edge = self.server.edge
        if edge is not None:
            code = HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
            response = edge.error(status, code, message)
        else:
            body = message.encode("utf-8")
            response = Response(
                status, (("Content-Type", "text/plain"), ("Content-Length", str(len(body)))), body
            )
        if head:
            response = Response(response.status, response.headers, b"")
        self._send(response, requestline, close=True)

    def _answer_mcp(
        self,
        edge: Edge,
        request: h11.Request,
        method: str,
        target: str,
        headers: dict[str, str],
        chunked: bool,
        length: int,
        persistent: bool,
    ) -> bool:
        from agent_mcp.http import handle_http, loopback_hosts

        requestline = f"{method} {target}"
        if chunked:
            # The SDK's clients send a Content-Length; a chunked body is refused by name
            # (RFC 9110 15.5.12).
            self._refuse(411, "Send the body with a Content-Length", requestline, method == "HEAD")
            return False
        if length > MAX_MCP_BODY:
            self._refuse(
                413,
                f"The MCP endpoint reads request bodies of at most {MAX_MCP_BODY} bytes",
                requestline,
                method == "HEAD",
            )
            return False
        # RFC 9110 10.1.1: "A server that receives a 100-continue expectation in an
        # HTTP/1.0 request MUST ignore that expectation"; h11 does not look at the version.
        waiting = self.conn.client_is_waiting_for_100_continue
        if length and waiting and request.http_version != b"1.0":
            # Sent now, not with the answer: the client waits for it (RFC 9110 10.1.1),
            # curl for a second, before it sends a body of more than 1 KiB.
            self.connection.sendall(_CONTINUE)
        chunks: list[bytes] = []
        try:
            while type(event := self._next_event()) is h11.Data:
                chunks.append(bytes(event.data))  # type: ignore[attr-defined]
        except h11.RemoteProtocolError:  # the client hung up mid-body: nothing to answer
            return False
        if type(event) is not h11.EndOfMessage:
            return False
        status, answer_headers, payload = handle_http(
            method, target, headers, b"".join(chunks),
            edge.artifacts, loopback_hosts(self.server.server_address[0]),
        )  # fmt: skip
        own = {name.lower() for name, _ in answer_headers}  # /mcp's CORS headers win, as on the CDN
        policy = [
            (k, v)
            for k, v in HEADER_POLICY.every_response(edge.discovery_path).items()
            if k.lower() not in own
        ]
        body = payload if method != "HEAD" else b""
        answer = Response(status, (*answer_headers, *policy), body)
        self._send(answer, requestline, close=not persistent)
        return persistent

    def _log(self, line: str) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.client_address[0]} {line.translate(_CONTROL)}\n")


_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_CLOSE = b"Connection: close\r\n"
#: (second, its Date line), as `_date` for the value.
_date_bytes: tuple[int, bytes] = (0, b"")


def _date_line() -> bytes:
    global _date_bytes
    second = int(time.time())
    cached = _date_bytes
    if cached[0] != second:  # threads may both format the same second: harmless
        cached = _date_bytes = (second, f"Date: {_http_date()}\r\n".encode("latin-1"))
    return cached[1]


def _head_of(response: Response) -> bytes:
    """The status line, Server, and the answer's own header lines, made once for an
    answer the edge keeps (`Response.derived`)."""
    head = response.derived.get("head")
    if head is None:
        reason = _REASONS.get(response.status, b"")
        lines = "".join(f"{name}: {value}\r\n" for name, value in response.headers)
        head = response.derived["head"] = b"HTTP/1.1 %d %s\r\nServer: %s\r\n" % (
            response.status,
            reason,
            _SERVER,
        ) + lines.encode("latin-1")
    return cast(bytes, head)


def _check(request: h11.Request) -> None:
    """What h11 accepts and this server does not."""
    # h11 reads any `HTTP/d.d`; RFC 9110 2.5: a major version the server does not speak
    # is 505 (http.server answered 505 for 2.0 and later as well).
    if not request.http_version.startswith(b"1."):
        raise _Refused(505, f"HTTP Version Not Supported ({request.http_version.decode()})")
    if len(request.headers) > MAX_HEADERS:
        raise _Refused(431, "Too many headers")
    # h11 bounds a head it is still waiting for; one that arrived whole in one read may
    # be up to a read (64 KiB) longer. The same bound, whichever way it came.
    if len(request.target) > MAX_HEAD:
        raise _Refused(414, "URI Too Long: the request line is longer than the server reads")
    if sum(len(name) + len(value) for name, value in request.headers) > MAX_HEAD:
        raise _Refused(431, "Request Header Fields Too Large")


def load_edge(site_dir: Path, base_url: str, mcp_endpoint: str | None = None) -> Edge:
    return build_edge(site_dir, base_url, mcp_endpoint=mcp_endpoint)[0]


def build_edge(
    site_dir: Path,
    base_url: str,
    last: Plan | None = None,
    mcp_endpoint: str | None = None,
    stop: threading.Event | None = None,
) -> tuple[Edge, Plan]:
    """The edge over a build in memory, and the build: `last`, the one it replaces, lends
    its build cache (content_builder.build.plan), so a rebuild reads nothing back.
    `mcp_endpoint`: the live MCP server the files name (`live_mcp_endpoint`); `stop`:
    set, the build ends early (BuildStopped)."""
    result = plan(site_dir, base_url, mcp_endpoint=mcp_endpoint, last=last, stop=stop)
    artifacts = {artifact.path: artifact for artifact in result.artifacts}
    return Edge(artifacts, base_url + paths.discovery(result.site.config.brand)), result


def live_mcp_endpoint(base_url: str) -> str | None:
    """Where this server answers MCP (`_answer_mcp`), for the discovery document, the
    architecture and the Agent Skill to name: when the MCP SDK (the `mcp` extra) is
    installed, as a deployment with its MCP function names its own. Its distribution is
    looked up, not the module: a folder named `mcp` in the working directory would be
    found by the import system (and the SDK itself costs ~0.6 s to import, which the
    first MCP request pays, not every `serve`'s start)."""
    try:
        importlib.metadata.distribution("mcp")
    except importlib.metadata.PackageNotFoundError:
        return None
    return base_url + MCP_PATH


Fingerprint = tuple[tuple[str, int, int], ...]


def fingerprint(site_dir: Path) -> Fingerprint:
    """(path, mtime, size) of every file under `site_dir` but dot-files, in path order.

    One `os.scandir` walk (no Path objects, no sort of Paths): the watcher takes this
    every poll, and at 20,000 files the rglob version cost 64 % of a core while idle.
    Symlinked folders are not entered (as rglob did); symlinked files are followed.
    """
    found: list[tuple[str, int, int]] = []
    if os.path.isfile(site_dir):  # a file root (watch_roots: mkdocs.yml)
        try:
            stat = os.stat(site_dir)
        except OSError:  # removed since: the next poll sees the new state
            return ()
        return ((str(site_dir), stat.st_mtime_ns, stat.st_size),)
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
#: With change events (agent_edge.changes) the watcher scans when woken, and otherwise
#: only this often, in case an event was lost (a network filesystem, a full queue).
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
    roots: Sequence[Path] | None = None,
    last: Plan | None = None,  # the build being served: the next one reuses its cache
) -> None:
    """Watch site_data/ and swap in a new build; a bad edit keeps the last good one.

    `built_from` is the state of the roots taken *before* the build being served was
    loaded, so that an edit made while it loaded is not missed. `roots` are the folders
    the build reads (site_data/ when not given; a docs tree outside it too, when the site
    names one): an edit under any of them rebuilds.
    """
    report = report or _say
    watched = list(roots) if roots is not None else [site_dir]
    beyond = _read_beyond(last, watched)
    watched += beyond

    def scan() -> Fingerprint:
        return tuple(entry for root in watched for entry in fingerprint(root))

    if built_from is not None:  # the files read beyond the roots: as they are now
        seen = built_from + tuple(entry for root in beyond for entry in fingerprint(root))
    else:
        seen = scan()
    events = SiteChanges.open(watched, stop)
    # With events, the first scan comes at once (the watches are set by now): an edit
    # made before they were set sent no event, and `seen` may predate it.
    wait = interval
    woken = events is not None
    while True:
        if woken:
            woken = False
        elif events is not None:
            events.wait(max(wait, SAFETY_SCAN_SECONDS))  # woken by a change
            if stop.is_set():
                events.close()
                return
        elif stop.wait(wait):
            return
        # Nothing may end this loop but `stop`: a watcher that dies on one bad edit
        # leaves a server that silently serves stale content for the rest of the session.
        try:
            started = time.perf_counter()
            current = scan()
            wait = max(interval, IDLE_FACTOR * (time.perf_counter() - started))
            if current == seen:
                continue
            seen = current
            server.edge, last = build_edge(
                site_dir, base_url, last, live_mcp_endpoint(base_url), stop
            )
            report("rebuilt: serving the new content")
            more = _read_beyond(last, watched)
            if more:  # a page now includes a file no root holds: watched from now on
                watched += more
                seen = scan()
                if events is not None:
                    events.close()
                events = SiteChanges.open(watched, stop)
        except BuildStopped:  # the server is shutting down
            return
        except SiteDataError as error:
            report(f"rebuild failed, still serving the last good build:\n{error}")
        except Exception as error:  # a bug or an unforeseen input: report it, keep watching
            where = "".join(traceback.format_exception(error)).rstrip()
            report(
                f"rebuild failed with an unexpected error, still serving the last good "
                f"build (please report it):\n{where}"
            )


def _read_beyond(built: Plan | None, roots: Sequence[Path]) -> list[Path]:
    """The files the build read that no root holds (a snippet or an include outside the
    docs tree: its project, or site.yaml's include_root)."""
    if built is None:
        return []
    held = [os.path.join(os.path.abspath(root), "") for root in roots]
    return [
        Path(path)
        for path in built.site.read_files
        if not any(path.startswith(prefix) or path + os.sep == prefix for prefix in held)
    ]


def serve(
    site_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    base_url: str | None = None,
    watch_changes: bool = False,
    ready: Callable[[EdgeServer], None] | None = None,
    watch_roots: Sequence[Path] | None = None,
) -> int:
    """Serve the site's build until interrupted. With `watch_changes`, an edit under any
    of `watch_roots` (site_dir when not given; a docs tree outside it, say) rebuilds."""
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
    roots = list(watch_roots) if watch_roots else [site_dir]
    built_from = tuple(entry for root in roots for entry in fingerprint(root))
    try:
        server.edge, served = build_edge(
            site_dir, effective_base, mcp_endpoint=live_mcp_endpoint(effective_base)
        )
    except SiteDataError:
        server.server_close()
        raise
    stop = threading.Event()
    if watch_changes:
        threading.Thread(
            target=watch,
            args=(server, site_dir, effective_base, stop),
            kwargs={"built_from": built_from, "roots": roots, "last": served},
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
