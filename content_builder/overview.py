"""The `site` document of a site that has none: what site.yaml already says, nothing more.

The MCP manifest's get_site_overview tool and its content/site resource (the endpoint
table) point at /api/v1/content/site.json, so every site publishes one. A site that
writes content/site.yaml (or a page with `id: site`) says it in its own words; a docs tree
alone gets this one, built from the identity keys the owner wrote, so it claims nothing
the owner did not (issue 23: only what the site has).
"""

from __future__ import annotations

import json
from typing import Any

from agent_contract.endpoints import SITE_OVERVIEW_ID
from content_builder.cache import entry_key
from content_builder.source import DocumentSource, PageContentSource, SiteSource

#: The overview document's id: the contract's (the endpoint table's content/site resource).
SITE_DOCUMENT_ID = SITE_OVERVIEW_ID
#: Where its errors and its cache key say it comes from.
SOURCE_NAME = "site.yaml (the generated site overview)"
#: First in the index, as an overview is (YAML documents default to 100).
ORDER = 0


def overview_key(config: SiteSource) -> str:
    """The build cache's key: the site.yaml values the document is made of."""
    values = [config.name, config.description, config.about, config.website]
    return entry_key(SOURCE_NAME, json.dumps(values).encode())


def overview_models(config: SiteSource) -> tuple[Any, ...]:
    """(DocumentSource, PageContentSource), validated like an author's YAML document."""
    document = DocumentSource(
        id=SITE_DOCUMENT_ID,
        title=config.name,
        content_type="page",
        description=config.description,
        canonical_url=config.website,
        order=ORDER,
        content={},
    )
    sections = [{"title": f"About {config.name}", "body": config.about}]
    content = PageContentSource(headline=config.description, sections=sections)
    return document, content
