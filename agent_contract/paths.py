"""Every URL path the API publishes, by name: read from the endpoint table (endpoints.py)."""

from __future__ import annotations

from agent_contract.endpoints import API_PREFIX, ENDPOINT

__all__ = ["API_PREFIX"]

CONTENT_INDEX = ENDPOINT["content_index"].path
SEARCH_INDEX = ENDPOINT["search_index"].path
SEARCH_TERMS = ENDPOINT["search_terms"].path
SEARCH_SHARD_TEMPLATE = ENDPOINT["search_shard"].path
SEARCH_ENTRIES_TEMPLATE = ENDPOINT["search_entries"].path
ARCHITECTURE = ENDPOINT["architecture"].path
ON_SITE_AGENT = ENDPOINT["on_site_agent"].path
MCP_MANIFEST = ENDPOINT["mcp_manifest"].path
MCP_WELL_KNOWN = ENDPOINT["mcp_well_known"].path
OPENAPI = ENDPOINT["openapi"].path
LLMS_TXT = ENDPOINT["llms_txt"].path
LLMS_FULL_TXT = ENDPOINT["llms_full_txt"].path
NOT_FOUND = ENDPOINT["not_found"].path
CHANGES = ENDPOINT["changes"].path
API_CATALOG = ENDPOINT["api_catalog"].path
SITEMAP = ENDPOINT["sitemap"].path
ROBOTS_TXT = ENDPOINT["robots"].path
#: The Agent Skills discovery RFC's indexes: v0.2.0's, and v0.1.0's kept for older clients.
SKILLS_INDEX = ENDPOINT["skills_index"].path
SKILLS_INDEX_V0_1 = ENDPOINT["skills_index_v0_1"].path

DOCUMENT_TEMPLATE = ENDPOINT["document"].path
FAQ_TEMPLATE = ENDPOINT["faq"].path
LLMS_PART_TEMPLATE = ENDPOINT["llms_part"].path
DOCUMENT_MARKDOWN_TEMPLATE = ENDPOINT["document_markdown"].path
FAQ_MARKDOWN_TEMPLATE = ENDPOINT["faq_markdown"].path

#: The file CloudFront and `serve` answer for `/` (CloudFront's default root object).
ROOT_OBJECT = LLMS_TXT


def discovery(brand: str) -> str:
    return ENDPOINT["discovery"].resolve(brand)


def skill_v0_1_file(name: str, file: str) -> str:
    """Where a v0.1.0 client fetches a file its index lists: `/.well-known/skills/{name}/{file}`
    (the RFC's v0.1.0 derives it from the skill's name)."""
    folder = ENDPOINT["skill_v0_1"].path.rsplit("/", 1)[0]
    return f"{folder.replace('{brand}', name)}/{file}"


def document(document_id: str) -> str:
    return DOCUMENT_TEMPLATE.format(document_id=document_id)


def faq(faq_id: str) -> str:
    return FAQ_TEMPLATE.format(faq_id=faq_id)


def document_markdown(document_id: str) -> str:
    return DOCUMENT_MARKDOWN_TEMPLATE.format(document_id=document_id)


def faq_markdown(faq_id: str) -> str:
    return FAQ_MARKDOWN_TEMPLATE.format(faq_id=faq_id)


#: The folders whose `{id}.json` files have a Markdown twin, and the files in them that
#: are not entries (the index and the search index live beside the documents).
TWIN_TEMPLATES = (
    (DOCUMENT_TEMPLATE, DOCUMENT_MARKDOWN_TEMPLATE),
    (FAQ_TEMPLATE, FAQ_MARKDOWN_TEMPLATE),
)
NOT_ENTRY_IDS = ("index", "search-index")


def markdown_twin(path: str) -> str | None:
    """The Markdown mirror of a document's or FAQ entry's JSON path, if it has one."""
    for json_template, markdown_template in TWIN_TEMPLATES:
        head = json_template.split("{", 1)[0]
        if path.startswith(head) and path.endswith(".json") and "/" not in path[len(head) :]:
            entry_id = path[len(head) : -len(".json")]
            if entry_id and entry_id not in NOT_ENTRY_IDS:
                return markdown_template.split("{", 1)[0] + entry_id + ".md"
    return None


def search_shard(name: str) -> str:
    return SEARCH_SHARD_TEMPLATE.format(shard=name)


def search_entries(prefix: str) -> str:
    return SEARCH_ENTRIES_TEMPLATE.format(prefix=prefix)


def llms_part(part: str) -> str:
    return LLMS_PART_TEMPLATE.format(part=part)
