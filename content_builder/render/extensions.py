"""The files agents look for beyond the spec (issue 14): the change feed, the RFC 9727
API catalog, the sitemap and robots.txt. The spec's own files are not touched."""

from __future__ import annotations

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
from content_builder.loaded import Site
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
        f"<url><loc>{_xml_text(site.base_url + api_path)}</loc>"
        f"<lastmod>{updated_at}</lastmod></url>"
    )


def _xml_text(text: str) -> str:
    """`text` as XML character data: the three escapes of xml.sax.saxutils.escape, whose
    import pulls urllib.request, http.client and email into every build (~8 ms of a
    0.3 s build, issue 22)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def sitemap_xml(site: Site, catalog: Catalog) -> str:
    """Every document and FAQ entry's JSON URL. At most 50,000 URLs per sitemap
    (sitemaps.org protocol): the build refuses more rather than publish a cut list."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<urlset xmlns="{SITEMAP_NS}">']
    lines += [entry.sitemap_url for entry in catalog.entries]
    lines.append("</urlset>")
    return "\n".join(lines)


#: The Content Signals Policy (https://contentsignals.org/, published by Cloudflare under
#: CC0), the comment block Cloudflare's managed robots.txt puts before the signals:
#: https://developers.cloudflare.com/bots/additional-configurations/managed-robots-txt/
CONTENT_SIGNALS_POLICY = """\
# As a condition of accessing this website, you agree to abide by the following
# content signals:

# (a)  If a content-signal = yes, you may collect content for the corresponding
#      use.
# (b)  If a content-signal = no, you may not collect content for the
#      corresponding use.
# (c)  If the website operator does not include a content signal for a
#      corresponding use, the website operator neither grants nor restricts
#      permission via content signal with respect to the corresponding use.

# The content signals and their meanings are:

# search:   building a search index and providing search results (e.g., returning
#           hyperlinks and short excerpts from your website's contents). Search does not
#           include providing AI-generated search summaries.
# ai-input: inputting content into one or more AI models (e.g., retrieval
#           augmented generation, grounding, or other real-time taking of content for
#           generative AI search answers).
# ai-train: training or fine-tuning AI models.

# ANY RESTRICTIONS EXPRESSED VIA CONTENT SIGNALS ARE EXPRESS RESERVATIONS OF
# RIGHTS UNDER ARTICLE 4 OF THE EUROPEAN UNION DIRECTIVE 2019/790 ON COPYRIGHT
# AND RELATED RIGHTS IN THE DIGITAL SINGLE MARKET.
"""


def robots_txt(site: Site) -> str:
    """Every agent allowed, the sitemap named, and the owner's content signals when
    site.yaml declares any: the policy's comment block, then a `Content-Signal` line in
    the `User-agent: *` group, as Cloudflare writes it. None declared (the default):
    neither, since the block is a condition the owner has not chosen to set."""
    declared = site.config.content_signals.declared()
    signal = ", ".join(f"{name}={value}" for name, value in declared)
    return "\n".join(
        [
            *([CONTENT_SIGNALS_POLICY] if declared else []),
            "# Every agent and crawler is welcome: this site publishes its content for them.",
            "User-agent: *",
            *([f"Content-Signal: {signal}"] if declared else []),
            "Allow: /",
            "",
            f"Sitemap: {site.base_url}{paths.SITEMAP}",
        ]
    )
