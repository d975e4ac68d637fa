"""Every URL path the API publishes, by name: read from the endpoint table (endpoints.py)."""

from __future__ import annotations

from agent_contract.endpoints import API_PREFIX, ENDPOINT

__all__ = ["API_PREFIX"]

CONTENT_INDEX = ENDPOINT["content_index"].path
SEARCH_INDEX = ENDPOINT["search_index"].path
ARCHITECTURE = ENDPOINT["architecture"].path
ON_SITE_AGENT = ENDPOINT["on_site_agent"].path
MCP_MANIFEST = ENDPOINT["mcp_manifest"].path
MCP_WELL_KNOWN = ENDPOINT["mcp_well_known"].path
OPENAPI = ENDPOINT["openapi"].path
LLMS_TXT = ENDPOINT["llms_txt"].path
LLMS_FULL_TXT = ENDPOINT["llms_full_txt"].path
NOT_FOUND = ENDPOINT["not_found"].path

DOCUMENT_TEMPLATE = ENDPOINT["document"].path
FAQ_TEMPLATE = ENDPOINT["faq"].path

#: The file CloudFront and `serve` answer for `/` (CloudFront's default root object).
ROOT_OBJECT = LLMS_TXT


def discovery(brand: str) -> str:
    return ENDPOINT["discovery"].resolve(brand)


def document(document_id: str) -> str:
    return DOCUMENT_TEMPLATE.format(document_id=document_id)


def faq(faq_id: str) -> str:
    return FAQ_TEMPLATE.format(faq_id=faq_id)
