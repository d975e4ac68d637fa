"""The CDN's behaviour as a pure function: request in, response out.

`serve` wraps it in an HTTP server; tests call it directly. It answers exactly what
the CloudFront distribution is configured to answer (infra/ applies the same route
table and header policy): per-route Content-Type and Cache-Control, a strong ETag,
304 on If-None-Match, `/` -> llms.txt, unknown paths -> 404 with /errors/404.json,
methods other than GET/HEAD/OPTIONS refused, and the header policy on every response.

CORS as S3 and CloudFront answer it (docs/decisions.md, "CORS the way CloudFront
accepts it"): CloudFront always sends S3 an `Origin` (an origin custom header), so S3's
bucket CORS rule puts `Access-Control-Allow-Origin: *` and `Access-Control-Expose-Headers:
ETag` on every response, errors included, whether or not the viewer sent `Origin`; on a
CORS request the response headers policy replaces them with the same values (origin
override), so the headers appear exactly once either way. A preflight is answered 200
by S3 and carries the policy's methods, headers and max age; one asking for a method
the bucket rule does not allow is S3's 403. A 304 carries no Content-Type or
Content-Length (RFC 9110 15.4.5: it describes the stored representation only through
the validator and caching headers).

Files are looked up by exact path in the in-memory build, never on a file system, so
`..`, encoded slashes, backslashes and symlinks cannot reach anything outside it.
"""

from __future__ import annotations

import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import unquote, urlsplit

from agent_contract import paths
from agent_contract.artifacts import Artifact, json_body
from agent_contract.directives import (
    MARKDOWN_TOKENS_HEADER,
    answer_links,
    estimated_tokens,
    json_twin,
)
from agent_contract.models import ErrorDetail, ErrorResponse
from agent_contract.routes import HEADER_POLICY, JSON

ALLOWED_METHODS = HEADER_POLICY.preflight_methods
#: The bytes of GET/HEAD answers an Edge keeps (`Edge.handle`), keys included: the
#: target, Accept and If-None-Match are the client's, so a client that sends large unique
#: ones must fill this bound, not the machine (issue 24: 3,000 requests with 60 KB
#: targets took 520 MB under the old 65,536-entry cap, which allowed ~12.9 GB). 64 MiB
#: keeps ~20,000 answers of a typical 2-3 KB each: every variant of a 10,000-entry site's
#: hot files, with the least recently used answer dropped first past it.
ANSWERS_KEPT_BYTES = 64 * 1024 * 1024
#: What one kept answer costs besides its strings: the key tuple, the dict and LRU links,
#: the Response object and its headers tuple (measured with tracemalloc: ~1.2 KB).
_ENTRY_OVERHEAD = 1_200
#: Headers a 304 must not repeat from the 200 (RFC 9110 15.4.5), and the size estimate,
#: which describes a body a 304 does not carry (agent_contract/directives.py).
_NOT_ON_304 = frozenset({"content-type", "content-length", MARKDOWN_TOKENS_HEADER.lower()})
_SUSPICIOUS = re.compile(r"[\\\x00-\x1f\x7f]")
#: `http(s)://authority` of an absolute-form target (schemes are case-insensitive, RFC
#: 3986 3.1); `rest` is what follows the authority's ending "/" (the path without its
#: first slash, then any query), absent when the authority ends the target or a "?"
#: follows it at once (then the path is "/", RFC 9112 3.2.2's empty-path rule).
_ABSOLUTE_FORM = re.compile(r"(?i:https?)://[^/?#]*(?:/(?P<rest>.*)|\?.*)?\Z", re.DOTALL)


@dataclass(frozen=True)
class Response:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes  # empty for HEAD, 204 and 304; Content-Length still describes the file

    @cached_property
    def derived(self) -> dict[object, object]:
        """What a server derives from this answer and reuses while `Edge.handle` keeps
        it (serve keeps the bytes of its head here: status line, Server, header lines)."""
        return {}


def etag(artifact: Artifact) -> str:
    return f'"{artifact.sha256}"'


def _etag_matches(if_none_match: str, current: str) -> bool:
    # RFC 9110 13.1.2: If-None-Match uses weak comparison; `*` matches any current file.
    candidates = [item.strip() for item in if_none_match.split(",")]
    return any(c == "*" or c.removeprefix("W/") == current for c in candidates)


def resolve_path(target: str) -> str | None:
    """The published path a request target asks for, or None when it cannot name one.

    The query string is ignored, as the CDN's cache policy ignores it. Anything that
    decodes to a dot segment, a backslash, a control character or an empty segment is
    refused rather than normalized: a well-formed client never sends it.
    """
    absolute = _ABSOLUTE_FORM.match(target)
    if absolute is not None:
        # RFC 9112 3.2.2: absolute-form, which a server MUST accept; the authority is
        # ignored (one site is served whatever it names) and the path is read from it.
        target = "/" + absolute.group("rest") if absolute.group("rest") is not None else "/"
    if not target.startswith("/"):
        return None
    # Origin-form (RFC 9112 3.2.1) is absolute-path ["?" query]: split the query off by
    # hand. urlsplit() reads a "//" start as an authority, so `//evil.example/llms.txt`
    # answered /llms.txt; here the doubled slash stays in the path, which then misses.
    raw_path = target.partition("?")[0]
    path = unquote(raw_path, errors="strict") if "%" in raw_path else raw_path
    if _SUSPICIOUS.search(path) or "//" in path:
        return None
    if any(segment in (".", "..") for segment in path.split("/")):
        return None
    return paths.ROOT_OBJECT if path == "/" else path


class Edge:
    """Answers requests from one immutable snapshot of the build."""

    def __init__(self, artifacts: Mapping[str, Artifact], discovery_url: str) -> None:
        self.artifacts = dict(artifacts)
        self.discovery_url = discovery_url
        self.discovery_path = urlsplit(discovery_url).path
        # GET and HEAD answers by what they depend on (the snapshot never changes): a
        # keep-alive client asking again costs a lookup, not a path parse and new headers.
        # Least recently used first; bounded by ANSWERS_KEPT_BYTES (`_cost`).
        self._answers: OrderedDict[tuple[str, str, str | None, str | None], Response] = (
            OrderedDict()
        )
        self._costs: dict[tuple[str, str, str | None, str | None], int] = {}
        self.answers_bytes = 0
        # serve's threads share one snapshot: the LRU order and the byte count move
        # together (a lookup racing an eviction would otherwise find a key gone).
        self._lock = threading.Lock()
        # The published bodies a kept answer shares with the snapshot rather than owns
        # (every 200 and 404 body is one of them): they cost the cache nothing.
        self._shared_bodies = {id(artifact.body) for artifact in self.artifacts.values()}

    def handle(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        if method in ("GET", "HEAD"):
            # All a GET or HEAD answer reads of the request (`_answer`): kept, bounded.
            key = (method, target, _get(headers, "Accept"), _get(headers, "If-None-Match"))
            with self._lock:
                response = self._answers.get(key)
                if response is not None:
                    self._answers.move_to_end(key)
                    return response
            response = self._answer(method, target, headers)
            cost = self._cost(key, response)
            if cost > ANSWERS_KEPT_BYTES // 16:
                return response  # one answer may not take a sixteenth of the cache
            with self._lock:
                if key not in self._answers:  # another thread may have kept it meanwhile
                    self._answers[key] = response
                    self._costs[key] = cost
                    self.answers_bytes += cost
                while self.answers_bytes > ANSWERS_KEPT_BYTES:
                    oldest, _ = self._answers.popitem(last=False)
                    self.answers_bytes -= self._costs.pop(oldest)
            return response
        if method == "OPTIONS":
            return self._preflight(headers)
        return self.error(
            405, "method_not_allowed", f"{method} is not allowed: this API is read-only.",
            extra=(("Allow", ", ".join(ALLOWED_METHODS)),),
        )  # fmt: skip

    def _cost(self, key: tuple[str, str, str | None, str | None], response: Response) -> int:
        """The bytes one kept answer holds alive, counted from above: the key's strings
        (the client's: they must count, whatever their size), the headers' strings and
        the wire form made from them, the body when it is not a published file's."""
        strings = sum(sys.getsizeof(part) for part in key if part is not None)
        header_text = sum(len(name) + len(value) + 4 for name, value in response.headers)
        headers = sum(
            sys.getsizeof(name) + sys.getsizeof(value) for name, value in response.headers
        )
        body = 0 if id(response.body) in self._shared_bodies else len(response.body)
        # 3 x the header text, from above: serve's head bytes (`Response.derived`: the
        # text once more, with the status line and Server) and the tuples and dict
        # around the header strings.
        return _ENTRY_OVERHEAD + strings + headers + 3 * header_text + body

    def _answer(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        """A GET or HEAD answer: reads only the target, Accept and If-None-Match."""
        try:
            path = resolve_path(target)
        except UnicodeDecodeError:
            path = None
        artifact = self.artifacts.get(path) if path else None
        if artifact is None:
            return self._not_found(method)
        twin_path = paths.markdown_twin(artifact.path)
        twin = self.artifacts.get(twin_path) if twin_path else None
        if twin is None:
            # A Markdown twin fetched by its own URL names its JSON (directives.py).
            markdown = json_twin(artifact.path) is not None
            return self._file(method, artifact, 200, headers, markdown=markdown)
        # A document's JSON URL has two representations (issue 14): the Markdown when the
        # client asks for it by name, else the JSON. Either answer varies with Accept, so
        # caches key on it; each keeps its own ETag, so a 304 never crosses them. The
        # Link names the OTHER representation (directives.py, the table both edges read).
        chosen = twin if prefers_markdown(_get(headers, "Accept")) else artifact
        return self._file(
            method, chosen, 200, headers, (("Vary", "Accept"),),
            path=artifact.path, markdown=chosen is twin,
        )  # fmt: skip

    def _file(
        self,
        method: str,
        artifact: Artifact,
        status: int,
        headers: Mapping[str, str],
        extra: tuple[tuple[str, str], ...] = (),
        path: str | None = None,
        markdown: bool = False,
    ) -> Response:
        """The answer with `artifact`'s bytes, for a request of `path` (the artifact's own
        by default); `markdown`: the body is an entry's Markdown twin."""
        tag = etag(artifact)
        if markdown:
            extra = (*extra, (MARKDOWN_TOKENS_HEADER, str(estimated_tokens(artifact.size))))
        link = answer_links(self.discovery_path, path or artifact.path, markdown, status)
        response_headers = [
            ("Content-Type", artifact.media_type),
            ("Content-Length", str(artifact.size)),
            ("Cache-Control", artifact.cache_control),
            ("ETag", tag),
            *extra,
            *HEADER_POLICY.cors.items(),
            *HEADER_POLICY.security.items(),
            ("Link", link),
        ]
        if status == 200 and _etag_matches(_get(headers, "If-None-Match") or "", tag):
            kept = [h for h in response_headers if h[0].lower() not in _NOT_ON_304]
            return Response(304, tuple(kept), b"")
        return Response(status, tuple(response_headers), b"" if method == "HEAD" else artifact.body)

    def _not_found(self, method: str) -> Response:
        body = self.artifacts.get(paths.NOT_FOUND)
        if body is None:  # a build always has it; keep the edge total anyway
            return self.error(404, "not_found", "No file is published at this path.")
        return self._file(method, body, 404, {})

    def _preflight(self, headers: Mapping[str, str]) -> Response:
        # CloudFront forwards OPTIONS to S3 (it is allowed, not cached); the bucket's CORS
        # rule answers 200 when the requested method is one it allows, 403 otherwise
        # (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTOPTIONSobject.html). The
        # Origin S3 sees is always present: CloudFront adds it as an origin custom header.
        requested = (_get(headers, "Access-Control-Request-Method") or "").strip()
        if requested not in HEADER_POLICY.origin_methods:
            return self.error(
                403, "cors_not_allowed",
                f"Preflight for {requested or 'no method'!r} refused: this API allows "
                f"{', '.join(HEADER_POLICY.origin_methods)} only.",
            )  # fmt: skip
        return Response(
            200,
            (
                ("Content-Length", "0"),
                *HEADER_POLICY.preflight.items(),
                *HEADER_POLICY.security.items(),
                *HEADER_POLICY.custom(self.discovery_path).items(),
            ),
            b"",
        )

    def error(
        self, status: int, code: str, message: str, extra: tuple[tuple[str, str], ...] = ()
    ) -> Response:
        detail = ErrorDetail(
            status=status, code=code, message=message, discovery=self.discovery_url
        )
        body = json_body(ErrorResponse(error=detail))
        return Response(
            status,
            (
                ("Content-Type", JSON),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
                *extra,
                *HEADER_POLICY.every_response(self.discovery_path).items(),
            ),
            body,
        )


MARKDOWN_MEDIA = "text/markdown"


#: RFC 9110 12.4.2's qvalue, strictly: the CloudFront Function that negotiates on AWS
#: (infra/edge_functions/markdown_negotiation.js) parses q the same way, so the two agree.
QVALUE = re.compile(r"0(\.[0-9]{0,3})?|1(\.0{0,3})?")


def _weights(accept: str) -> dict[str, float]:
    """Media range -> q (RFC 9110 12.5.1); a q outside RFC 9110's grammar counts as 0."""
    weights: dict[str, float] = {}
    for item in accept.split(","):
        media_range, *params = (part.strip() for part in item.split(";"))
        if not media_range:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                q = float(value.strip()) if QVALUE.fullmatch(value.strip()) else 0.0
        weights[media_range.lower()] = q
    return weights


def prefers_markdown(accept: str | None) -> bool:
    """Whether a request names text/markdown and weighs it at least as JSON.

    Only an explicit `text/markdown` counts: `*/*` and `text/*` keep the JSON, so a
    client that sends no Accept, or a browser's, gets what the spec publishes. Coding
    agents that want Markdown send `text/markdown` first (issue 14)."""
    if not accept:
        return False
    weights = _weights(accept)
    markdown = weights.get(MARKDOWN_MEDIA, 0.0)
    json_q = weights.get(JSON, weights.get("application/*", weights.get("*/*", 0.0)))
    return markdown > 0 and markdown >= json_q


def _get(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None
