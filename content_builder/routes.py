"""The one table of route rules and the one header policy.

Used by the writer (manifest), `serve`, the Pulumi program (object metadata, cache
behaviours, response headers policy), the publisher (upload order) and `verify`
(expectations). Nothing else may restate a media type, a Cache-Control value or a
response header.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from fnmatch import fnmatchcase

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


class PublishTier(IntEnum):
    """Upload order: a file is only published after every file it links to."""

    LEAF = 0  # documents, FAQ, architecture, on-site agent, error bodies
    AGGREGATE = 1  # index, search index, llms-full.txt, OpenAPI
    # Discovery, llms.txt and both MCP manifests: they link to everything, and to each
    # other (discovery lists the manifest, the manifest's resources list discovery).
    ENTRY_POINT = 2


@dataclass(frozen=True)
class CacheClass:
    name: str
    cache_control: str


# Entry points and aggregates change whenever any document changes: short for viewers,
# long at the edge (s-maxage), because every publish invalidates exactly what changed.
AGGREGATE_CACHE = CacheClass(
    "aggregate",
    "public, max-age=300, s-maxage=86400, stale-while-revalidate=60, stale-if-error=86400",
)
DOCUMENT_CACHE = CacheClass(
    "document",
    "public, max-age=3600, s-maxage=86400, stale-while-revalidate=300, stale-if-error=86400",
)
# Errors must not outlive the fix for long, at the edge or in a client.
ERROR_CACHE = CacheClass("error", "public, max-age=60, s-maxage=60")


@dataclass(frozen=True)
class RouteRule:
    pattern: str  # fnmatch glob over the URL path; `*` also crosses `/`
    media_type: str
    cache: CacheClass
    tier: PublishTier

    @property
    def cache_control(self) -> str:
        return self.cache.cache_control

    def matches(self, path: str) -> bool:
        return fnmatchcase(path, self.pattern)


#: First match wins. Exact paths come before the globs that would also match them.
ROUTE_RULES: tuple[RouteRule, ...] = (
    RouteRule("/llms.txt", TEXT, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/llms-full.txt", TEXT, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/.well-known/mcp.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/.well-known/*.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/api/v1/content/index.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/content/search-index.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/mcp.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/api/v1/openapi.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/content/*.json", JSON, DOCUMENT_CACHE, PublishTier.LEAF),
    RouteRule("/api/v1/faq/*.json", JSON, DOCUMENT_CACHE, PublishTier.LEAF),
    RouteRule("/api/v1/*.json", JSON, DOCUMENT_CACHE, PublishTier.LEAF),
    RouteRule("/errors/*.json", JSON, ERROR_CACHE, PublishTier.LEAF),
)


class NoRouteRule(LookupError):
    pass


def rule_for(path: str) -> RouteRule:
    for rule in ROUTE_RULES:
        if rule.matches(path):
            return rule
    raise NoRouteRule(f"no route rule covers {path!r}; add one to content_builder/routes.py")


@dataclass(frozen=True)
class HeaderPolicy:
    """Headers added to every response, errors included (the CDN's response headers policy)."""

    cors: dict[str, str]
    security: dict[str, str]
    preflight_methods: tuple[str, ...]
    preflight_max_age: int

    @property
    def every_response(self) -> dict[str, str]:
        return {**self.cors, **self.security}


HEADER_POLICY = HeaderPolicy(
    # Spec rule 4: every response carries `Access-Control-Allow-Origin: *`, and only that:
    # no credentials header, since the API is public and `*` forbids credentials anyway.
    cors={"Access-Control-Allow-Origin": "*"},
    security={
        "Strict-Transport-Security": "max-age=63072000; includeSubDomains",
        "X-Content-Type-Options": "nosniff",
        # These are data files, never pages: nothing may be loaded, framed or submitted.
        "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
    },
    preflight_methods=("GET", "HEAD", "OPTIONS"),
    preflight_max_age=86400,
)
