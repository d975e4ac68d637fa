"""Pydantic models of every resource the API publishes.

Field names are the spec's (`../shared/spec/service-spec.md`), exactly, including the
MCP manifest's camelCase ones. These models are the single source of the OpenAPI
components (see render/openapi.py) and of the checks `verify` runs on live files.
Where the spec says "not shown" (architecture, on-site agent, the keys inside the
discovery document's objects, error bodies) the shapes are ours: docs/decisions.md.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from agent_contract.endpoints import ID_LIST_LIMIT, Kind, discovery_interfaces
from agent_contract.uri import url_problem


def _require_absolute_url(value: str) -> str:
    # RFC 3986 for http(s), a host, no user information, nothing unencoded it forbids
    # (agent_contract/uri.py): a URL is published exactly as written, so it must be one.
    problem = url_problem(value)
    if problem is not None:
        raise ValueError(f"expected an absolute http(s) URL: {problem}; got {value!r}")
    return value


#: A variable of a URL template (RFC 6570 level 1: `{document_id}`).
_TEMPLATE_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _require_url_template(value: str) -> str:
    # Each variable stands for a path segment: the rest must be a URL as above.
    problem = url_problem(_TEMPLATE_VARIABLE.sub("x", value))
    if problem is not None:
        raise ValueError(f"expected an absolute http(s) URL template: {problem}; got {value!r}")
    return value


Url = Annotated[
    str, AfterValidator(_require_absolute_url), Field(json_schema_extra={"format": "uri"})
]
# A URL with RFC 6570 variables ({document_id}); braces are not allowed in a plain URI.
UrlTemplate = Annotated[
    str, AfterValidator(_require_url_template), Field(json_schema_extra={"format": "uri-template"})
]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
ContentType = Literal["page", "faq", "feature", "product"]


class Resource(BaseModel):
    """Published resources reject unknown fields, so a renderer typo fails the build."""

    model_config = ConfigDict(extra="forbid")


# --- content documents -------------------------------------------------------------


class Section(Resource):
    title: str
    body: str
    code_example: str | None = None


class PageContent(Resource):
    """Body of `page`, `faq` and `product` documents (the spec's observed page shape)."""

    headline: str
    sections: list[Section]
    contact: str
    api_base: Url = Field(description="Base URL of the versioned API")


class Capability(Resource):
    title: str
    description: str
    endpoints: list[Url]


class FeatureContent(Resource):
    """Body of `feature` documents (the spec's observed feature shape)."""

    headline: str
    summary: str
    capabilities: dict[str, Capability]
    for_agent_developers: str


class DocumentMetadata(Resource):
    content_version: str = Field(description="Semantic version of the document's content")
    content_hash: str = Field(description="sha256 of the document without metadata and updated_at")


class ContentDocument(Resource):
    id: str
    title: str
    content_type: ContentType
    canonical_url: Url
    updated_at: Timestamp
    language: str
    content: PageContent | FeatureContent
    metadata: DocumentMetadata


class FAQEntry(Resource):
    id: str
    question: str
    answer: str


# --- aggregates --------------------------------------------------------------------


class EntrySize(Resource):
    """Our extension (issue 26), not the spec's: how big the entry's files are, so an agent
    can tell before fetching whether one fits its fetch tool (common web-fetch tools cap
    pages at about 100 KB). Token counts are estimates: ceil(UTF-8 bytes / 4)
    (agent_contract/directives.py)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"description": "Extension: sizes of the entry's JSON (api_url) "
        "and Markdown twin; tokens are estimated as ceil(UTF-8 bytes / 4)."},
    )  # fmt: skip

    json_bytes: int
    json_tokens: int
    markdown_bytes: int
    markdown_tokens: int


class ContentIndexEntry(Resource):
    id: str
    title: str
    content_type: ContentType
    canonical_url: Url
    api_url: Url
    description: str
    updated_at: Timestamp
    # Our extension (issue 26): optional, after the spec's fields, left out when unknown.
    size: EntrySize | None = None


#: The Agent Skills discovery RFC's index schema URI (v0.2.0): an opaque identifier
#: clients match to know how to read the index
#: (https://github.com/cloudflare/agent-skills-discovery-rfc, "Versioning").
SkillsSchemaUri = Literal["https://schemas.agentskills.io/discovery/0.2.0/schema.json"]
SKILLS_SCHEMA_URI: str = get_args(SkillsSchemaUri)[0]
#: The RFC's (and agentskills.io's) name rule: 1-64 of a-z and 0-9, single inner hyphens.
SKILL_NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SKILL_NAME_MAX = 64
SKILL_DESCRIPTION_MAX = 1024
SkillName = Annotated[str, Field(pattern=SKILL_NAME_PATTERN, max_length=SKILL_NAME_MAX)]
SkillDescription = Annotated[str, Field(min_length=1, max_length=SKILL_DESCRIPTION_MAX)]


class SkillEntry(Resource):
    """One skill of the v0.2.0 index: its artifact's URL (resolved against the index URL,
    RFC 3986) and the sha256 of that artifact's raw bytes."""

    name: SkillName
    type: Literal["skill-md", "archive"]
    description: SkillDescription
    url: str
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class SkillsIndex(Resource):
    """/.well-known/agent-skills/index.json: the Agent Skills discovery RFC v0.2.0 index
    (https://github.com/cloudflare/agent-skills-discovery-rfc)."""

    # The RFC's first key is `$schema`, no Python name: the field is `schema_uri` with that
    # alias, and this model alone serializes by alias (`serialize_by_alias`, pydantic
    # 2.11), so `json_body` writes the RFC's key. Built by alias too
    # (`model_validate({"$schema": ...})`), as it is read back.
    model_config = ConfigDict(extra="forbid", serialize_by_alias=True)

    schema_uri: SkillsSchemaUri = Field(
        alias="$schema", title="$schema", description="The index format's schema URI (v0.2.0)"
    )
    skills: list[SkillEntry]


class LegacySkillEntry(Resource):
    """One skill of the v0.1.0 index: clients fetch each of `files` from
    `/.well-known/skills/{name}/{file}`."""

    name: SkillName
    description: SkillDescription
    files: Annotated[list[str], Field(min_length=1)]


class LegacySkillsIndex(Resource):
    """/.well-known/skills/index.json: the RFC's v0.1.0 index (no `$schema`), kept for the
    clients that probe only the old location (docs/decisions.md)."""

    skills: list[LegacySkillEntry]


class ContentIndex(Resource):
    version: str
    total_documents: int
    documents: list[ContentIndexEntry]


class SearchEntry(Resource):
    id: str
    title: str
    description: str
    api_url: Url
    keywords: list[str]


class SearchIndex(Resource):
    version: str
    entries: list[SearchEntry]


# --- the sharded search index (agent_contract/search_shards.py) --------------------


class SearchTermMap(Resource):
    """Which shard holds which words: `shards` is sorted by first word; a word's shard is
    the last whose first word is <= it."""

    version: str
    entries: int = Field(description="Entries in the index (for idf)")
    prefix_length: int = Field(description="Hex digits of an entry key naming its entry file")
    shard_url: UrlTemplate = Field(description="A shard's URL: {shard} is its name")
    entries_url: UrlTemplate = Field(description="An entry file's URL: {prefix} is a key prefix")
    procedure: str
    shards: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(
        description="[first word, shard name], sorted by first word"
    )
    synonyms: list[list[str]] = Field(
        default_factory=list,
        description="Groups of words the site's owner declared to mean the same: a query "
        "word of a group is also looked up as the group's other words",
    )


class SearchTermPostings(Resource):
    df: int = Field(description="How many entries hold the word")
    postings: list[list[int | str]] = Field(
        description="Groups [weight, entry key, entry key, ...], highest weight first"
    )
    more: list[Annotated[list[int | str], Field(min_length=3, max_length=3)]] | None = Field(
        default=None,
        description="[weight, shard, count] holding the rest of this word's postings, "
        "highest weight first",
    )


class SearchShard(Resource):
    terms: dict[str, SearchTermPostings]


class SearchHitEntry(Resource):
    id: str
    title: str
    url: Url = Field(description="The human-facing page (canonical_url)")
    api_url: Url
    description: str


class SearchEntryFile(Resource):
    entries: dict[str, SearchHitEntry] = Field(description="Entry key -> what shows a hit")


# --- discovery ---------------------------------------------------------------------


#: One URL per row of the endpoint table the discovery document lists, in its order.
DiscoveryInterfaces: type[Resource] = create_model(
    "DiscoveryInterfaces",
    __base__=Resource,
    **{
        # A template is left out on a site with nothing it matches (no FAQ entries).
        endpoint.key: (UrlTemplate | None, None) if endpoint.kind is Kind.PER_ENTRY else (Url, ...)
        for endpoint in discovery_interfaces()
    },
)


class DiscoveryContent(Resource):
    language: str
    documents: dict[str, Url] = Field(
        description="Document id -> api_url: every document while there are at most "
        f"{ID_LIST_LIMIT:,}; past that empty (the content index lists them all)"
    )
    faq: dict[str, Url] = Field(
        description=f"FAQ id -> api_url: every FAQ entry while there are at most "
        f"{ID_LIST_LIMIT:,}; past that empty (the content index lists them all)"
    )
    total_documents: int = Field(description="How many documents the site has")
    total_faq: int = Field(description="How many FAQ entries the site has")
    # Left out on a site with none of the kind, as the interfaces' templates are.
    document_url: UrlTemplate | None = Field(None, description="A document's api_url, by id")
    faq_url: UrlTemplate | None = Field(None, description="An FAQ entry's api_url, by id")


class McpProtocol(Resource):
    version: str
    manifest: Url
    well_known: Url
    transport: str
    json_rpc_server: Literal["available", "planned"]
    endpoint: Url | None = None  # the live MCP server (streamable HTTP), when deployed
    server_card: Url | None = None  # its MCP Server Card (SEP-2127), when deployed


class OpenApiProtocol(Resource):
    version: str
    url: Url


class LlmsTxtProtocol(Resource):
    index: Url
    full: Url


class DiscoveryProtocols(Resource):
    mcp: McpProtocol
    openapi: OpenApiProtocol
    llms_txt: LlmsTxtProtocol


class DiscoveryAccess(Resource):
    authentication: Literal["none"]
    methods: list[str]
    transport: str
    cors: str
    rate_limit: str
    search: str
    freshness: str
    contact: str


class DiscoveryDocument(Resource):
    name: str
    description: str
    website: Url
    api_version: str
    interfaces: DiscoveryInterfaces
    content: DiscoveryContent
    protocols: DiscoveryProtocols
    access: DiscoveryAccess


# --- MCP manifest ------------------------------------------------------------------


class McpServerInfo(Resource):
    name: str
    version: str
    description: str


class McpCapabilities(Resource):
    tools: bool
    resources: bool
    prompts: bool


class McpInputSchema(Resource):
    type: Literal["object"]
    properties: dict[str, dict[str, Any]]
    required: list[str]


class McpTool(Resource):
    name: str
    description: str
    inputSchema: McpInputSchema
    endpoint: str = Field(description="'GET <absolute url>'")
    returns: str


class McpResource(Resource):
    uri: str
    name: str
    description: str
    mimeType: str
    endpoint: str = Field(description="'GET <absolute url>'")


class McpManifest(Resource):
    mcpVersion: str
    serverInfo: McpServerInfo
    capabilities: McpCapabilities
    tools: list[McpTool]
    resources: list[McpResource]


# --- architecture and on-site agent (shapes are ours: the spec shows no fields) ----


class NamedDescription(Resource):
    name: str
    description: str


class ResourceType(Resource):
    name: str
    description: str
    endpoint: UrlTemplate = Field(description="Absolute URL, possibly with {document_id}/{faq_id}")


class DataLayer(Resource):
    description: str
    layers: list[NamedDescription]
    resource_types: list[ResourceType]


class PipelineStep(Resource):
    step: int
    name: str
    description: str


class ProtocolSupport(Resource):
    name: str
    version: str
    status: Literal["available", "planned"]
    description: str
    endpoint: Url | None = None


class Integration(Resource):
    authentication: str
    transport: str
    cross_origin: str
    caching: str
    freshness: str
    search: str
    rate_limits: str


class ArchitectureDocument(Resource):
    title: str
    summary: str
    data_layer: DataLayer
    pipeline: list[PipelineStep]
    protocols: list[ProtocolSupport]
    integration: Integration


class AgentDeployment(Resource):
    mode: str
    version: str
    placement: str


class TelemetrySettings(Resource):
    enabled: bool
    anonymized: bool
    retention_days: int


class AgentConfiguration(Resource):
    knowledge_sources: list[Url]
    languages: list[str]
    grounding: str
    escalation: str
    telemetry: TelemetrySettings


class OnSiteAgentStatus(Resource):
    name: str
    status: Literal["active", "paused", "disabled", "planned"]
    description: str
    deployment: AgentDeployment
    configuration: AgentConfiguration
    capabilities: list[str]


# --- errors ------------------------------------------------------------------------


class ErrorDetail(Resource):
    status: int
    code: str
    message: str
    discovery: Url


class ErrorResponse(Resource):
    error: ErrorDetail


# --- extensions (issue 14): not in the spec, which they leave exactly as it is ------------


class ChangeFeedEntry(Resource):
    id: str
    api_url: Url
    updated_at: Timestamp
    content_hash: str = Field(description="sha256 of the entry as a client reads it")


class RemovedIds(Resource):
    generation: int = Field(description="The generation whose publish removed these ids")
    ids: list[str]


class ChangeFeed(Resource):
    """`/api/v1/changes.json`: an agent holding generation G refetches the entries whose
    content_hash differs from its copy and drops the ids removed after G; when G is older
    than `oldest_generation` it starts over (docs/sync.md)."""

    generation: int = Field(description="Moves with every build that changes content")
    oldest_generation: int = Field(
        description="The oldest generation a client can sync from; older ones start over"
    )
    entries: list[ChangeFeedEntry]
    removed: list[RemovedIds]


class Link(Resource):
    href: Url
    type: str | None = None
    title: str | None = None


class ApiCatalogContext(Resource):
    """One link context of an RFC 9264 linkset, with the relations RFC 9727 names."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    anchor: Url
    item: list[Link] | None = None
    service_desc: list[Link] | None = Field(None, alias="service-desc")
    service_doc: list[Link] | None = Field(None, alias="service-doc")
    service_meta: list[Link] | None = Field(None, alias="service-meta")
    status: list[Link] | None = None


class ApiCatalog(Resource):
    """`/.well-known/api-catalog` (RFC 9727): a linkset in the JSON form of RFC 9264."""

    linkset: list[ApiCatalogContext]
