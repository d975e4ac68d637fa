"""Each document and FAQ entry rendered once into its published pieces (render/catalog.py),
or taken from the build cache when neither its file nor its lock entry changed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

from agent_contract import links as link_rules
from agent_contract import paths
from agent_contract.artifacts import json_body, text_body
from agent_contract.endpoints import SINGLE_FILES
from agent_contract.search_terms import Tokenizer
from content_builder.errors import SiteDataError
from content_builder.halves import in_halves
from content_builder.loader import LoadedDocument, LoadedFaq, Site
from content_builder.lock import History, Lock, LockEntry
from content_builder.render.catalog import (
    JOINED,
    Catalog,
    EntryLinks,
    EntryRender,
    SpliceMarkerInText,
)
from content_builder.render.documents import (
    DocumentData,
    cached_content_hash,
    content_document,
    faq_entry,
)
from content_builder.render.extensions import change_entry, sitemap_url
from content_builder.render.indexes import (
    document_index_entry,
    document_search,
    faq_index_entry,
    faq_search,
    search_tokenizer,
)
from content_builder.render.llms import document_block, document_link, faq_block, faq_link
from content_builder.render.markdown import document_markdown, faq_markdown
from content_builder.validate import authored_links, body_links


class EntryFileSink(Protocol):
    """Where an entry's own files go as soon as it is rendered (content_builder/early.py)."""

    def __call__(self, files: list[tuple[str, bytes]]) -> int:
        """Write these (key, body) pairs, in the process that rendered them; what it did,
        as an int `recorded` understands. Never raises."""

    def recorded(self, files: list[tuple[str, bytes]], done: int) -> None:
        """Here, after the halves: what `__call__` did with these files, wherever it ran
        (the bodies are those this process publishes)."""


def own_files(loaded: LoadedDocument | LoadedFaq, rendered: EntryRender) -> list[tuple[str, bytes]]:
    """An entry's JSON file and Markdown mirror, as (key under the output folder, body);
    empty when either body is still in the build cache."""
    if not isinstance(rendered.json, bytes) or not isinstance(rendered.markdown, bytes):
        return []
    if isinstance(loaded, LoadedDocument):
        json_path, markdown_path = paths.document(loaded.id), paths.document_markdown(loaded.id)
    else:
        json_path, markdown_path = paths.faq(loaded.id), paths.faq_markdown(loaded.id)
    return [(json_path.lstrip("/"), rendered.json), (markdown_path.lstrip("/"), rendered.markdown)]


def build_catalog(
    site: Site,
    lock: Lock,
    history: History | None = None,
    data: DocumentData | None = None,
    sink: EntryFileSink | None = None,
) -> Catalog:
    """Every entry's pieces, in publication order. `data` holds the documents already
    rendered for the lock, so that none is rendered twice. The entries the cache does not
    hold are rendered in two halves when there are many (content_builder.halves).

    Whether each entry rendered now links only to paths published whatever the entries
    say (`Catalog.links_resolved`) is found by the process that rendered it, from the
    links in memory there: the build's cross-checks then skip those links, as they skip
    the links the last build proved (content_builder/build.py `_check`), instead of
    unpickling and resolving ~1 M links in one process after the halves (0.7 s of a cold
    10,000-entry build's critical path).

    Each entry rendered now is given to `sink` (when given) as soon as it is rendered, by
    the process that rendered it: a first build's files are written by both halves, the
    child's from its own memory (content_builder/early.py `EntryFiles`)."""
    data = data or DocumentData(site)
    tokenizer = search_tokenizer()
    entries: list[LoadedDocument | LoadedFaq] = [*site.documents, *site.faqs]
    found = [_from_cache(site, loaded, lock[loaded.id]) for loaded in entries]
    missing = [index for index, rendered in enumerate(found) if rendered is None]
    # Worth the paths' set (35 ms at 10,000 entries) when many entries render: not for
    # a cached build's few, whose links the checks resolve in less.
    published = surely_published(site) if len(missing) * 10 >= len(entries) else None
    resolved: dict[str, bool] = {}  # by path, in the process that asks (a path recurs)

    def render(index: int) -> tuple[EntryRender, bool, int]:
        loaded = entries[index]
        if isinstance(loaded, LoadedDocument):
            rendered = _rendered(
                site, loaded, lambda: _document(site, loaded, lock, data, tokenizer)
            )
        else:
            rendered = _rendered(site, loaded, lambda: _faq(site, loaded, lock, tokenizer))
        done = sink(own_files(loaded, rendered)) if sink is not None else 0
        return (
            rendered,
            published is not None and _links_resolve(rendered.links, published, resolved),
            done,
        )

    def given_away(index: int) -> None:  # the child renders it: nothing of it is kept here
        loaded = entries[index]
        loaded.release()  # its models reload if needed
        if isinstance(loaded, LoadedDocument):
            data.forget(loaded)

    rendered_all = in_halves(missing, render, given_away=given_away)
    links_resolved = [False] * len(entries)
    for index, (rendered, resolves, done) in zip(missing, rendered_all, strict=True):
        links_resolved[index] = resolves
        loaded, dated = entries[index], lock[entries[index].id]
        if sink is not None:
            sink.recorded(own_files(loaded, rendered), done)
        if loaded.cache_key:
            site.cache.put(loaded.cache_key, "rendered", (lock_stamp(dated), rendered.to_keep()))
        loaded.release()  # rendered: its models are not held while the rest renders
        found[index] = rendered
    documents = tuple(found[: len(site.documents)])
    faqs = tuple(found[len(site.documents) :])
    return Catalog(
        documents,  # type: ignore[arg-type]
        faqs,  # type: ignore[arg-type]
        lock,
        history or History(),
        len(missing),
        tuple(links_resolved) if published is not None else (),
        published or frozenset(),
    )


def surely_published(site: Site) -> frozenset[str]:
    """Paths every build of this site publishes: each entry's JSON file and Markdown
    mirror, and each single-file row of the endpoint table. Not llms.txt's parts, whose
    names depend on the rendered entries: a link to one is checked with the built files.
    The checks use it only when every path in it is published (build.py `_check`)."""
    brand = site.config.brand
    return frozenset(
        [
            *(paths.document(loaded.id) for loaded in site.documents),
            *(paths.document_markdown(loaded.id) for loaded in site.documents),
            *(paths.faq(loaded.id) for loaded in site.faqs),
            *(paths.faq_markdown(loaded.id) for loaded in site.faqs),
            *(endpoint.resolve(brand) for endpoint in SINGLE_FILES),
        ]
    )


def _links_resolve(links: EntryLinks, published: frozenset[str], known: dict[str, bool]) -> bool:
    """Whether every link of an entry resolves (`links.resolves`) among `published`."""
    named = {path for _, path in links.json}
    named.update(path for _, path in links.markdown)
    named.update(path for _, _, path in links.authored)
    for found in links.pieces.values():
        named.update(path for _, path in found)
    for path in named.difference(published):  # a template, a non-file path or a dangling one
        answer = known.get(path)
        if answer is None:
            answer = known[path] = link_rules.resolves(path, published)
        if not answer:
            return False
    return True


def _from_cache(
    site: Site, loaded: LoadedDocument | LoadedFaq, dated: LockEntry
) -> EntryRender | None:
    # The pieces depend on the entry's bytes and the build settings (both in its cache
    # key) and on its lock entry, which is stored beside them and compared.
    found = site.cache.get(loaded.cache_key, "rendered") if loaded.cache_key else None
    if found is not None and found[0] == lock_stamp(dated):
        return found[1]  # type: ignore[no-any-return]
    return None


def lock_stamp(dated: LockEntry) -> tuple[str, str]:
    """What of an entry's lock entry its pieces depend on (its dates and version)."""
    return (dated.updated_at, dated.content_version)


def _rendered(
    site: Site, loaded: LoadedDocument | LoadedFaq, render: Callable[[], EntryRender]
) -> EntryRender:
    try:
        return _with_links(site, loaded, render())
    except SpliceMarkerInText as error:
        raise SiteDataError.single(
            loaded.file,
            None,
            "holds the text the build reserves for joining files (NUL, 'agent-access splice', "
            "NUL); remove the NUL characters",
        ) from error


def _with_links(
    site: Site, loaded: LoadedDocument | LoadedFaq, rendered: EntryRender
) -> EntryRender:
    def text(piece: bytes | str | tuple[bytes, bytes]) -> bytes:
        if isinstance(piece, tuple):
            return b" ".join(piece)  # the search entry's two halves, never one link
        return piece if isinstance(piece, bytes) else piece.encode("utf-8")

    links = EntryLinks(
        json=body_links(site, rendered.json),
        markdown=body_links(site, rendered.markdown),
        authored=authored_links(site, loaded.source),
        pieces={name: body_links(site, text(getattr(rendered, name))) for name in JOINED.values()},
    )
    return rendered._replace(links=links)


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _own_pieces(
    site: Site,
    loaded: LoadedDocument | LoadedFaq,
    api_path: str,
    body: bytes,
    markdown: bytes,
    dated: LockEntry,
    content_hash: str,
) -> dict[str, Any]:
    """What every entry has the same way: its files with their digests, its change-feed
    entry and sitemap URL (its links are found once every piece is there, _with_links)."""
    return {
        "id": loaded.id,
        "json": body,
        "json_sha256": _sha256(body),
        "markdown": markdown,
        "markdown_sha256": _sha256(markdown),
        "change_entry": change_entry(site, api_path, loaded.id, dated.updated_at, content_hash),
        "sitemap_url": sitemap_url(site, api_path, dated.updated_at),
        "links": None,
    }


def _document(
    site: Site, loaded: LoadedDocument, lock: Lock, data: DocumentData, tokenizer: Tokenizer
) -> EntryRender:
    dated = lock[loaded.id]
    document = content_document(site, loaded, dated, data(loaded))
    data.forget(loaded)
    markdown = document_markdown(site.base_url, document, loaded.source.description)
    head, terms = document_search(site, loaded, document, tokenizer)
    return EntryRender(
        **_own_pieces(
            site, loaded, paths.document(document.id), json_body(document),
            text_body(markdown), dated, document.metadata.content_hash,
        ),
        index_entry=document_index_entry(site, loaded, document),
        search_head=head,
        terms=terms,
        llms_link=document_link(site, loaded, document),
        llms_full_block=document_block(site, loaded, document).encode("utf-8"),
    )  # fmt: skip


def _faq(site: Site, loaded: LoadedFaq, lock: Lock, tokenizer: Tokenizer) -> EntryRender:
    dated = lock[loaded.id]
    faq = faq_entry(loaded)
    content_hash = cached_content_hash(site, loaded.cache_key, lambda: faq.model_dump(mode="json"))
    head, terms = faq_search(site, loaded, faq, tokenizer)
    return EntryRender(
        **_own_pieces(
            site, loaded, paths.faq(faq.id), json_body(faq),
            text_body(faq_markdown(site.base_url, faq)), dated, content_hash,
        ),
        index_entry=faq_index_entry(site, loaded, faq, dated.updated_at),
        search_head=head,
        terms=terms,
        llms_link=faq_link(site, faq),
        llms_full_block=faq_block(site, loaded, faq).encode("utf-8"),
    )  # fmt: skip
