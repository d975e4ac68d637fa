"""The renderer of each single-file row of the endpoint table (agent_contract/endpoints.py).

The build publishes one file per row, from the renderer registered here under the row's
key; `tests/test_endpoints.py` fails when a row has no renderer or a renderer no row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

from pydantic import BaseModel

from agent_contract import paths
from agent_contract.artifacts import Artifact, json_body, text_body
from content_builder.loaded import Site
from content_builder.render.catalog import Catalog, entry_file
from content_builder.render.discovery import discovery_document
from content_builder.render.errors import not_found
from content_builder.render.extensions import api_catalog, change_feed, robots_txt, sitemap_xml
from content_builder.render.indexes import content_index, search_index
from content_builder.render.llms import llms_full_txt, llms_parts, llms_txt
from content_builder.render.mcp import mcp_manifest
from content_builder.render.openapi import openapi_document
from content_builder.render.shards import sharded_index
from content_builder.render.skill import legacy_skills_index, skill_markdown, skills_index


@dataclass
class RenderContext:
    site: Site
    catalog: Catalog
    mcp_endpoint: str | None  # a live MCP server's URL, named by the discovery document

    @cached_property
    def mcp_manifest(self) -> bytes:
        """Rendered once for both of its locations."""
        return json_body(mcp_manifest(self.site, self.catalog, self.mcp_endpoint))

    @cached_property
    def skill(self) -> bytes:
        """SKILL.md, rendered once for both its locations and the digest of its index."""
        return skill_markdown(self.site, self.catalog, self.mcp_endpoint)


#: The aggregates that grow with the site are published without indentation: at 10,000
#: entries indentation was 43 % of search-index.json (83.5 MB -> 47.9 MB) and took
#: index.json over CloudFront's 10,000,000-byte limit for compression (11.3 MB -> 9.95 MB).
def compact_json_body(value: BaseModel) -> bytes:
    """JSON without whitespace (`json.dumps(data, ensure_ascii=False,
    separators=(",", ":"))`, tested), model field order, trailing newline."""
    return value.model_dump_json(exclude_none=True).encode("utf-8") + b"\n"


@dataclass(frozen=True)
class Renderer:
    body: Callable[[RenderContext], bytes]
    source: Callable[[Site], str | None] = lambda site: None  # the site_data file, for errors


def _architecture(c: RenderContext) -> bytes:
    """The site's own file, else what the build knows (site_facts.py, issue 23)."""
    if c.site.architecture is not None:
        return json_body(c.site.architecture)
    # Imported here: only a site without architecture.yaml needs it, and a build's
    # start-up is most of a small site's build (issue 22).
    from content_builder.render import site_facts

    return json_body(site_facts.architecture(c.site, c.catalog, c.mcp_endpoint))


def _on_site_agent(c: RenderContext) -> bytes:
    """The site's own file, else the on-site agent as not deployed (site_facts.py)."""
    if c.site.on_site_agent is not None:
        return json_body(c.site.on_site_agent)
    from content_builder.render import site_facts  # as in _architecture

    return json_body(site_facts.on_site_agent(c.site))


RENDERERS: dict[str, Renderer] = {
    "architecture": Renderer(_architecture, lambda site: site.architecture_file),
    "on_site_agent": Renderer(_on_site_agent, lambda site: site.on_site_agent_file),
    "not_found": Renderer(lambda c: json_body(not_found(c.site))),
    "content_index": Renderer(lambda c: content_index(c.site, c.catalog)),
    "search_index": Renderer(lambda c: search_index(c.site, c.catalog)),
    "search_terms": Renderer(lambda c: sharded_index(c.site, c.catalog).term_map),
    "llms_full_txt": Renderer(lambda c: llms_full_txt(c.site, c.catalog)),
    "mcp_manifest": Renderer(lambda c: c.mcp_manifest),
    "mcp_well_known": Renderer(lambda c: c.mcp_manifest),
    "openapi": Renderer(lambda c: json_body(openapi_document(c.site, c.catalog))),
    "discovery": Renderer(
        lambda c: json_body(discovery_document(c.site, c.catalog, c.mcp_endpoint))
    ),
    "llms_txt": Renderer(lambda c: text_body(llms_txt(c.site, c.catalog))),
    "changes": Renderer(lambda c: change_feed(c.site, c.catalog)),
    "api_catalog": Renderer(lambda c: json_body(api_catalog(c.site))),
    "sitemap": Renderer(lambda c: text_body(sitemap_xml(c.site, c.catalog))),
    "robots": Renderer(lambda c: text_body(robots_txt(c.site))),
    "skill": Renderer(lambda c: c.skill, lambda site: site.display("SKILL.md")),
    "skills_index": Renderer(lambda c: json_body(skills_index(c.site, c.skill))),
    # The same SKILL.md bytes where the discovery RFC's v0.1.0 clients look (issue 26).
    "skill_v0_1": Renderer(lambda c: c.skill, lambda site: site.display("SKILL.md")),
    "skills_index_v0_1": Renderer(lambda c: json_body(legacy_skills_index(c.site, c.skill))),
}


def markdown_mirrors(site: Site, catalog: Catalog) -> Iterator[Artifact]:
    """The per-entry rows beside the JSON: a Markdown mirror per entry (rendered with the
    entry, render/entries.py), then llms.txt's parts (llms_part)."""
    for entry, file in zip(catalog.documents, (d.file for d in site.documents), strict=True):
        yield entry_file(
            paths.document_markdown(entry.id),
            entry.markdown,
            entry.markdown_sha256,
            file,
            site.cache,
        )
    for entry, file in zip(catalog.faqs, (f.file for f in site.faqs), strict=True):
        yield entry_file(
            paths.faq_markdown(entry.id), entry.markdown, entry.markdown_sha256, file, site.cache
        )
    for name, text in llms_parts(site, catalog):
        yield Artifact(paths.llms_part(name), text_body(text))


def search_shard_files(site: Site, catalog: Catalog) -> Iterator[Artifact]:
    """The sharded search index's shards and entry files (its term map is a row)."""
    yield from sharded_index(site, catalog).files
