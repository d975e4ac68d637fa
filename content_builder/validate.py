"""Cross-reference checks: a build that would publish a dangling link or an incomplete
index fails before anything is written.

Two passes: authored text first (so the error names the site_data file and field),
then every built file (a safety net for what the renderers generate).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agent_contract import links, paths
from agent_contract.artifacts import Artifact
from agent_contract.endpoints import ENDPOINTS, ID_LIST_LIMIT
from content_builder.errors import Problem, SiteDataError
from content_builder.loaded import Site
from content_builder.tokens import located_strings, located_strings_containing
from content_builder.yaml_io import with_lines

if TYPE_CHECKING:
    from content_builder.render.catalog import Catalog, EntryLinks

#: An API link an author wrote: where (dotted location), the URL, the path it names.
ApiLink = tuple[str, str, str]


def _head(ids: list[str] | None) -> str:
    """A list of ids as a message shows it: the first few, not thousands."""
    if ids is None:
        return "none"
    return repr(ids) if len(ids) <= 8 else f"{ids[:8]!r}[:8] of {len(ids):,}"


def _api_links(site: Site, data: Any) -> list[ApiLink]:
    """Every URL in `data` that points into the API, with its location and path."""
    api_path = _api_path_memo(site)
    return [
        (location, sys.intern(url), path)  # interned: see body_links
        for location, text in located_strings_containing(data, "://")
        for url in links.urls(text)
        if (path := api_path(url)) is not None
    ]


_UNSEEN: Any = object()


def _api_path_memo(site: Site) -> Callable[[str], str | None]:
    # The build's memo of `links.api_path` (Site.api_paths): one dict look-up per link,
    # where the build checks ~1 M links (N = 10,000) into ~40,000 distinct URLs.
    known, base_url = site.api_paths, site.base_url

    def api_path(url: str) -> str | None:
        path = known.get(url, _UNSEEN)
        if path is _UNSEEN:
            path = known[url] = links.api_path(url, base_url)
        return path  # type: ignore[no-any-return]

    return api_path


def authored_links(site: Site, source: BaseModel) -> list[ApiLink]:
    """The links into the API an author wrote in one entry's source model."""
    return _api_links(site, source.model_dump(mode="json"))


def check_authored_links(
    site: Site,
    catalog: Catalog,
    published: frozenset[str],
    # Per entry, its links; None where they are proven (cache.py `Proven`). None: all read.
    entry_links: Sequence[EntryLinks | None] | None = None,
) -> None:
    problems: list[Problem] = []
    if entry_links is None:
        entry_links = catalog.links()
    sources: list[tuple[str, Sequence[ApiLink]]] = [
        (loaded.file, found.authored)
        for loaded, found in zip([*site.documents, *site.faqs], entry_links, strict=True)
        if found is not None
    ]
    # The site's own architecture.yaml and on-site-agent.yaml (the build's own, when
    # absent, link only what the endpoint table publishes).
    for file, model in (
        (site.architecture_file, site.architecture),
        (site.on_site_agent_file, site.on_site_agent),
    ):
        if file is not None and model is not None:
            sources.append((file, _api_links(site, model.model_dump(mode="json"))))
    for file, found_links in sources:
        found = [
            Problem(file, location, f"link {url} does not resolve to a published file")
            for location, url, path in found_links
            if not links.resolves(path, published)
        ]
        # `file` is the path as displayed (relative to the working directory).
        if found:
            problems += with_lines(found, Path(file))
    if problems:
        raise SiteDataError(problems)


def body_links(site: Site, body: bytes) -> list[tuple[str, str]]:
    """(URL, path) of every link into the API in a published file."""
    if b"://" not in body:  # no URL (links.urls finds none without it): most search shards
        return []
    # Interned: an entry names the same URLs in its JSON, its Markdown, its source and its
    # aggregate pieces, and its links are kept pickled (render/catalog.py `EntryLinks`),
    # which stores one string object once: half the links' share of the build cache.
    urls = list(map(sys.intern, links.urls(body.decode("utf-8"))))
    known = site.api_paths
    # Hundreds of thousands of links into a few thousand distinct URLs: looked up in bulk.
    api_paths = list(map(known.get, urls, repeat(_UNSEEN)))
    if _UNSEEN in api_paths:
        for index, url in enumerate(urls):
            if api_paths[index] is _UNSEEN:
                api_paths[index] = known[url] = links.api_path(url, site.base_url)
    return [(url, path) for url, path in zip(urls, api_paths, strict=True) if path is not None]


def check_artifacts(
    site: Site,
    artifacts: list[Artifact],
    known_links: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    coverage_proven: bool = False,
) -> None:
    """`known_links`: the links still to check of files whose links were found when they
    were rendered (an entry's own files, kept by the build cache with them) or proven by
    the last build that passed (cache.py `Proven`), by path; `coverage_proven`:
    that build published the same paths with the same discovery and OpenAPI bytes."""
    known_links = known_links or {}
    problems: list[Problem] = []
    by_path: dict[str, Artifact] = {}
    for artifact in artifacts:
        if artifact.path in by_path:
            problems.append(Problem(artifact.path, None, "two renderers produce this file"))
        by_path[artifact.path] = artifact
    published = frozenset(by_path)

    resolved: dict[str, bool] = {}  # a path is linked from many files
    for artifact in artifacts:
        found = known_links.get(artifact.path)
        if found is None:
            found = body_links(site, artifact.body)
        answers = [resolved.get(path) for _, path in found]
        if all(answers):
            continue
        for index, (_, path) in enumerate(found):
            if answers[index] is None:
                answers[index] = resolved[path] = links.resolves(path, published)
        dangling = [url for (url, _), ok in zip(found, answers, strict=True) if not ok]
        if dangling:
            where = (
                f"{artifact.path} (from {artifact.source})" if artifact.source else artifact.path
            )
            problems += [
                Problem(where, None, f"link {url} does not resolve to a published file")
                for url in dangling
            ]

    def load(path: str) -> Any:
        return json.loads(by_path[path].body)

    document_ids = [d.id for d in site.documents]
    faq_ids = [f.id for f in site.faqs]
    expected_ids = document_ids + faq_ids

    tools = {tool["name"]: tool for tool in load(paths.MCP_MANIFEST)["tools"]}
    for tool, parameter, ids in (
        ("get_content_document", "document_id", document_ids),
        ("get_faq", "faq_id", faq_ids),
    ):
        if tool not in tools and not ids:
            continue  # no entries of this kind: the manifest leaves the tool out
        enum = tools[tool]["inputSchema"]["properties"][parameter].get("enum")
        expected = ids if len(ids) <= ID_LIST_LIMIT else None  # past it: no enum at all
        if enum != expected:
            problems.append(
                Problem(
                    paths.MCP_MANIFEST,
                    f"{tool}.{parameter}",
                    f"enum {_head(enum)} != {_head(expected)} ({len(ids):,} ids)",
                )
            )
    if by_path[paths.MCP_WELL_KNOWN].body != by_path[paths.MCP_MANIFEST].body:
        problems.append(Problem(paths.MCP_WELL_KNOWN, None, "differs from " + paths.MCP_MANIFEST))

    index_ids = _ids(by_path[paths.CONTENT_INDEX].body, "documents")
    search_ids = _ids(by_path[paths.SEARCH_INDEX].body, "entries")
    # Every entry but the pages whose front matter keeps them out of search (`searchable`).
    searched_ids = [d.id for d in site.documents if d.searchable] + faq_ids
    for path, ids, expected in (
        (paths.CONTENT_INDEX, index_ids, expected_ids),
        (paths.SEARCH_INDEX, search_ids, searched_ids),
    ):
        if ids != expected:
            problems.append(Problem(path, None, f"covers {ids}, expected {expected}"))

    if not coverage_proven:
        # The web conventions are published but are no API operation (endpoints.py).
        conventions = {e.resolve(site.config.brand) for e in ENDPOINTS if not e.openapi}
        problems += _openapi_coverage(load(paths.OPENAPI)["paths"], published - conventions)
        problems += _discovery_coverage(site, load(paths.discovery(site.config.brand)), published)
    if problems:
        raise SiteDataError(problems)


def _ids(body: bytes, list_key: str) -> list[Any]:
    """The `id` of each object in the list `list_key` of a JSON document (an object without
    one as itself). Parsed whole, but each object with an `id` kept as its id only: the
    index and the search index (10 MB each at 10,000 entries) parsed into 20,000 dicts
    that lived long enough to set off full garbage collections of the build's heap."""
    return json.loads(body, object_pairs_hook=_id_or_object)[list_key]  # type: ignore[no-any-return]


def _id_or_object(pairs: list[tuple[str, Any]]) -> Any:
    for key, value in pairs:
        if key == "id":
            return value
    return dict(pairs)


def _openapi_coverage(operations: dict[str, Any], published: frozenset[str]) -> list[Problem]:
    covered = _any_of(links.template_pattern(template) for template in operations)
    problems = [
        Problem(paths.OPENAPI, "paths", f"no operation covers {path}")
        for path in sorted(published)
        if not covered.fullmatch(path)
    ]
    problems += [
        Problem(paths.OPENAPI, "paths", f"describes {template}, which is not published")
        for template in operations
        if "{" not in template and template not in published
    ]
    return problems


def _discovery_coverage(
    site: Site, discovery: dict[str, Any], published: frozenset[str]
) -> list[Problem]:
    linked = {
        links.url_path(url)
        for section in ("interfaces", "content")
        for _, url in located_strings(discovery[section])
        if url.startswith(site.base_url)
    }
    # A template (the Markdown mirrors' {document_id}.md) links every path it matches.
    templates = _any_of(links.template_pattern(path) for path in linked if "{" in path)
    return [
        Problem(paths.discovery(site.config.brand), None, f"does not link {path}")
        for path in sorted(published - linked - {paths.NOT_FOUND})
        if not templates.fullmatch(path)
    ]


def _any_of(patterns: Iterable[re.Pattern[str]]) -> re.Pattern[str]:
    """One regex that fully matches what any of `patterns` fully matches (none: nothing),
    tried once per published path instead of once per pattern."""
    alternatives = [f"(?:{pattern.pattern})" for pattern in patterns]
    return re.compile("|".join(alternatives) if alternatives else "(?!)")
