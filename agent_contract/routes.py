"""The one table of route rules and the one header policy.

Used by the writer (manifest), `serve`, the Pulumi program (object metadata, cache
behaviours, response headers policy), the publisher (upload order) and `verify`
(expectations). Nothing else may restate a media type, a Cache-Control value or a
response header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from fnmatch import fnmatchcase, translate

from agent_contract.directives import MARKDOWN_TOKENS_HEADER, every_answer_link

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
MARKDOWN = "text/markdown; charset=utf-8"
XML = "application/xml"
# RFC 9727 section 4.2; the quoted profile is a valid media type parameter (RFC 9110 5.6.6).
API_CATALOG = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'


class PublishTier(IntEnum):
    """Upload order: a file is only published after every file it links to."""

    LEAF = 0  # documents, FAQ, architecture, on-site agent
    AGGREGATE = 1  # index, search index, llms-full.txt, OpenAPI
    # Discovery, llms.txt, both MCP manifests and the error body: they link to everything,
    # or to the discovery document, and to each other (discovery lists the manifest, the
    # manifest's resources list discovery).
    ENTRY_POINT = 2


@dataclass(frozen=True)
class CacheClass:
    """How long viewers (max-age) and the CDN (s-maxage) keep a file.

    The Cache-Control header is stored on every S3 object, so CloudFront and browsers
    both obey it; infra/ also caps the CDN's TTL per behaviour with `edge_ttl`.
    """

    max_age: int
    edge_ttl: int
    stale_while_revalidate: int = 0
    stale_if_error: int = 0
    immutable: bool = False  # RFC 8246: never revalidated while fresh

    @property
    def cache_control(self) -> str:
        parts = ["public", f"max-age={self.max_age}", f"s-maxage={self.edge_ttl}"]
        if self.stale_while_revalidate:
            parts.append(f"stale-while-revalidate={self.stale_while_revalidate}")
        if self.stale_if_error:
            parts.append(f"stale-if-error={self.stale_if_error}")
        if self.immutable:
            parts.append("immutable")
        return ", ".join(parts)


DAY = 86400
# Entry points and aggregates change whenever any document changes: short for viewers,
# long at the edge (s-maxage), because every publish invalidates exactly what changed.
AGGREGATE_CACHE = CacheClass(300, DAY, stale_while_revalidate=60, stale_if_error=DAY)
DOCUMENT_CACHE = CacheClass(3600, DAY, stale_while_revalidate=300, stale_if_error=DAY)
# Errors must not outlive the fix for long, at the edge or in a client.
ERROR_CACHE = CacheClass(60, 60)
YEAR = 365 * DAY
# A file named by its content (a search shard): another content is another name, so the
# name never needs an invalidation and its bytes never need a revalidation.
IMMUTABLE_CACHE = CacheClass(YEAR, YEAR, immutable=True)


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


_ENTRY = PublishTier.ENTRY_POINT

#: First match wins. Exact paths come before the globs that would also match them.
ROUTE_RULES: tuple[RouteRule, ...] = (
    RouteRule("/llms.txt", TEXT, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/llms-full.txt", TEXT, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/llms/*.txt", TEXT, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/.well-known/mcp.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    # The Agent Skill at the discovery RFC's v0.2.0 location and, the same bytes, at
    # v0.1.0's. Entry points: SKILL.md links them, and the discovery document links the
    # indexes (an index pinning SKILL.md's digest in a later tier would be a cycle).
    RouteRule("/.well-known/agent-skills/index.json", JSON, AGGREGATE_CACHE, _ENTRY),
    RouteRule("/.well-known/agent-skills/*/SKILL.md", MARKDOWN, AGGREGATE_CACHE, _ENTRY),
    RouteRule("/.well-known/skills/index.json", JSON, AGGREGATE_CACHE, _ENTRY),
    RouteRule("/.well-known/skills/*/SKILL.md", MARKDOWN, AGGREGATE_CACHE, _ENTRY),
    RouteRule("/.well-known/*.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/api/v1/content/index.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/content/search-index.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    # The sharded search index: shards first (named by their content, linking nothing),
    # then the entry files (linking documents), then the term map naming the shards.
    RouteRule("/api/v1/search/shards/*.json", JSON, IMMUTABLE_CACHE, PublishTier.LEAF),
    RouteRule("/api/v1/search/entries/*.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/search/terms.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/api/v1/mcp.json", JSON, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/api/v1/openapi.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/changes.json", JSON, AGGREGATE_CACHE, PublishTier.AGGREGATE),
    RouteRule("/.well-known/api-catalog", API_CATALOG, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/sitemap.xml", XML, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    RouteRule("/robots.txt", TEXT, AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
    # A mirror links its JSON twin: uploaded after the leaves, so never before its target.
    RouteRule("/api/v1/content/*.md", MARKDOWN, DOCUMENT_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/faq/*.md", MARKDOWN, DOCUMENT_CACHE, PublishTier.AGGREGATE),
    RouteRule("/api/v1/content/*.json", JSON, DOCUMENT_CACHE, PublishTier.LEAF),
    RouteRule("/api/v1/faq/*.json", JSON, DOCUMENT_CACHE, PublishTier.LEAF),
    RouteRule("/api/v1/*.json", JSON, DOCUMENT_CACHE, PublishTier.LEAF),
    RouteRule("/errors/*.json", JSON, ERROR_CACHE, PublishTier.ENTRY_POINT),
)


class NoRouteRule(LookupError):
    pass


# Every rule's glob as one alternation, tried in table order: the first alternative that
# matches the whole path is the first rule that matches it (40,000 paths a build, 0.5 s
# as a loop of fnmatch calls).
_ANY_RULE = re.compile(
    "|".join(f"(?P<r{index}>{translate(rule.pattern)})" for index, rule in enumerate(ROUTE_RULES))
)


def rule_for(path: str) -> RouteRule:
    found = _ANY_RULE.match(path)
    if found is None or found.lastgroup is None:
        raise NoRouteRule(f"no route rule covers {path!r}; add one to agent_contract/routes.py")
    return ROUTE_RULES[int(found.lastgroup[1:])]


@dataclass(frozen=True)
class HeaderPolicy:
    """Headers added to every response, errors included (the CDN's response headers policy).

    Typed fields rather than a bag of header strings, because CloudFront configures the
    security headers field by field (infra/ maps them one to one); `security` renders
    the same values as HTTP headers for `serve` and `verify`.
    """

    allow_origin: str
    hsts_max_age: int
    hsts_include_subdomains: bool
    content_security_policy: str
    referrer_policy: str
    frame_options: str
    preflight_methods: tuple[str, ...]  # what a preflight may ask for, and CloudFront allows
    origin_methods: tuple[str, ...]  # what S3's CORS rule allows (S3 knows no OPTIONS rule)
    expose_headers: tuple[str, ...]  # readable cross-origin: ETag, the agent headers
    preflight_max_age: int

    @property
    def cors(self) -> dict[str, str]:
        """The CORS headers on every GET/HEAD response and error, with or without Origin:
        S3's bucket CORS rule writes them (CloudFront always sends it an Origin), and the
        response headers policy's CORS section replaces them on CORS requests."""
        return {
            "Access-Control-Allow-Origin": self.allow_origin,
            "Access-Control-Expose-Headers": ", ".join(self.expose_headers),
        }

    @property
    def preflight(self) -> dict[str, str]:
        """A successful preflight's headers, as the CORS section (origin override on)
        leaves S3's answer: methods, headers `*` and max age from the policy."""
        return {
            **self.cors,
            "Access-Control-Allow-Methods": ", ".join(self.preflight_methods),
            "Access-Control-Allow-Headers": "*",
            "Access-Control-Max-Age": str(self.preflight_max_age),
        }

    @property
    def security(self) -> dict[str, str]:
        hsts = f"max-age={self.hsts_max_age}"
        if self.hsts_include_subdomains:
            hsts += "; includeSubDomains"
        return {
            "Strict-Transport-Security": hsts,
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": self.content_security_policy,
            "Referrer-Policy": self.referrer_policy,
            "X-Frame-Options": self.frame_options,
        }

    def custom(self, discovery_path: str) -> dict[str, str]:
        """Headers outside the policy's CORS and security sections (its custom headers):
        the `Link` every answer carries (agent_contract/directives.py), whose discovery
        document is the site's (its path carries the brand)."""
        return {"Link": every_answer_link(discovery_path)}

    def every_response(self, discovery_path: str) -> dict[str, str]:
        return {**self.cors, **self.security, **self.custom(discovery_path)}


HEADER_POLICY = HeaderPolicy(
    # Spec rule 4: every response carries `Access-Control-Allow-Origin: *`, and only that:
    # no credentials header, since the API is public and `*` forbids credentials anyway.
    allow_origin="*",
    # Two years; no `preload` here: it is an opt-in only the domain's owner can make
    # (the stack option `hstsPreload`, default off, adds it at the CDN).
    hsts_max_age=63072000,
    hsts_include_subdomains=True,
    # These are data files, never pages: nothing may be loaded, framed or submitted.
    content_security_policy="default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    referrer_policy="no-referrer",
    frame_options="DENY",
    preflight_methods=("GET", "HEAD", "OPTIONS"),
    origin_methods=("GET", "HEAD"),
    # ETag for If-None-Match; the agent links and the token estimate (issue 26), which a
    # browser agent's script could not read otherwise (Fetch: only safelisted headers).
    expose_headers=("ETag", "Link", MARKDOWN_TOKENS_HEADER),
    preflight_max_age=86400,
)
