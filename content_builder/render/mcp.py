"""The MCP-shaped manifest, exactly as the spec's tool and resource tables say.

A static description only: every tool is a plain HTTP GET the agent makes itself
(`endpoint: "GET <absolute url>"`); there is no JSON-RPC server yet.
"""

from __future__ import annotations

from typing import Any

from agent_contract import paths
from agent_contract.endpoints import (
    ENDPOINT,
    ID_LIST_LIMIT,
    SITE_OVERVIEW_ID,
    Endpoint,
    mcp_resources,
)
from agent_contract.models import (
    McpCapabilities,
    McpInputSchema,
    McpManifest,
    McpResource,
    McpServerInfo,
    McpTool,
)
from content_builder.loaded import Site
from content_builder.render.catalog import Catalog
from content_builder.source import ID_PATTERN

MCP_VERSION = "2024-11-05"
SERVER_VERSION = "1.0.0"


def _inputs(**properties: dict[str, Any]) -> McpInputSchema:
    return McpInputSchema(type="object", properties=properties, required=sorted(properties))


def _by_id(
    site: Site, name: str, description: str, endpoint: Endpoint, what: str, ids: list[str]
) -> McpTool:
    """A tool that fetches one entry of a per-entry row, by an id the enum lists on a
    small site; past ID_LIST_LIMIT ids, by an id the index lists and search finds."""
    assert endpoint.parameter is not None
    if len(ids) <= ID_LIST_LIMIT:
        schema: dict[str, Any] = {
            "type": "string",
            "enum": ids,
            "description": f"Id of the {what}, as listed by the content index.",
        }
    else:
        schema = {
            "type": "string",
            "pattern": ID_PATTERN,
            "description": f"Id of the {what} ({len(ids):,} of them, too many to list "
            f"here): find it with search_content, or in the content index "
            f"({site.base_url}{paths.CONTENT_INDEX}).",
        }
    return McpTool(
        name=name,
        description=description,
        inputSchema=_inputs(**{endpoint.parameter.name: schema}),
        endpoint=f"GET {site.base_url}{endpoint.path}",
        returns=endpoint.model_name,
    )


def _tools(site: Site, catalog: Catalog) -> list[McpTool]:
    def get(path: str) -> str:
        return f"GET {site.base_url}{path}"

    document_ids = [document.id for document in catalog.documents]
    faq_ids = [faq.id for faq in catalog.faqs]
    tools = [
        McpTool(
            name="get_site_overview",
            description=f"Overview of {site.config.name}: what it is, who it is for and how "
            "to use it.",
            inputSchema=_inputs(),
            endpoint=get(paths.document(SITE_OVERVIEW_ID)),
            returns="ContentDocument (site overview)",
        ),
        McpTool(
            name="get_content_index",
            description="List every content document and FAQ entry with its title, type, "
            "description, updated_at and api_url.",
            inputSchema=_inputs(),
            endpoint=get(paths.CONTENT_INDEX),
            returns="ContentIndex",
        ),
        McpTool(
            name="search_content",
            description="Search the site. Fetch the search index, then keep the entries whose "
            "keywords contain a word of the query (lowercased, split on non-alphanumerics); "
            "rank by the number of distinct words matched. At any size, with every word of "
            f"every entry: the sharded index, GET {site.base_url}{paths.SEARCH_TERMS} (its "
            "`procedure` says how; a few small GETs per query).",
            inputSchema=_inputs(
                query={"type": "string", "minLength": 1, "description": "What to look for."}
            ),
            endpoint=get(paths.SEARCH_INDEX),
            returns="SearchIndex; the client filters its entries by matching the query "
            "against keywords",
        ),
        _by_id(
            site,
            "get_content_document",
            "Retrieve one content document in full by its id.",
            ENDPOINT["document"],
            "document",
            document_ids,
        ),
        _by_id(
            site,
            "get_faq",
            "Retrieve one frequently asked question and its answer by id.",
            ENDPOINT["faq"],
            "FAQ entry",
            faq_ids,
        ),
        McpTool(
            name="get_architecture",
            description="The typed data layer architecture, supported protocols and "
            "integration details.",
            inputSchema=_inputs(),
            endpoint=get(paths.ARCHITECTURE),
            returns="ArchitectureDocument",
        ),
        McpTool(
            name="get_full_content",
            description="Every document and FAQ entry as one plain-text file, for a context "
            "window.",
            inputSchema=_inputs(),
            endpoint=get(paths.LLMS_FULL_TXT),
            returns="text/plain",
        ),
    ]
    # A site without FAQ entries has no FAQ file to point at: an empty enum would make
    # get_faq uncallable, so the tool is left out (docs/decisions.md).
    return [tool for tool in tools if faq_ids or tool.name != "get_faq"]


def _resources(site: Site) -> list[McpResource]:
    brand = site.config.brand
    return [
        McpResource(
            uri=f"{brand}://{endpoint.mcp.name}",
            name=endpoint.mcp.title,
            description=endpoint.mcp.description.format(name=site.config.name),
            mimeType=endpoint.media_type,
            endpoint=f"GET {site.base_url}{_instance(endpoint, brand)}",
        )
        for endpoint in mcp_resources()
        if endpoint.mcp
    ]


def _instance(endpoint: Endpoint, brand: str) -> str:
    path = endpoint.resolve(brand)
    if endpoint.parameter and endpoint.mcp and endpoint.mcp.instance:
        return path.format(**{endpoint.parameter.name: endpoint.mcp.instance})
    return path


def mcp_manifest(site: Site, catalog: Catalog, mcp_endpoint: str | None = None) -> McpManifest:
    # With no live server, the spec's wording ("planned"); with one, where it answers.
    server = (
        "a JSON-RPC MCP server is planned."
        if mcp_endpoint is None
        else f"a live JSON-RPC MCP server answers at {mcp_endpoint}."
    )
    return McpManifest(
        mcpVersion=MCP_VERSION,
        serverInfo=McpServerInfo(
            name=f"{site.config.brand}-mcp-server",
            version=SERVER_VERSION,
            description=f"Static MCP-shaped manifest of {site.config.name}'s agent-access API. "
            f"Tools describe plain HTTP GET endpoints; {server}",
        ),
        capabilities=McpCapabilities(tools=True, resources=True, prompts=False),
        tools=_tools(site, catalog),
        resources=_resources(site),
    )
