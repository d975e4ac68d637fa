"""`python -m content_builder serve`: the whole API on a local port, with the CDN's headers.

A thin shell around `edge.Edge`: a threaded HTTP server, one log line per request, an
optional watcher that rebuilds when site_data/ changes (a bad edit prints the error and
the last good build keeps being served). The build lives in memory: serving writes
neither dist/ nor the lock.
"""

from __future__ import annotations

import errno
import gc
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agent_contract import paths
from agent_contract.routes import HEADER_POLICY
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


class EdgeRequestHandler(BaseHTTPRequestHandler):
    server: EdgeServer
    protocol_version = "HTTP/1.1"
    # A buffered writer: the status line, headers and body leave in one send when they
    # fit (http.server flushes after each request), and TCP_NODELAY (setup) sends what
    # does not fit at once. Unbuffered, headers and body went out in two writes and
    # Nagle's algorithm held the second one until the client's delayed ACK: ~40 ms per
    # keep-alive request on loopback.
    wbufsize = 64 * 1024

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def version_string(self) -> str:
        return "agent-access-serve"

    def _answer(self) -> None:
        edge = self.server.edge
        assert edge is not None, "the server is published only after its first build"
        if self._raw_target().split("?", 1)[0] == "/mcp":  # the live MCP server (agent_mcp)
            return self._answer_mcp(edge)
        response = edge.handle(self.command, self._raw_target(), dict(self.headers.items()))
        if self.command not in ("GET", "HEAD", "OPTIONS"):
            # A refused request's body is never read: the connection cannot be reused.
            self.close_connection = True
        self.send_response(response.status)
        lines = response.header_lines if self.request_version != "HTTP/0.9" else None
        if lines is None:
            for name, value in response.headers:
                self.send_header(name, value)
        else:  # what `send_header` appends for each, made once per kept answer
            self._headers_buffer.append(lines)
        self.end_headers()
        if response.body:
            self.wfile.write(response.body)

    def _answer_mcp(self, edge: Edge) -> None:
        from agent_mcp.http import handle_http, loopback_hosts

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, headers, payload = handle_http(
            self.command, self._raw_target(), dict(self.headers.items()), body,
            edge.artifacts, loopback_hosts(self.server.server_address[0]),
        )  # fmt: skip
        self.send_response(status)
        own = {name.lower() for name, _ in headers}  # /mcp's CORS headers win, as on the CDN
        policy = [(k, v) for k, v in HEADER_POLICY.every_response.items() if k.lower() not in own]
        for name, value in [*headers, *policy]:  # as the CDN
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload if self.command != "HEAD" else b"")

    def _raw_target(self) -> str:
        # http.server turns a leading "//" into "/" (a redirect-safety measure); the CDN
        # would look the doubled path up and miss, so answer from the target as sent.
        parts = self.requestline.split(" ")
        return parts[1] if len(parts) == 3 else self.path

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
        self.close_connection = True
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: object) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


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
            # The build froze what was alive (content_builder.build.collector_paused):
            # the last build, now replaced, goes back to the collector.
            gc.unfreeze()
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
