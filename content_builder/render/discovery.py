"""The discovery document: the canonical entry point, linking every interface."""

from __future__ import annotations

from agent_contract import paths, search_shards
from agent_contract.endpoints import ID_LIST_LIMIT, discovery_interfaces
from agent_contract.mcp_endpoint import SERVER_CARD_SUFFIX
from agent_contract.models import (
    DiscoveryAccess,
    DiscoveryContent,
    DiscoveryDocument,
    DiscoveryInterfaces,
    DiscoveryProtocols,
    LlmsTxtProtocol,
    McpProtocol,
    OpenApiProtocol,
)
from agent_contract.routes import HEADER_POLICY
from content_builder.loaded import Site
from content_builder.render.catalog import Catalog
from content_builder.render.llms import row_has_files
from content_builder.render.mcp import MCP_VERSION
from content_builder.render.openapi import OPENAPI_VERSION


def discovery_document(
    site: Site, catalog: Catalog, mcp_endpoint: str | None = None
) -> DiscoveryDocument:
    def url(path: str) -> str:
        return site.base_url + path

    return DiscoveryDocument(
        name=site.config.name,
        description=site.config.description,
        website=site.config.website,
        api_version=site.config.api_version,
        interfaces=DiscoveryInterfaces(
            **{
                endpoint.key: url(endpoint.resolve(site.config.brand))
                for endpoint in discovery_interfaces()
                if row_has_files(endpoint, site, catalog)
            }
        ),
        content=DiscoveryContent(
            language=site.config.language,
            # Every agent reads this first: past the limit, the ids are the content
            # index's to list (at 10,000 entries the maps were 2 MB of 2.1).
            documents={doc.id: url(paths.document(doc.id)) for doc in catalog.documents}
            if len(catalog.documents) <= ID_LIST_LIMIT
            else {},
            faq={faq.id: url(paths.faq(faq.id)) for faq in catalog.faqs}
            if len(catalog.faqs) <= ID_LIST_LIMIT
            else {},
            total_documents=len(catalog.documents),
            total_faq=len(catalog.faqs),
            document_url=url(paths.DOCUMENT_TEMPLATE) if catalog.documents else None,
            faq_url=url(paths.FAQ_TEMPLATE) if catalog.faqs else None,
        ),
        protocols=DiscoveryProtocols(
            mcp=McpProtocol(
                version=MCP_VERSION,
                manifest=url(paths.MCP_MANIFEST),
                well_known=url(paths.MCP_WELL_KNOWN),
                transport="static manifest; tools describe plain HTTP GET endpoints"
                if mcp_endpoint is None
                else "streamable HTTP (POST, stateless, JSON responses) at endpoint; the "
                "static manifest describes the same tools as plain HTTP GET endpoints",
                json_rpc_server="planned" if mcp_endpoint is None else "available",
                endpoint=mcp_endpoint,
                server_card=None if mcp_endpoint is None else mcp_endpoint + SERVER_CARD_SUFFIX,
            ),
            openapi=OpenApiProtocol(version=OPENAPI_VERSION, url=url(paths.OPENAPI)),
            llms_txt=LlmsTxtProtocol(index=url(paths.LLMS_TXT), full=url(paths.LLMS_FULL_TXT)),
        ),
        access=DiscoveryAccess(
            authentication="none",
            methods=["GET"],
            transport="https",
            cors=HEADER_POLICY.allow_origin,
            rate_limit="the CDN's default limits; no service-specific quota",
            search=(
                "client-side: fetch the search index, lowercase the query, split it on "
                "non-alphanumeric characters, keep entries whose keywords contain a query "
                "word, rank by the number of distinct words matched. At any size, with "
                f"every entry's every word: the sharded index ({url(paths.SEARCH_TERMS)}). "
                + search_shards.PROCEDURE
            ),
            freshness=(
                "compare a document's updated_at and metadata.content_hash with your copy; "
                "every file has an ETag; If-None-Match with it answers 304 when unchanged"
            ),
            contact=site.config.contact,
        ),
    )
