"""Every URL path the API publishes, in one place (the spec's endpoint table)."""

from __future__ import annotations

API_PREFIX = "/api/v1"
CONTENT_INDEX = f"{API_PREFIX}/content/index.json"
SEARCH_INDEX = f"{API_PREFIX}/content/search-index.json"
ARCHITECTURE = f"{API_PREFIX}/architecture.json"
ON_SITE_AGENT = f"{API_PREFIX}/on-site-agent.json"
MCP_MANIFEST = f"{API_PREFIX}/mcp.json"
MCP_WELL_KNOWN = "/.well-known/mcp.json"
OPENAPI = f"{API_PREFIX}/openapi.json"
LLMS_TXT = "/llms.txt"
LLMS_FULL_TXT = "/llms-full.txt"
NOT_FOUND = "/errors/404.json"

DOCUMENT_TEMPLATE = f"{API_PREFIX}/content/{{document_id}}.json"
FAQ_TEMPLATE = f"{API_PREFIX}/faq/{{faq_id}}.json"

#: The file CloudFront and `serve` answer for `/` (CloudFront's default root object).
ROOT_OBJECT = LLMS_TXT


def discovery(brand: str) -> str:
    # The spec's /.well-known/service.json carries the brand in its name.
    return f"/.well-known/{brand}.json"


def document(document_id: str) -> str:
    return DOCUMENT_TEMPLATE.format(document_id=document_id)


def faq(faq_id: str) -> str:
    return FAQ_TEMPLATE.format(faq_id=faq_id)
