"""The one table of endpoints: every file the API publishes, and how each interface lists it.

OpenAPI, llms.txt, the MCP manifest's resources, the discovery document, the build's
list of fixed files and `verify`'s models are all generated from `ENDPOINTS`; the route
rules (routes.py) give each path its media type, Cache-Control and publish tier. Adding
an endpoint is one row here plus its renderer (content_builder/render/endpoints.py).

Rows are in the OpenAPI document's order; `rank` orders a row within llms.txt and the
MCP resources, which list the interfaces in an order of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from agent_contract.models import Resource


API_PREFIX = "/api/v1"
JSON_MEDIA = "application/json"
TEXT_MEDIA = "text/plain"
MARKDOWN_MEDIA = "text/markdown"
XML_MEDIA = "application/xml"
# RFC 9727 section 4.2: the api-catalog is a linkset (RFC 9264) with this profile.
API_CATALOG_PROFILE = "https://www.rfc-editor.org/info/rfc9727"
LINKSET_MEDIA = "application/linkset+json"


class Kind(Enum):
    FIXED = "fixed"  # one file at a fixed path
    PER_SITE = "per-site"  # one file whose path carries the site's brand
    PER_ENTRY = "per-entry"  # one file per document or FAQ entry: a path template


@dataclass(frozen=True)
class LlmsListing:
    """A link in llms.txt: `- [title](url): note` in `section`."""

    section: Literal["Interfaces", "Optional"]
    rank: int
    title: str
    note: str


@dataclass(frozen=True)
class McpListing:
    """A resource of the MCP manifest (`<brand>://<name>`). `instance` fills a template's
    variable; `{name}` in the description is the site's name."""

    rank: int
    name: str
    title: str
    description: str
    instance: str | None = None


#: The most ids of one kind (documents, FAQ entries) a description lists: an MCP tool's
#: input schema (the static manifest, and so the live server's tools/list), the OpenAPI
#: path parameter's enum, the discovery document's `content` maps. Past it each names
#: the id's pattern and where ids are listed (the content index, search): at 10,000
#: entries the enums made tools/list 482,220 characters (issue 25), the OpenAPI 1.7 MB
#: and the discovery document, every agent's first read, 2.1 MB.
ID_LIST_LIMIT = 200


@dataclass(frozen=True)
class Parameter:
    """A path template's variable, whose values the catalog's ids enumerate."""

    name: str
    what: str
    #: Values too many to list (OpenAPI then gives this pattern instead of an enum).
    pattern: str | None = None


@dataclass(frozen=True)
class Endpoint:
    key: str  # also the discovery document's `interfaces` field, when it lists the row
    path: str  # a path, or a template with {brand} or the parameter's variable
    kind: Kind
    model_name: str | None  # a class of models.py; None: text, or the OpenAPI document
    media_type: str  # as OpenAPI and the MCP manifest show it
    operation_id: str
    summary: str
    llms: LlmsListing | None = None
    mcp: McpListing | None = None
    discovery: int | None = None  # position in the discovery document's `interfaces`
    parameter: Parameter | None = None
    # A web convention found at its well-known location (robots.txt, the sitemap, the
    # RFC 9727 catalog) rather than an API operation: published, linked from discovery,
    # left out of OpenAPI, where generated clients choke on it (issue 26).
    openapi: bool = True

    @property
    def model(self) -> type[Resource] | None:
        # Read from models.py when asked: models.py reads the discovery rows from this table.
        from agent_contract import models

        return getattr(models, self.model_name) if self.model_name else None

    @property
    def in_discovery(self) -> bool:
        return self.discovery is not None

    def resolve(self, brand: str) -> str:
        """The path with the site's brand filled in (a template keeps its variable)."""
        return self.path.replace("{brand}", brand)

    def matches(self, path: str, discovery_path: str) -> bool:
        if self.kind is Kind.PER_SITE:
            return path == self.resolve(brand_of(discovery_path))
        if self.kind is Kind.PER_ENTRY:
            head, tail = self.path.split("{", 1)
            suffix = tail.split("}", 1)[1]
            return path.startswith(head) and path.endswith(suffix) and len(path) > len(head)
        return path == self.path


#: The id of the overview document: the MCP manifest's get_site_overview tool and the
#: content/site resource name it, so every site publishes one (content_builder/overview.py).
SITE_OVERVIEW_ID = "site"

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "discovery",
        "/.well-known/{brand}.json",  # the spec's /.well-known/service.json, branded
        Kind.PER_SITE,
        "DiscoveryDocument",
        JSON_MEDIA,
        "getDiscovery",
        "Discovery document: the entry point listing every interface",
        llms=LlmsListing(
            "Interfaces",
            1,
            "Discovery document",
            "the canonical entry point, listing every interface (JSON)",
        ),
        mcp=McpListing(
            1,
            "discovery",
            "Discovery Document",
            "The canonical entry point, listing every interface.",
        ),
        discovery=1,
    ),
    Endpoint(
        "mcp_well_known",
        "/.well-known/mcp.json",
        Kind.FIXED,
        "McpManifest",
        JSON_MEDIA,
        "getMcpWellKnown",
        "MCP manifest at the well-known location",
        llms=LlmsListing("Interfaces", 5, "MCP manifest, well-known location", "the same manifest"),
        discovery=5,
    ),
    Endpoint(
        "content_index",
        f"{API_PREFIX}/content/index.json",
        Kind.FIXED,
        "ContentIndex",
        JSON_MEDIA,
        "getContentIndex",
        "Every document and FAQ entry",
        llms=LlmsListing(
            "Interfaces",
            2,
            "Content index",
            "every document and FAQ entry with its api_url and updated_at",
        ),
        mcp=McpListing(
            2,
            "content/index",
            "Content Index",
            "Every document and FAQ entry with its api_url and updated_at.",
        ),
        discovery=2,
    ),
    Endpoint(
        "search_index",
        f"{API_PREFIX}/content/search-index.json",
        Kind.FIXED,
        "SearchIndex",
        JSON_MEDIA,
        "getSearchIndex",
        "Keywords of every entry, for client-side search",
        llms=LlmsListing(
            "Interfaces",
            3,
            "Search index",
            "keywords per entry; lowercase the query, split it, match words against keywords",
        ),
        mcp=McpListing(
            4,
            "content/search-index",
            "Search Index",
            "Pre-tokenized keywords of every document and FAQ entry, for client-side search.",
        ),
        discovery=3,
    ),
    Endpoint(
        "search_terms",
        f"{API_PREFIX}/search/terms.json",
        Kind.FIXED,
        "SearchTermMap",
        JSON_MEDIA,
        "getSearchTermMap",
        "Sharded search index: the term map (which shard holds which terms), for search "
        "at any size",
        llms=LlmsListing(
            "Interfaces",
            3,
            "Sharded search index",
            "search at any size in a few small GETs: the term map names the shard holding "
            "each word; see Searching below",
        ),
        # Not an MCP resource (the spec's resource table is the manifest's): the manifest's
        # search_content tool describes it, and the live server's search tools use it.
        discovery=18,
    ),
    Endpoint(
        "search_shard",
        f"{API_PREFIX}/search/shards/{{shard}}.json",
        Kind.PER_ENTRY,
        "SearchShard",
        JSON_MEDIA,
        "getSearchShard",
        "One shard of the sharded search index: postings (word -> entry keys by weight) "
        "of a range of words; named by its content, cached for a year",
        discovery=19,
        parameter=Parameter("shard", "search shard (from the term map)", r"^[0-9a-f]{16}$"),
    ),
    Endpoint(
        "search_entries",
        f"{API_PREFIX}/search/entries/{{prefix}}.json",
        Kind.PER_ENTRY,
        "SearchEntryFile",
        JSON_MEDIA,
        "getSearchEntries",
        "Entries of the sharded search index whose key starts with a prefix: id, title, "
        "url, api_url and description, to show a hit",
        discovery=20,
        parameter=Parameter("prefix", "entry key prefix (hex)", r"^[0-9a-f]{1,8}$"),
    ),
    Endpoint(
        "document",
        f"{API_PREFIX}/content/{{document_id}}.json",
        Kind.PER_ENTRY,
        "ContentDocument",
        JSON_MEDIA,
        "getContentDocument",
        "One content document",
        mcp=McpListing(
            3,
            f"content/{SITE_OVERVIEW_ID}",
            "Site Overview",
            "What {name} is and does.",
            instance=SITE_OVERVIEW_ID,
        ),
        parameter=Parameter("document_id", "content document"),
    ),
    Endpoint(
        "faq",
        f"{API_PREFIX}/faq/{{faq_id}}.json",
        Kind.PER_ENTRY,
        "FAQEntry",
        JSON_MEDIA,
        "getFaq",
        "One FAQ entry",
        parameter=Parameter("faq_id", "FAQ entry"),
    ),
    Endpoint(
        "architecture",
        f"{API_PREFIX}/architecture.json",
        Kind.FIXED,
        "ArchitectureDocument",
        JSON_MEDIA,
        "getArchitecture",
        "Typed data layer architecture and protocols",
        llms=LlmsListing(
            "Interfaces",
            7,
            "Architecture",
            "typed data layer, supported protocols, integration details",
        ),
        mcp=McpListing(
            6,
            "architecture",
            "Architecture Specification",
            "The typed data layer, supported protocols and integration details.",
        ),
        discovery=7,
    ),
    Endpoint(
        "on_site_agent",
        f"{API_PREFIX}/on-site-agent.json",
        Kind.FIXED,
        "OnSiteAgentStatus",
        JSON_MEDIA,
        "getOnSiteAgent",
        "Status and configuration of the on-site agent",
        llms=LlmsListing("Interfaces", 8, "On-site agent", "status and configuration"),
        discovery=8,
    ),
    Endpoint(
        "mcp_manifest",
        f"{API_PREFIX}/mcp.json",
        Kind.FIXED,
        "McpManifest",
        JSON_MEDIA,
        "getMcpManifest",
        "MCP-shaped manifest",
        llms=LlmsListing(
            "Interfaces",
            4,
            "MCP manifest",
            "tools and resources in the Model Context Protocol shape (static, HTTP GET)",
        ),
        discovery=4,
    ),
    Endpoint(
        "openapi",
        f"{API_PREFIX}/openapi.json",
        Kind.FIXED,
        None,
        JSON_MEDIA,
        "getOpenApi",
        "This OpenAPI description",
        llms=LlmsListing("Interfaces", 6, "OpenAPI 3.1 description", "every endpoint and schema"),
        mcp=McpListing(
            5, "openapi", "OpenAPI Specification", "OpenAPI 3.1 description of every endpoint."
        ),
        discovery=6,
    ),
    Endpoint(
        "llms_txt",
        "/llms.txt",
        Kind.FIXED,
        None,
        TEXT_MEDIA,
        "getLlmsTxt",
        "Plain-text guide for agents (llms.txt)",
        discovery=9,
    ),
    Endpoint(
        "llms_full_txt",
        "/llms-full.txt",
        Kind.FIXED,
        None,
        TEXT_MEDIA,
        "getLlmsFullTxt",
        "All content as plain text",
        llms=LlmsListing(
            "Optional", 1, "Full content", "every document and FAQ entry in one plain-text file"
        ),
        mcp=McpListing(
            7,
            "llms-full",
            "Full Content (plaintext)",
            "Every document and FAQ entry as plain text.",
        ),
        discovery=10,
    ),
    Endpoint(
        "document_markdown",
        f"{API_PREFIX}/content/{{document_id}}.md",
        Kind.PER_ENTRY,
        None,
        MARKDOWN_MEDIA,
        "getContentDocumentMarkdown",
        "One content document as Markdown, generated from the same model as its JSON",
        # Not listed as a template: llms.txt names each entry's twin by its real URL.
        discovery=11,
        parameter=Parameter("document_id", "content document"),
    ),
    Endpoint(
        "faq_markdown",
        f"{API_PREFIX}/faq/{{faq_id}}.md",
        Kind.PER_ENTRY,
        None,
        MARKDOWN_MEDIA,
        "getFaqMarkdown",
        "One FAQ entry as Markdown",
        # Not listed as a template: llms.txt names each entry's twin by its real URL.
        discovery=12,
        parameter=Parameter("faq_id", "FAQ entry"),
    ),
    Endpoint(
        "changes",
        f"{API_PREFIX}/changes.json",
        Kind.FIXED,
        "ChangeFeed",
        JSON_MEDIA,
        "getChanges",
        "Change feed: the content generation, every entry's hash and the ids removed lately",
        llms=LlmsListing(
            "Interfaces",
            9,
            "Change feed",
            "generation number, content_hash per entry, removed ids: sync only what changed",
        ),
        discovery=13,
    ),
    Endpoint(
        "api_catalog",
        "/.well-known/api-catalog",
        Kind.FIXED,
        "ApiCatalog",
        LINKSET_MEDIA,
        "getApiCatalog",
        "RFC 9727 API catalog (a linkset naming the OpenAPI, docs and status)",
        llms=LlmsListing("Interfaces", 10, "API catalog", "RFC 9727 linkset of this API"),
        discovery=14,
        openapi=False,
    ),
    Endpoint(
        "sitemap",
        "/sitemap.xml",
        Kind.FIXED,
        None,
        XML_MEDIA,
        "getSitemap",
        "Sitemap of every document and FAQ URL, lastmod = updated_at",
        discovery=15,
        openapi=False,
    ),
    Endpoint(
        "robots",
        "/robots.txt",
        Kind.FIXED,
        None,
        TEXT_MEDIA,
        "getRobotsTxt",
        "robots.txt: every agent allowed; names the sitemap",
        discovery=16,
        openapi=False,
    ),
    Endpoint(
        "llms_part",
        "/llms/{part}.txt",
        Kind.PER_ENTRY,
        None,
        TEXT_MEDIA,
        "getLlmsTxtPart",
        "One part of llms.txt's Documents or FAQ links, under 50,000 characters",
        discovery=17,
        parameter=Parameter("part", "llms.txt part"),
    ),
    # The Agent Skills discovery RFC v0.2.0 (github.com/cloudflare/agent-skills-discovery-rfc):
    # "Publishers MUST provide an index at /.well-known/agent-skills/index.json".
    Endpoint(
        "skills_index",
        "/.well-known/agent-skills/index.json",
        Kind.FIXED,
        "SkillsIndex",
        JSON_MEDIA,
        "getSkillsIndex",
        "Agent Skills discovery index (RFC v0.2.0): the site's skill, its SKILL.md URL and "
        "sha256 digest",
        discovery=18,
    ),
    Endpoint(
        "skill",
        "/.well-known/agent-skills/{brand}/SKILL.md",
        Kind.PER_SITE,
        None,
        MARKDOWN_MEDIA,
        "getSkill",
        "Agent Skill: how a coding agent finds and reads this site's content",
        llms=LlmsListing(
            "Interfaces",
            11,
            "Agent Skill",
            "SKILL.md for coding agents: how to find and read this content (discovery, "
            "search, fetch, MCP)",
        ),
        discovery=19,
    ),
    # The same skill at the RFC's v0.1.0 location, for the clients that still read only
    # it (opencode; agentskills-cli's fallback): found by that well-known path, so no API
    # operation and not in llms.txt; the discovery document links every file.
    Endpoint(
        "skills_index_v0_1",
        "/.well-known/skills/index.json",
        Kind.FIXED,
        "LegacySkillsIndex",
        JSON_MEDIA,
        "getLegacySkillsIndex",
        "Agent Skills discovery index in the RFC's v0.1.0 shape (name, description, files)",
        discovery=21,
        openapi=False,
    ),
    Endpoint(
        "skill_v0_1",
        "/.well-known/skills/{brand}/SKILL.md",
        Kind.PER_SITE,
        None,
        MARKDOWN_MEDIA,
        "getLegacySkill",
        "The Agent Skill's SKILL.md (the same bytes) where v0.1.0 clients fetch it",
        discovery=22,
        openapi=False,
    ),
    Endpoint(
        "not_found",
        "/errors/404.json",
        Kind.FIXED,
        "ErrorResponse",
        JSON_MEDIA,
        "getNotFoundBody",
        "The body every unknown path answers with",
    ),
)

ENDPOINT: dict[str, Endpoint] = {endpoint.key: endpoint for endpoint in ENDPOINTS}


def brand_of(discovery_path: str) -> str:
    """The brand a discovery document's path carries (`/.well-known/{brand}.json`)."""
    head, tail = ENDPOINT["discovery"].path.split("{brand}")
    if discovery_path.startswith(head) and discovery_path.endswith(tail):
        return discovery_path[len(head) : len(discovery_path) - len(tail)]
    return ""


#: One file per row (documents and FAQ entries are rendered per entry, by the build).
SINGLE_FILES: tuple[Endpoint, ...] = tuple(e for e in ENDPOINTS if e.kind is not Kind.PER_ENTRY)


def llms_section(section: str) -> list[Endpoint]:
    return sorted(
        (e for e in ENDPOINTS if e.llms is not None and e.llms.section == section),
        key=lambda e: e.llms.rank if e.llms else 0,
    )


def mcp_resources() -> list[Endpoint]:
    return sorted(
        (e for e in ENDPOINTS if e.mcp is not None), key=lambda e: e.mcp.rank if e.mcp else 0
    )


def model_for(path: str, discovery_path: str) -> type[Resource] | None:
    """The model a published file validates against; None for text and the OpenAPI document.
    Single files first: a template (the documents') may also match an aggregate's path."""
    for endpoint in sorted(ENDPOINTS, key=lambda e: e.kind is Kind.PER_ENTRY):
        if endpoint.matches(path, discovery_path):
            return endpoint.model
    return None


def response_models() -> tuple[type[Resource], ...]:
    """Every model an OpenAPI operation's response may carry, once each: its components."""
    return tuple(dict.fromkeys(e.model for e in openapi_rows() if e.model is not None))


def openapi_rows() -> tuple[Endpoint, ...]:
    """The rows that are API operations (OpenAPI's paths), in the table's order."""
    return tuple(e for e in ENDPOINTS if e.openapi)


def discovery_interfaces() -> list[Endpoint]:
    """The rows the discovery document's `interfaces` links, in its order."""
    return sorted((e for e in ENDPOINTS if e.discovery), key=lambda e: e.discovery or 0)
