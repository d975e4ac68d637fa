"""`serve` over real HTTP on a free loopback port: the CDN's header policy, errors,
path traversal, --watch, a bounded load test and clean shutdown.

Header checks read raw response bytes from a socket, so a duplicated header line or a
body sent where none belongs is seen, not hidden by an HTTP client library.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import itertools
import json
import re
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.mcp_endpoint import MCP_PATH
from agent_contract.routes import HEADER_POLICY, JSON, TEXT, rule_for
from agent_edge.serve import EdgeServer, fingerprint, load_edge, serve, watch
from content_builder.build import plan
from tests.conftest import REPO, tree_digest
from tests.conftest import SPEC_SITE as SITE_DATA  # pins the spec's files and brand

HOST = "127.0.0.1"
ALLOWED_METHODS = {"GET", "HEAD", "OPTIONS"}
ORIGINS = [None, "https://agent.example", "null"]
DISCOVERY = "/.well-known/service.json"
FAQ_PATH = "/api/v1/faq/q01-difference.json"
DOCUMENT_PATH = "/api/v1/content/how-it-works.json"


# --------------------------------------------------------------------------- servers


@dataclass
class Running:
    server: EdgeServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def start_server(site_dir: Path) -> Running:
    server = EdgeServer((HOST, 0), quiet=True)
    try:
        server.edge = load_edge(site_dir, server.base_url)
    except BaseException:
        server.server_close()
        raise
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return Running(server, thread)


@pytest.fixture(scope="module")
def live() -> Iterator[Running]:
    """One server over the repository's site_data (serving reads it, never writes it)."""
    running = start_server(SITE_DATA)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def expected(live: Running) -> dict[str, Artifact]:
    """An independent build with the server's base URL: what every path must answer."""
    return {a.path: a for a in plan(SITE_DATA, live.base_url).artifacts}


# --------------------------------------------------------------------------- raw HTTP


@dataclass(frozen=True)
class RawResponse:
    status_line: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]

    def one(self, name: str) -> str:
        values = self.values(name)
        assert len(values) == 1, f"{name}: {len(values)} header lines {values!r} ({self})"
        return values[0]

    def json(self) -> Any:
        return json.loads(self.body)


def exchange(port: int, request: bytes, timeout: float = 5.0) -> bytes:
    """Send exact bytes, read until the server closes the connection."""
    chunks: list[bytes] = []
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        # The server may answer and close before reading all of an oversized request.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def parse(data: bytes) -> RawResponse:
    assert data.startswith(b"HTTP/1."), f"no HTTP status line in the answer: {data[:300]!r}"
    head, separator, body = data.partition(b"\r\n\r\n")
    assert separator, f"unterminated header block: {data[:300]!r}"
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines:
        assert not line[:1].isspace(), f"folded header line {line!r}"
        name, colon, value = line.partition(":")
        assert colon, f"malformed header line {line!r}"
        headers.append((name, value.strip()))
    return RawResponse(status_line, int(status_line.split(" ")[1]), headers, body)


def build_request(
    port: int,
    method: str,
    target: str | bytes,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> bytes:
    raw_target = target if isinstance(target, bytes) else target.encode("latin-1")
    lines = [method.encode() + b" " + raw_target + b" HTTP/1.1", f"Host: {HOST}:{port}".encode()]
    lines += [f"{k}: {v}".encode("latin-1") for k, v in (headers or {}).items()]
    if body:
        lines.append(f"Content-Length: {len(body)}".encode())
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def raw(
    port: int,
    method: str,
    target: str | bytes,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    origin: str | None = None,
) -> RawResponse:
    headers = dict(headers or {})
    if origin is not None:
        headers["Origin"] = origin
    return parse(exchange(port, build_request(port, method, target, headers, body)))


def check_policy(response: RawResponse) -> None:
    """The header policy every response carries, errors and 304 included."""
    assert response.one("Access-Control-Allow-Origin") == "*"
    assert response.values("Access-Control-Allow-Credentials") == []
    hsts = response.one("Strict-Transport-Security")
    max_age = re.search(r"max-age=(\d+)", hsts)
    assert max_age and int(max_age.group(1)) >= 31536000, hsts
    assert response.one("X-Content-Type-Options") == "nosniff"
    assert "default-src 'none'" in response.one("Content-Security-Policy")
    assert response.one("Referrer-Policy") in {"no-referrer", "same-origin", "strict-origin"}
    for name, value in HEADER_POLICY.every_response(paths.discovery("service")).items():
        if name == "Link":  # a document's JSON adds its Markdown twin to the same header
            assert set(value.split(", ")) <= set(response.one(name).split(", "))
            continue
        assert response.one(name) == value
    # Browser agents read the ETag cross-origin only when it is exposed (Fetch standard).
    exposed = {h.strip().lower() for h in response.one("Access-Control-Expose-Headers").split(",")}
    assert "etag" in exposed


def check_length(response: RawResponse) -> None:
    assert int(response.one("Content-Length")) == len(response.body)


def strong_etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# --------------------------------------------------------------------------- header rules


def test_every_published_file_gets_its_route_rule_headers(
    live: Running, expected: dict[str, Artifact]
) -> None:
    assert {paths.LLMS_TXT, paths.NOT_FOUND, DISCOVERY, FAQ_PATH} <= set(expected)
    assert len(expected) >= 20
    for path, artifact in expected.items():
        rule = rule_for(path)
        media = {".txt": TEXT, ".md": "text/markdown; charset=utf-8", ".xml": "application/xml"}
        if path == "/.well-known/api-catalog":
            assert rule.media_type.startswith("application/linkset+json; profile="), path
        else:
            assert rule.media_type == media.get(path[path.rfind(".") :], JSON), path
        for origin in ORIGINS[:2]:
            response = raw(live.port, "GET", path, origin=origin)
            assert response.status == 200, (path, response.status_line)
            check_policy(response)
            check_length(response)
            assert response.body == artifact.body, path
            assert response.one("Content-Type") == rule.media_type, path
            assert response.one("Cache-Control") == rule.cache_control, path
            assert response.one("ETag") == strong_etag(response.body), path


def test_root_answers_with_llms_txt(live: Running, expected: dict[str, Artifact]) -> None:
    llms = expected[paths.LLMS_TXT].body
    for target in ("/", "/?utm_source=agent", "/llms.txt?x=1"):
        response = raw(live.port, "GET", target)
        assert response.status == 200, target
        check_policy(response)
        assert response.body == llms, target
        assert response.one("Content-Type") == TEXT
        assert response.one("ETag") == strong_etag(llms)
    assert llms.startswith(b"# ")


def _variant_paths(expected: dict[str, Artifact]) -> list[str]:
    return [*expected, "/", "/no/such/file.json", "/api/v1/content/missing.json"]


def test_head_has_the_headers_of_get_and_no_body(
    live: Running, expected: dict[str, Artifact]
) -> None:
    for path in _variant_paths(expected):
        got = raw(live.port, "GET", path)
        head = raw(live.port, "HEAD", path)
        assert head.status == got.status, path
        assert head.body == b"", f"HEAD {path} sent {len(head.body)} body bytes"
        check_policy(head)
        assert int(head.one("Content-Length")) == len(got.body), path

        def without_date(response: RawResponse) -> list[tuple[str, str]]:
            return [(k.lower(), v) for k, v in response.headers if k.lower() != "date"]

        assert without_date(head) == without_date(got), path


ETAG_FORMS: dict[str, Callable[[str], str]] = {
    "exact": lambda tag: tag,
    "list-last": lambda tag: '"0123", ' + tag,
    "list-first": lambda tag: tag + ', "0123"',
    "list-no-spaces": lambda tag: '"a","b",' + tag,
    "weak": lambda tag: "W/" + tag,
    "weak-in-list": lambda tag: 'W/"zz", W/' + tag,
    "star": lambda tag: "*",
}


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("form", sorted(ETAG_FORMS))
@pytest.mark.parametrize("path", [DOCUMENT_PATH, paths.LLMS_TXT, "/"])
def test_if_none_match_gives_304(
    live: Running, expected: dict[str, Artifact], path: str, form: str, method: str
) -> None:
    artifact = expected[paths.ROOT_OBJECT if path == "/" else path]
    tag = strong_etag(artifact.body)
    response = raw(live.port, method, path, {"If-None-Match": ETAG_FORMS[form](tag)})
    assert response.status == 304, response.status_line
    assert response.body == b"", "a 304 carries no body"
    check_policy(response)
    # RFC 9110 15.4.5: a 304 does not describe the body it does not send.
    assert response.values("Content-Type") == [] and response.values("Content-Length") == []
    assert response.one("ETag") == tag
    assert response.one("Cache-Control") == rule_for(artifact.path).cache_control


@pytest.mark.parametrize(
    "header",
    [
        '"nope"',
        'W/"nope"',
        "{bare}",  # the tag without its quotes
        "{upper}",  # another tag: ETags compare byte for byte
        "{prefix}",
        '"", ""',
    ],
)
def test_if_none_match_mismatch_gives_the_full_file(
    live: Running, expected: dict[str, Artifact], header: str
) -> None:
    body = expected[DOCUMENT_PATH].body
    tag = strong_etag(body)
    value = header.format(bare=tag.strip('"'), upper=tag.upper(), prefix=tag[:-3] + '"')
    response = raw(live.port, "GET", DOCUMENT_PATH, {"If-None-Match": value})
    assert response.status == 200, value
    check_policy(response)
    assert response.body == body


@pytest.mark.parametrize("value", ["*", "{not_found_tag}"])
def test_if_none_match_never_turns_a_404_into_304(
    live: Running, expected: dict[str, Artifact], value: str
) -> None:
    not_found = expected[paths.NOT_FOUND].body
    header = value.format(not_found_tag=strong_etag(not_found))
    response = raw(live.port, "GET", "/no-such-file", {"If-None-Match": header})
    assert response.status == 404
    check_policy(response)
    assert response.body == not_found


# --------------------------------------------------------------------------- CORS


def _cors_requests(port: int) -> dict[str, tuple[int, bytes]]:
    long_header = {"X-Long": "a" * 70000}
    return {
        "get-200": (200, build_request(port, "GET", DOCUMENT_PATH)),
        "get-404": (404, build_request(port, "GET", "/nope.json")),
        "get-traversal": (404, build_request(port, "GET", "/../../etc/passwd")),
        "head-200": (200, build_request(port, "HEAD", paths.LLMS_TXT)),
        "head-404": (404, build_request(port, "HEAD", "/nope.json")),
        "get-304": (304, build_request(port, "GET", paths.LLMS_TXT, {"If-None-Match": "*"})),
        "options-200": (
            200,
            build_request(port, "OPTIONS", DOCUMENT_PATH, {"Access-Control-Request-Method": "GET"}),
        ),
        # S3's bucket CORS rule refuses a preflight for a method it does not allow (403).
        "options-post-403": (
            403,
            build_request(port, "OPTIONS", DOCUMENT_PATH, {"Access-Control-Request-Method": "PUT"}),
        ),
        "post-405": (405, build_request(port, "POST", DOCUMENT_PATH, body=b'{"a": 1}')),
        "foo-405": (405, build_request(port, "FOO", DOCUMENT_PATH)),
        "header-too-long-431": (431, build_request(port, "GET", "/", long_header)),
        "space-in-target-400": (400, build_request(port, "GET", b"/a b")),
    }


CORS_KINDS = sorted(_cors_requests(0))


@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("kind", CORS_KINDS)
def test_allow_origin_star_exactly_once_on_every_response(
    live: Running, kind: str, origin: str | None
) -> None:
    status, request = _cors_requests(live.port)[kind]
    if origin is not None:
        request = request.replace(b"\r\n", f"\r\nOrigin: {origin}\r\n".encode(), 1)
    data = exchange(live.port, request)
    response = parse(data)
    assert response.status == status, (kind, response.status_line)
    check_policy(response)  # exactly one Access-Control-Allow-Origin: *, no credentials
    head = data.partition(b"\r\n\r\n")[0].lower()
    assert head.count(b"\r\naccess-control-allow-origin:") == 1


@pytest.mark.parametrize("origin", ORIGINS[:2])
@pytest.mark.parametrize("path", [DOCUMENT_PATH, "/", "/no-such-file.json"])
def test_preflight_is_answered(live: Running, origin: str | None, path: str) -> None:
    response = raw(
        live.port,
        "OPTIONS",
        path,
        {
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "if-none-match, x-agent-id",
        },
        origin=origin,
    )
    assert response.status == 200, response.status_line  # S3 answers a preflight with 200
    assert response.body == b""
    check_policy(response)
    methods = {m.strip() for m in response.one("Access-Control-Allow-Methods").split(",")}
    assert methods == ALLOWED_METHODS
    allowed = response.one("Access-Control-Allow-Headers").lower()
    assert allowed == "*" or {"if-none-match", "x-agent-id"} <= {
        h.strip() for h in allowed.split(",")
    }
    assert int(response.one("Access-Control-Max-Age")) >= 600


def test_preflight_without_request_headers(live: Running) -> None:
    response = raw(
        live.port, "OPTIONS", DOCUMENT_PATH, {"Access-Control-Request-Method": "HEAD"},
        origin="https://agent.example",
    )  # fmt: skip
    assert response.status == 200
    check_policy(response)
    assert response.one("Access-Control-Allow-Headers")
    assert {m.strip() for m in response.one("Access-Control-Allow-Methods").split(",")} == (
        ALLOWED_METHODS
    )


@pytest.mark.parametrize("method", [None, "POST", "DELETE"])
def test_preflight_for_a_method_the_bucket_refuses_is_403(
    live: Running, method: str | None
) -> None:
    headers = {"Access-Control-Request-Method": method} if method else {}
    response = raw(live.port, "OPTIONS", DOCUMENT_PATH, headers, origin="https://agent.example")
    assert response.status == 403, response.status_line
    check_policy(response)  # the CORS headers still reach the error


# --------------------------------------------------------------------------- errors

UNKNOWN_PATHS = [
    "/nope",
    "/index.html",
    "/api/v1/",
    "/api/v1/content/",
    "/api/v1/content/nope.json",
    "/api/v1/faq/q99-missing.json",
    "/api/v2/content/index.json",
    "/API/V1/CONTENT/INDEX.JSON",
    "/llms.txt/",
    "/errors/500.json",
    "/.well-known/",
    "/api/v1/content/index.json.bak",
]


@pytest.mark.parametrize("path", UNKNOWN_PATHS)
def test_unknown_path_answers_the_404_document(
    live: Running, expected: dict[str, Artifact], path: str
) -> None:
    response = raw(live.port, "GET", path)
    assert response.status == 404, response.status_line
    check_policy(response)
    check_length(response)
    assert response.body == expected[paths.NOT_FOUND].body
    assert response.one("Content-Type") == JSON
    assert response.one("Cache-Control") == rule_for(paths.NOT_FOUND).cache_control
    assert response.one("ETag") == strong_etag(response.body)
    error = response.json()["error"]
    assert error["status"] == 404
    assert error["code"] == "not_found"
    assert error["discovery"] == live.base_url + DISCOVERY


@pytest.mark.parametrize("target", [paths.LLMS_TXT, "/nope.json"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "FOO", "TRACE"])
def test_other_methods_are_refused_with_405(live: Running, method: str, target: str) -> None:
    body = b'{"title": "x"}' if method in ("POST", "PUT", "PATCH") else b""
    response = raw(live.port, method, target, {"Content-Type": JSON} if body else {}, body)
    assert response.status == 405, response.status_line
    check_policy(response)
    check_length(response)
    assert response.one("Allow") == "GET, HEAD, OPTIONS"
    assert response.one("Content-Type") == JSON
    error = response.json()["error"]
    assert error["status"] == 405
    assert error["discovery"] == live.base_url + DISCOVERY


def test_405_message_names_the_method_sent(live: Running) -> None:
    response = raw(live.port, "FOO", paths.LLMS_TXT)
    assert response.status == 405
    assert "FOO" in response.json()["error"]["message"]


MALFORMED = [
    pytest.param(b"GET /a b HTTP/1.1\r\n\r\n", 400, id="space-in-target"),
    pytest.param(
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n",
        431,
        id="header-too-long",
    ),
    pytest.param(
        b"GET / HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-%d: y\r\n" % i for i in range(150))
        + b"\r\n",
        431,
        id="too-many-headers",
    ),
    *(
        # Found once: http.server answered these HTTP/0.9-style (body only, no headers).
        pytest.param(request, status, id=name)
        for name, request, status in [
            ("extra-token", b"GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
            ("bad-version", b"GET / HTTP/1.x\r\nHost: x\r\n\r\n", 400),
            ("http-2-version", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ]
    ),
]


@pytest.mark.parametrize(("request_bytes", "status"), MALFORMED)
def test_malformed_requests_get_a_json_error_with_the_policy(
    live: Running, request_bytes: bytes, status: int
) -> None:
    response = parse(exchange(live.port, request_bytes))
    assert response.status == status, response.status_line
    check_policy(response)
    assert response.one("Content-Type") == JSON
    assert response.json()["error"]["status"] == status


# --------------------------------------------------------------------------- links

URL_STOP = r"[^\s\"'<>()\[\]`\\]*"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def links_in(body: bytes, content_type: str, base_url: str) -> set[str]:
    texts = list(_strings(json.loads(body))) if content_type == JSON else [body.decode()]
    pattern = re.compile(re.escape(base_url) + URL_STOP)
    return {m.rstrip(".,;:!?") for text in texts for m in pattern.findall(text)}


def crawl_links(port: int, base_url: str, bodies: dict[str, tuple[bytes, str]]) -> set[str]:
    """Every URL under base_url found in the bodies must answer 200; returns the paths hit."""
    found = set().union(*(links_in(body, ctype, base_url) for body, ctype in bodies.values()))
    found -= {base_url, base_url + paths.API_PREFIX}
    checked = set()
    for url in sorted(found):
        if "{" in url:
            continue  # URI templates such as {faq_id}
        split = urlsplit(url)
        if split.path == MCP_PATH:
            continue  # the live MCP server: POST only (tests/test_mcp_server.py)
        target = split.path + (f"?{split.query}" if split.query else "")
        status, _ = get(port, target)
        assert status == 200, f"{url} (found in a served body) answered {status}"
        checked.add(split.path)
    return checked


def test_every_local_link_in_served_files_answers_200(
    live: Running, expected: dict[str, Artifact]
) -> None:
    bodies = {}
    for path in expected:
        conn = http.client.HTTPConnection(HOST, live.port, timeout=5)
        conn.request("GET", path)
        response = conn.getresponse()
        bodies[path] = (response.read(), response.getheader("Content-Type"))
        conn.close()
    assert live.base_url == f"http://{HOST}:{live.port}"
    checked = crawl_links(live.port, live.base_url, bodies)
    # Links are written with the local base URL, so the crawl reaches every published
    # file except the error body (which nothing links to).
    # The Markdown mirrors are linked through their templates ({document_id}.md).
    mirrors = {path for path in expected if path.endswith(".md")}
    # llms.txt's parts too, while llms.txt is small enough to list the links itself.
    mirrors |= {path for path in expected if path.startswith("/llms/")}
    # The sharded search index's shards and entry files: through the term map's templates.
    mirrors |= {
        path
        for path in expected
        if path.startswith(("/api/v1/search/shards/", "/api/v1/search/entries/"))
    }
    assert mirrors and set(expected) - {paths.NOT_FOUND} - mirrors <= checked


def test_serve_defaults_base_url_to_the_listening_address() -> None:
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def on_ready(server: EdgeServer) -> None:
        holder["server"] = server
        ready.set()

    def run() -> None:
        holder["code"] = serve(SITE_DATA, HOST, 0, ready=on_ready)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "serve() never called ready"
    server: EdgeServer = holder["server"]
    port = server.server_address[1]
    base = f"http://{HOST}:{port}"
    try:
        assert server.base_url == base
        assert server.edge is not None
        assert server.edge.discovery_url == base + DISCOVERY
        status, body = get(port, DISCOVERY)
        assert status == 200
        checked = crawl_links(port, base, {DISCOVERY: (body, JSON)})
        assert {paths.CONTENT_INDEX, paths.LLMS_TXT, paths.OPENAPI} <= checked
        # It answers MCP at /mcp, and its discovery document says so (it said "planned").
        mcp = json.loads(body)["protocols"]["mcp"]
        assert mcp["json_rpc_server"] == "available" and mcp["endpoint"] == base + MCP_PATH
        from agent_client.verify import live_mcp_endpoint

        assert live_mcp_endpoint(base) == base + MCP_PATH, "an MCP initialize is answered"
    finally:
        server.shutdown()
        thread.join(5)
    assert not thread.is_alive()
    assert holder["code"] == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((HOST, port), timeout=2).close()


def test_cli_serve_on_port_zero(expected: dict[str, Artifact]) -> None:
    command = [sys.executable, "-m", "content_builder", "serve", "--site", str(SITE_DATA)]
    proc = subprocess.Popen(
        [*command, "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        assert selector.select(timeout=20), "the server printed nothing"
        first = proc.stdout.readline().decode()
        match = re.match(r"serving (\d+) files on (http://127\.0\.0\.1:(\d+))$", first.strip())
        assert match, first
        assert int(match.group(1)) == len(expected)
        base, port = match.group(2), int(match.group(3))
        status, body = get(port, "/")
        assert status == 200
        assert body == {a.path: a for a in plan(SITE_DATA, base).artifacts}[paths.LLMS_TXT].body
        assert (base + DISCOVERY).encode() in body
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# --------------------------------------------------------------------------- traversal


def _repository_snippets() -> dict[str, bytes]:
    """The opening bytes of every repository file: none of them may ever be served."""
    snippets = {}
    skip = {".venv", ".git", "dist", "__pycache__", ".pytest_cache", ".ruff_cache"}
    for path in sorted(REPO.rglob("*")):
        relative = path.relative_to(REPO)
        if set(relative.parts) & skip or "egg-info" in str(relative) or not path.is_file():
            continue
        data = path.read_bytes()[:160].strip()
        if len(data) >= 24:
            snippets[str(relative)] = data
    return snippets


TRAVERSALS = [
    b"/../../etc/passwd",
    b"/api/v1/../../../etc/passwd",
    b"/%2e%2e/%2e%2e/etc/passwd",
    b"/%2E%2E/%2E%2E/etc/passwd",
    b"/api/v1/%2e%2e%2f%2e%2e%2fetc/passwd",
    b"/..%2f..%2fetc%2fpasswd",
    b"/%252e%252e/%252e%252e/etc/passwd",
    b"/api/v1/content/..\\..\\pyproject.toml",
    b"/api/v1/content/%5c..%5c..%5cpyproject.toml",
    b"/api/v1/content/../../../pyproject.toml",
    b"/llms.txt%00.json",
    b"/llms.txt\x00.json",
    b"/llms.txt%00",
    b"//etc/passwd",
    b"//llms.txt",  # the CDN looks up the doubled path and misses; so does serve
    b"/C:/Windows/win.ini",
    b"/C:%5cWindows%5cwin.ini",
    b"http://127.0.0.1/etc/passwd",
    b"/site_data/site.yaml",
    b"/site.yaml",
    b"/faq/q01-difference.yaml",
    b"/manifest.json",
    b"/content.lock.json",
    b"/content_builder/cli.py",
    b"/pyproject.toml",
    b"/./llms.txt/../../pyproject.toml",
    b"/%c0%ae%c0%ae/etc/passwd",
    b"/%ff%fe/etc/passwd",
    b"/api/v1/./content/index.json",
    b"/api/v1//content/index.json",
]


def check_not_leaked(
    response: RawResponse, not_found: bytes, snippets: dict[str, bytes], label: object
) -> None:
    assert response.status in (400, 404), (label, response.status_line)
    check_policy(response)
    assert b"root:" not in response.body, label
    for name, snippet in snippets.items():
        assert snippet not in response.body, f"{label!r} served text of {name}"
    if response.status == 404:
        assert response.body == not_found, label
    else:
        assert response.json()["error"]["status"] == 400, label


@pytest.fixture(scope="module")
def snippets() -> dict[str, bytes]:
    found = _repository_snippets()
    assert "pyproject.toml" in found and "site_data/site.yaml" in found
    return found


@pytest.mark.parametrize("target", TRAVERSALS, ids=lambda t: t.decode("latin-1"))
def test_traversal_never_leaves_the_build(
    live: Running, expected: dict[str, Artifact], snippets: dict[str, bytes], target: bytes
) -> None:
    data = exchange(live.port, build_request(live.port, "GET", target))
    if b"\x00" in target and not data:
        return  # the server refused the connection outright: nothing was served
    check_not_leaked(parse(data), expected[paths.NOT_FOUND].body, snippets, target)


def test_symlinks_in_the_site_folder_are_never_followed(
    site_copy: Path, tmp_path: Path, snippets: dict[str, bytes]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:SECRET-OUTSIDE-THE-BUILD\n")
    links = {
        "passwd": Path("/etc/passwd"),
        "secret": secret,
        "faq/leak.json": secret,
        "faq/passwd": Path("/etc/passwd"),
        "content/leak.txt": secret,
        "etc": Path("/etc"),
        "outside": tmp_path,
    }
    for name, target in links.items():
        (site_copy / name).symlink_to(target)
    running = start_server(site_copy)
    try:
        not_found = running.server.edge.artifacts[paths.NOT_FOUND].body  # type: ignore[union-attr]
        targets = [
            "/passwd",
            "/secret",
            "/site_data/passwd",
            "/site_data/secret",
            "/faq/leak.json",
            "/api/v1/faq/leak.json",
            "/api/v1/faq/leak",
            "/faq/passwd",
            "/api/v1/faq/passwd",
            "/content/leak.txt",
            "/api/v1/content/leak.txt",
            "/api/v1/content/leak.json",
            "/etc/passwd",
            "/api/v1/etc/passwd",
            "/site_data/etc/passwd",
            "/outside/secret.txt",
            "/api/v1/outside/secret.txt",
        ]
        for target in targets:
            response = raw(running.port, "GET", target)
            check_not_leaked(response, not_found, snippets, target)
            assert b"SECRET-OUTSIDE" not in response.body, target
        # The folder is still served normally.
        assert get(running.port, FAQ_PATH)[0] == 200
    finally:
        running.stop()


# --------------------------------------------------------------------------- --watch


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_watch_rebuilds_and_keeps_the_last_good_build(site_copy: Path) -> None:
    faq_file = site_copy / "faq" / "q01-difference.yaml"
    original = faq_file.read_text()
    old_sentence = "A sitemap tells a crawler"
    assert old_sentence in original

    # The state the served build was made from, taken before it loads (as serve() does),
    # so an edit made right after the watcher starts cannot be missed.
    built_from = fingerprint(site_copy)
    running = start_server(site_copy)
    stop = threading.Event()
    reports: list[str] = []
    watcher = threading.Thread(
        target=watch,
        args=(running.server, site_copy, running.base_url, stop),
        kwargs={"interval": 0.05, "report": reports.append, "built_from": built_from},
        daemon=True,
    )
    watcher.start()
    try:
        before = tree_digest(site_copy)

        status, body = get(running.port, FAQ_PATH)
        assert status == 200
        assert old_sentence in json.loads(body)["answer"]

        faq_file.write_text(original.replace(old_sentence, "WATCH-EDIT: a sitemap tells a bot"))

        def shows_edit() -> bool:
            status, body = get(running.port, FAQ_PATH)
            return status == 200 and "WATCH-EDIT" in json.loads(body)["answer"]

        assert wait_for(shows_edit), f"the edit was never served; reports: {reports}"
        assert any(r.startswith("rebuilt") for r in reports), reports
        good = get(running.port, FAQ_PATH)[1]
        good_etag = raw(running.port, "GET", FAQ_PATH).one("ETag")
        # Serving wrote nothing: the lock and the rest of the folder are untouched.
        after = tree_digest(site_copy)
        assert set(after) == set(before)
        assert {k: v for k, v in after.items() if not k.endswith("q01-difference.yaml")} == {
            k: v for k, v in before.items() if not k.endswith("q01-difference.yaml")
        }

        faq_file.write_text("id: q01-difference\nquestion: [this list never closes\nanswer: |\n")

        def failed() -> bool:
            return any("rebuild failed" in r for r in reports)

        assert wait_for(failed), f"no failure was reported; reports: {reports}"
        failure = next(r for r in reports if "rebuild failed" in r)
        assert "q01-difference.yaml" in failure, failure
        for _ in range(3):
            response = raw(running.port, "GET", FAQ_PATH)
            assert response.status == 200
            assert response.body == good
            assert response.one("ETag") == good_etag
            time.sleep(0.1)
    finally:
        stop.set()
        watcher.join(5)
        running.stop()


def test_watch_survives_an_unexpected_error_and_keeps_watching(
    site_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any exception in a rebuild (a loader bug, an impossible date it did not foresee) is
    reported and the watcher keeps watching: the next good edit is served."""
    from agent_edge import serve as serve_module

    real_build_edge = serve_module.build_edge
    calls: list[int] = []

    def flaky_build_edge(site_dir: Path, base_url: str, *rest: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("day is out of range for month")  # what date(2025, 2, 30) says
        return real_build_edge(site_dir, base_url, *rest)

    faq_file = site_copy / "faq" / "q01-difference.yaml"
    original = faq_file.read_text()
    built_from = fingerprint(site_copy)  # before the edit, as serve() takes it
    running = start_server(site_copy)
    monkeypatch.setattr(serve_module, "build_edge", flaky_build_edge)
    stop = threading.Event()
    reports: list[str] = []
    watcher = threading.Thread(
        target=watch,
        args=(running.server, site_copy, running.base_url, stop),
        kwargs={"interval": 0.05, "report": reports.append, "built_from": built_from},
        daemon=True,
    )
    watcher.start()
    try:
        faq_file.write_text(original + "\n# first edit\n")
        assert wait_for(lambda: any("unexpected error" in r for r in reports)), reports
        assert "day is out of range for month" in reports[0], reports
        assert watcher.is_alive(), "the watcher died on an unexpected error"
        assert get(running.port, FAQ_PATH)[0] == 200  # the last good build still answers

        faq_file.write_text(original.replace("A sitemap tells a crawler", "SECOND-EDIT"))

        def shows_edit() -> bool:
            status, body = get(running.port, FAQ_PATH)
            return status == 200 and "SECOND-EDIT" in json.loads(body)["answer"]

        assert wait_for(shows_edit), f"the watcher stopped watching; reports: {reports}"
    finally:
        stop.set()
        watcher.join(5)
        running.stop()


def test_each_rebuild_is_given_the_last_build_and_reads_no_cache_file_back(
    site_copy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 22: the state a series of builds keeps lives in the watcher (the last Plan,
    whose build cache the next build takes from memory), not in module-level memos."""
    from agent_edge import serve as serve_module
    from content_builder import cache as build_cache

    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    real_build_edge = serve_module.build_edge
    given: list[object] = []

    def recording(site_dir: Path, base_url: str, last: Any = None, *rest: Any) -> Any:
        given.append(last)
        return real_build_edge(site_dir, base_url, last, *rest)

    running = start_server(site_copy)
    edge, served = real_build_edge(site_copy, running.base_url)
    running.server.edge = edge
    reads: list[Path] = []
    real_read = build_cache._read_records
    monkeypatch.setattr(
        build_cache,
        "_read_records",
        lambda file, header: (reads.append(file), real_read(file, header))[1],
    )
    monkeypatch.setattr(serve_module, "build_edge", recording)
    faq_file = site_copy / "faq" / "q01-difference.yaml"
    original = faq_file.read_text()
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch,
        args=(running.server, site_copy, running.base_url, stop),
        kwargs={"interval": 0.05, "report": lambda line: None,
                "built_from": fingerprint(site_copy), "last": served},
        daemon=True,
    )  # fmt: skip
    watcher.start()
    try:
        for number in (1, 2):
            faq_file.write_text(original.replace("A sitemap tells a crawler", f"EDIT-{number}"))
            assert wait_for(lambda n=number: f"EDIT-{n}" in get(running.port, FAQ_PATH)[1].decode())
        assert given[0] is served and given[-1] is not served and given[-1] is not None
        assert reads == [], "every rebuild took the last build's records from memory"
    finally:
        stop.set()
        watcher.join(5)
        running.stop()


def test_an_idle_watcher_polls_in_proportion_to_the_cost_of_a_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scan that takes 20 ms is repeated at most every second (IDLE_FACTOR = 50): the
    watcher of a large site_data stays under 2 % of a core while nothing changes."""
    from agent_edge import serve as serve_module

    scans: list[float] = []

    def slow_fingerprint(site_dir: Path) -> tuple[()]:
        scans.append(time.monotonic())
        time.sleep(0.02)
        return ()

    monkeypatch.setattr(serve_module, "fingerprint", slow_fingerprint)
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch,
        args=(None, Path("unused"), "http://unused", stop),
        kwargs={"interval": 0.01, "report": lambda message: None, "built_from": ()},
        daemon=True,
    )
    watcher.start()
    time.sleep(1.5)
    stop.set()
    watcher.join(5)
    assert 1 <= len(scans) <= 3, f"{len(scans)} scans in 1.5 s"
    gaps = [later - earlier for earlier, later in itertools.pairwise(scans)]
    assert all(gap >= 0.9 for gap in gaps), gaps


# --------------------------------------------------------------------------- port in use


def test_serve_on_a_busy_port_says_so_without_a_traceback() -> None:
    from tests.conftest import run_cli

    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("serve", "--site", SITE_DATA, "--port", str(port))
    assert result.code == 1
    assert f"port {port} on {HOST} is already in use" in result.err, result.err
    assert "--port" in result.err and "PORT=" in result.err, result.err
    assert "Traceback" not in result.err + result.out


# --------------------------------------------------------------------------- latency


def test_keep_alive_requests_are_not_held_back_by_nagle(live: Running) -> None:
    """Headers and body in one write (and TCP_NODELAY): a keep-alive request is answered
    in well under the ~40 ms that Nagle's algorithm plus a delayed ACK cost per request."""
    conn = http.client.HTTPConnection(HOST, live.port, timeout=5)
    timings = []
    try:
        for _ in range(25):
            started = time.perf_counter()
            conn.request("GET", FAQ_PATH)
            response = conn.getresponse()
            assert response.status == 200 and response.read()
            timings.append(time.perf_counter() - started)
    finally:
        conn.close()
    timings.sort()
    # Nagle plus a delayed ACK hold back every request (~40 ms each); a loaded machine
    # delays some of them. So the fastest fifth, not the median, must be quick.
    fast = timings[len(timings) // 5]
    assert fast < 0.02, f"the fastest fifth took up to {fast * 1000:.1f} ms"


# --------------------------------------------------------------------------- load


def test_bounded_load_64_keep_alive_clients(live: Running, expected: dict[str, Artifact]) -> None:
    not_found = expected[paths.NOT_FOUND].body
    documents = [p for p in expected if p.startswith(("/api/v1/content/", "/api/v1/faq/"))]
    mix: list[tuple[str, str, dict[str, str], int, bytes]] = [
        *(("GET", p, {}, 200, expected[p].body) for p in documents),
        ("GET", paths.CONTENT_INDEX, {}, 200, expected[paths.CONTENT_INDEX].body),
        ("GET", "/", {}, 200, expected[paths.LLMS_TXT].body),
        ("GET", "/api/v1/content/missing.json", {}, 404, not_found),
        ("GET", "/nothing/here", {}, 404, not_found),
        ("HEAD", DOCUMENT_PATH, {}, 200, b""),
        ("HEAD", "/missing", {}, 404, b""),
        ("GET", FAQ_PATH, {"If-None-Match": strong_etag(expected[FAQ_PATH].body)}, 304, b""),
        ("GET", paths.OPENAPI, {"If-None-Match": "*"}, 304, b""),
    ]
    clients, seconds = 64, 3.0
    counts = [0] * clients
    errors: list[str] = []
    barrier = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        conn = http.client.HTTPConnection(HOST, live.port, timeout=15)
        barrier.wait()
        deadline = time.monotonic() + seconds
        step = index
        try:
            while time.monotonic() < deadline:
                method, path, headers, status, body = mix[step % len(mix)]
                step += 1
                try:
                    conn.request(method, path, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                except (OSError, http.client.HTTPException) as error:
                    errors.append(f"{method} {path}: {error!r}")
                    conn.close()
                    continue
                if response.status != status or data != body:
                    errors.append(f"{method} {path}: {response.status}, {len(data)} bytes")
                elif response.headers.get_all("Access-Control-Allow-Origin") != ["*"]:
                    errors.append(f"{method} {path}: CORS header lines wrong")
                elif conn.sock is None:
                    errors.append(f"{method} {path}: the connection was not kept alive")
                counts[index] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in threads:
        thread.join(seconds + 20)
    elapsed = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), "a client hung"
    total = sum(counts)
    print(
        f"\nload: {total} requests in {elapsed:.2f} s, {total / elapsed:.0f} requests/s, "
        f"{clients} keep-alive clients, {len(errors)} errors"
    )
    assert errors == [], errors[:10]
    assert total > 200
    assert min(counts) > 0, "a client never got an answer"
    status, body = get(live.port, paths.LLMS_TXT)
    assert status == 200 and body == expected[paths.LLMS_TXT].body


# --------------------------------------------------------------------------- shutdown


def test_shutdown_is_prompt_with_keep_alive_clients_and_releases_the_port() -> None:
    running = start_server(SITE_DATA)
    port = running.port
    conns = []
    half_open = socket.create_connection((HOST, port), timeout=5)
    try:
        for _ in range(8):
            conn = http.client.HTTPConnection(HOST, port, timeout=5)
            conn.request("GET", paths.LLMS_TXT)
            response = conn.getresponse()
            assert response.status == 200 and response.read()
            assert conn.sock is not None, "keep-alive expected"
            conns.append(conn)
        half_open.sendall(b"GET /llms.txt HTTP/1.1\r\nHost: x\r\n")  # never finished
        time.sleep(0.1)

        started = time.monotonic()
        running.server.shutdown()
        took = time.monotonic() - started
        assert took < 2.0, f"shutdown() took {took:.2f} s"
        running.thread.join(2)
        assert not running.thread.is_alive()
        closer = threading.Thread(target=running.server.server_close, daemon=True)
        closer.start()
        closer.join(2)
        assert not closer.is_alive(), "server_close() waits for the keep-alive connections"

        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((HOST, port), timeout=2).close()
        # The port is free again: a new server binds it and serves.
        again = EdgeServer((HOST, port), quiet=True)
        try:
            again.edge = load_edge(SITE_DATA, again.base_url)
            thread = threading.Thread(target=again.serve_forever, daemon=True)
            thread.start()
            assert get(port, "/")[0] == 200
            again.shutdown()
            thread.join(2)
        finally:
            again.server_close()
    finally:
        # Finish the half-sent request so its handler ends cleanly (a bare close makes it
        # answer a truncated request and log a BrokenPipeError traceback).
        with contextlib.suppress(OSError):
            half_open.sendall(b"Connection: close\r\n\r\n")
            while half_open.recv(65536):
                pass
        half_open.close()
        for conn in conns:
            conn.close()


def test_serve_names_no_mcp_server_when_the_sdk_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The distribution decides, not the import system: a folder named `mcp` in the
    working directory is no MCP SDK."""
    import importlib.metadata

    from agent_edge import serve as serve_module

    base = "http://127.0.0.1:8000"
    assert serve_module.live_mcp_endpoint(base) == base + MCP_PATH  # the dev install has it
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    real = importlib.metadata.distribution

    def without_mcp(name: str) -> importlib.metadata.Distribution:
        if name == "mcp":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", without_mcp)
    assert serve_module.live_mcp_endpoint(base) is None
