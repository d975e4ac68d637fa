"""The files agents look for beyond the spec (issue 14): the change feed, the RFC 9727
API catalog, the sitemap and robots.txt. The spec's own files are not touched."""

from __future__ import annotations

from xml.sax.saxutils import escape

from agent_contract import paths
from agent_contract.endpoints import JSON_MEDIA
from agent_contract.models import (
    ApiCatalog,
    ApiCatalogContext,
    ChangeFeed,
    ChangeFeedEntry,
    Link,
    RemovedIds,
)
from content_builder.loader import Site
from content_builder.render.documents import Catalog, cached_content_hash

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def change_feed(site: Site, catalog: Catalog) -> ChangeFeed:
    history = catalog.history
    entries = [
        ChangeFeedEntry(
            id=document.id,
            api_url=site.base_url + paths.document(document.id),
            updated_at=document.updated_at,
            content_hash=document.metadata.content_hash,
        )
        for _, document in catalog.documents
    ]
    entries += [
        ChangeFeedEntry(
            id=faq.id,
            api_url=site.base_url + paths.faq(faq.id),
            updated_at=catalog.lock[faq.id].updated_at,
            content_hash=cached_content_hash(
                site, loaded.cache_key, lambda faq=faq: faq.model_dump(mode="json")
            ),
        )
        for loaded, faq in catalog.faqs
    ]
    return ChangeFeed(
        generation=history.generation,
        oldest_generation=history.oldest_generation,
        entries=entries,
        removed=[RemovedIds(generation=g, ids=list(ids)) for g, ids in history.removed],
    )


def api_catalog(site: Site) -> dict[str, object]:
    """RFC 9727 section 4: the catalog's linkset has one context per API, anchored at the
    API, with `service-desc` (machine-readable description), `service-doc` (for people
    and agents) and `status`; the catalog itself is named by an `item` link from its own
    anchor (RFC 9727 section 4.1). Rendered with the relation names as JSON keys."""
    base = site.base_url
    catalog = ApiCatalog(
        linkset=[
            ApiCatalogContext(
                anchor=base + paths.API_CATALOG,
                item=[Link(href=base + paths.API_PREFIX, title=f"{site.config.name} API")],
            ),
            ApiCatalogContext(
                anchor=base + paths.API_PREFIX,
                service_desc=[Link(href=base + paths.OPENAPI, type=JSON_MEDIA)],
                service_doc=[
                    Link(href=base + paths.LLMS_TXT, type="text/plain"),
                    Link(href=base + paths.discovery(site.config.brand), type=JSON_MEDIA),
                ],
                service_meta=[Link(href=base + paths.MCP_MANIFEST, type=JSON_MEDIA)],
                status=[Link(href=base + paths.CHANGES, type=JSON_MEDIA)],
            ),
        ]
    )
    return catalog.model_dump(mode="json", by_alias=True, exclude_none=True)


def sitemap_xml(site: Site, catalog: Catalog) -> str:
    """Every document and FAQ entry's JSON URL with lastmod = updated_at (W3C datetime,
    which the sitemap schema's `tLastmod` accepts). At most 50,000 URLs per sitemap
    (sitemaps.org protocol): the build refuses more rather than publish a cut list."""
    urls = [
        (site.base_url + paths.document(document.id), document.updated_at)
        for _, document in catalog.documents
    ]
    urls += [
        (site.base_url + paths.faq(faq.id), catalog.lock[faq.id].updated_at)
        for _, faq in catalog.faqs
    ]
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<urlset xmlns="{SITEMAP_NS}">']
    lines += [
        f"<url><loc>{escape(loc)}</loc><lastmod>{lastmod}</lastmod></url>" for loc, lastmod in urls
    ]
    lines.append("</urlset>")
    return "\n".join(lines)


def robots_txt(site: Site) -> str:
    return "\n".join(
        [
            "# Every agent and crawler is welcome: this site publishes its content for them.",
            "User-agent: *",
            "Allow: /",
            "",
            f"Sitemap: {site.base_url}{paths.SITEMAP}",
        ]
    )
