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
from content_builder.render.catalog import Catalog, around, compact_item

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def change_entry(site: Site, api_path: str, entry_id: str, updated_at: str, hash_: str) -> bytes:
    """The entry's entry of changes.json."""
    return compact_item(
        ChangeFeedEntry(
            id=entry_id, api_url=site.base_url + api_path, updated_at=updated_at,
            content_hash=hash_,
        )
    )  # fmt: skip


def change_feed(site: Site, catalog: Catalog) -> bytes:
    """changes.json, joined from the entries' pieces."""
    history = catalog.history
    head, tail = around(
        ChangeFeed(
            generation=history.generation,
            oldest_generation=history.oldest_generation,
            entries=[],
            removed=[RemovedIds(generation=g, ids=list(ids)) for g, ids in history.removed],
        ),
        "entries",
    )
    return head + b",".join(entry.change_entry for entry in catalog.entries) + tail + b"\n"


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


def sitemap_url(site: Site, api_path: str, updated_at: str) -> str:
    """The entry's <url> element of sitemap.xml: its JSON URL, lastmod = updated_at (W3C
    datetime, which the sitemap schema's `tLastmod` accepts)."""
    return (
        f"<url><loc>{escape(site.base_url + api_path)}</loc><lastmod>{updated_at}</lastmod></url>"
    )


def sitemap_xml(site: Site, catalog: Catalog) -> str:
    """Every document and FAQ entry's JSON URL. At most 50,000 URLs per sitemap
    (sitemaps.org protocol): the build refuses more rather than publish a cut list."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<urlset xmlns="{SITEMAP_NS}">']
    lines += [entry.sitemap_url for entry in catalog.entries]
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
