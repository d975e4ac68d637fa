"""The spec's architecture and on-site agent files of a site that wrote none of its own.

The spec lists `/api/v1/architecture.json` and `/api/v1/on-site-agent.json`, so every
site publishes them; `architecture.yaml` and `on-site-agent.yaml` are optional (issue 23).
Without them the files say only what is true of any site this project builds: the
architecture from the endpoint table (the files this build publishes, in the table's
order), the route rules and the header policy; the on-site agent as not deployed. Never
a sample's claims (telemetry, a search console, an embedded agent): a sentence here that
is not true of every build is a bug.
"""

from __future__ import annotations

from agent_contract import paths
from agent_contract.endpoints import ENDPOINTS
from agent_contract.models import (
    AgentConfiguration,
    AgentDeployment,
    ArchitectureDocument,
    DataLayer,
    Integration,
    NamedDescription,
    OnSiteAgentStatus,
    PipelineStep,
    ProtocolSupport,
    ResourceType,
    TelemetrySettings,
)
from agent_contract.routes import AGGREGATE_CACHE, DOCUMENT_CACHE, HEADER_POLICY
from content_builder.loaded import Site
from content_builder.render.catalog import Catalog
from content_builder.render.llms import row_has_files
from content_builder.render.mcp import MCP_VERSION
from content_builder.render.openapi import OPENAPI_VERSION


def architecture(site: Site, catalog: Catalog, mcp_endpoint: str | None) -> ArchitectureDocument:
    """What the build knows of itself, for a site without architecture.yaml."""
    name = site.config.name

    def url(path: str) -> str:
        return site.base_url + path

    return ArchitectureDocument(
        title=f"{name} agent-access API architecture",
        summary=(
            f"{name}'s content is published for AI agents as read-only static files: "
            "JSON documents and FAQ entries, a content index, a keyword search index, "
            "Markdown twins, an MCP-shaped manifest, an OpenAPI description, llms.txt and "
            "llms-full.txt. Every file is rendered from the site's validated content by one "
            "deterministic build and served over HTTPS with open CORS and no authentication; "
            "every document carries updated_at, a content version and a content hash."
        ),
        data_layer=DataLayer(
            description=(
                "The site's content is validated against typed models, rendered into every "
                "published file from those models, and served unchanged, so all the files "
                "agree with each other."
            ),
            layers=[
                NamedDescription(
                    name="Source",
                    description="site.yaml (the site's identity) and its content documents "
                    "and FAQ entries; a lock file records each entry's updated_at and "
                    "content version so they change only when the content does.",
                ),
                NamedDescription(
                    name="Build",
                    description="The source is validated (unknown fields and links into "
                    "the API that name no published file are errors) and rendered "
                    "deterministically: the same content and base URL give the same bytes.",
                ),
                NamedDescription(
                    name="Delivery",
                    description="Static files, each with its media type, Cache-Control and "
                    "an ETag, read with GET over HTTPS.",
                ),
            ],
            resource_types=[
                ResourceType(
                    name=endpoint.llms.title if endpoint.llms else endpoint.operation_id,
                    description=endpoint.summary,
                    endpoint=url(endpoint.resolve(site.config.brand)),
                )
                for endpoint in ENDPOINTS
                if row_has_files(endpoint, site, catalog)
            ],
        ),
        pipeline=[
            PipelineStep(
                step=1,
                name="Validate the content",
                description="Every source file is read into typed models; a problem stops "
                "the build with the file and the field named.",
            ),
            PipelineStep(
                step=2,
                name="Render the files",
                description="Documents, FAQ entries, indexes, protocol descriptions and "
                "plain-text files are rendered from the models, each document stamped with "
                "updated_at, content_version and content_hash.",
            ),
            PipelineStep(
                step=3,
                name="Publish",
                description="The files are published as they were rendered, with their "
                "headers; unchanged files keep their ETags.",
            ),
        ],
        protocols=_protocols(site, mcp_endpoint),
        integration=Integration(
            authentication="None: every file is public and read with an unauthenticated GET.",
            transport="HTTPS GET of static files; query parameters are not interpreted.",
            cross_origin=f"Every response carries Access-Control-Allow-Origin: "
            f"{HEADER_POLICY.allow_origin}.",
            caching=(
                f"Entry points and aggregates: Cache-Control {AGGREGATE_CACHE.cache_control}; "
                f"documents and FAQ entries: {DOCUMENT_CACHE.cache_control}."
            ),
            freshness=(
                "Compare a document's updated_at and metadata.content_hash with your copy; "
                "every file has an ETag, and If-None-Match answers 304 while it is unchanged."
            ),
            search=(
                "Client-side: fetch the search index, lowercase the query, split it on "
                "non-alphanumeric characters, keep the entries whose keywords contain a "
                "query word, rank by the number of distinct words matched."
            ),
            rate_limits="No service-specific quota is published.",
        ),
    )


def _protocols(site: Site, mcp_endpoint: str | None) -> list[ProtocolSupport]:
    def url(path: str) -> str:
        return site.base_url + path

    return [
        ProtocolSupport(
            name="HTTP/JSON static API",
            version=site.config.api_version,
            status="available",
            description="Read-only static files under /api/v1/, read with GET; the "
            "discovery document is the entry point.",
            endpoint=url(paths.discovery(site.config.brand)),
        ),
        ProtocolSupport(
            name="MCP manifest",
            version=MCP_VERSION,
            status="available",
            description="A static manifest in the shape of an MCP server description; "
            "each tool maps to a plain HTTP GET.",
            endpoint=url(paths.MCP_MANIFEST),
        ),
        ProtocolSupport(
            name="MCP JSON-RPC server",
            version=MCP_VERSION,
            status="planned" if mcp_endpoint is None else "available",
            description="Not deployed with this build."
            if mcp_endpoint is None
            else "Streamable HTTP (POST, stateless) with the manifest's tools.",
            endpoint=mcp_endpoint,
        ),
        ProtocolSupport(
            name="OpenAPI",
            version=OPENAPI_VERSION,
            status="available",
            description="An OpenAPI description of every endpoint and response schema.",
            endpoint=url(paths.OPENAPI),
        ),
        ProtocolSupport(
            name="llms.txt",
            version="llmstxt.org proposal",
            status="available",
            description="A plain-text guide linking every interface and document; "
            "llms-full.txt holds the complete content.",
            endpoint=url(paths.LLMS_TXT),
        ),
    ]


def on_site_agent(site: Site) -> OnSiteAgentStatus:
    """A site without on-site-agent.yaml has no on-site agent: said so, field by field."""
    not_deployed = "none: no on-site agent is deployed"
    return OnSiteAgentStatus(
        name=f"{site.config.name} on-site agent",
        status="disabled",
        description=f"{site.config.name} has no on-site agent: its content is published for "
        "agents through this API only.",
        deployment=AgentDeployment(mode=not_deployed, version="none", placement=not_deployed),
        configuration=AgentConfiguration(
            knowledge_sources=[],
            languages=[],  # no agent speaks any
            grounding=not_deployed,
            escalation=f"{not_deployed}; contact {site.config.contact}",
            telemetry=TelemetrySettings(enabled=False, anonymized=False, retention_days=0),
        ),
        capabilities=[],
    )
