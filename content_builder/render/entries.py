"""Each document and FAQ entry rendered once into its published pieces (render/catalog.py),
or taken from the build cache when neither its file nor its lock entry changed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any

from agent_contract import paths
from agent_contract.artifacts import json_body, text_body
from agent_contract.search_terms import Tokenizer
from content_builder.errors import SiteDataError
from content_builder.loaded import LoadedDocument, LoadedFaq, Site
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
    entry_size,
    faq_index_entry,
    faq_search,
    search_tokenizer,
)
from content_builder.render.llms import document_block, document_link, faq_block, faq_link
from content_builder.render.markdown import document_markdown, faq_markdown
from content_builder.site_files import MARKDOWN_SUFFIXES
from content_builder.validate import authored_links, body_links


def build_catalog(
    site: Site,
    lock: Lock,
    history: History | None = None,
    data: DocumentData | None = None,
) -> Catalog:
    """Every entry's pieces, in publication order. `data` holds the documents already
    rendered for the lock, so that none is rendered twice. The entries the cache does not
    hold are rendered here, each released once rendered (many new ones were rendered
    into the cache by a pool before the build loaded them: prime.py)."""
    data = data or DocumentData(site)
    entries: list[LoadedDocument | LoadedFaq] = [*site.documents, *site.faqs]
    found = [_from_cache(site, loaded, lock[loaded.id]) for loaded in entries]
    missing = [index for index, rendered in enumerate(found) if rendered is None]
    todo = [entries[index] for index in missing]
    tokenizer = search_tokenizer() if todo else None
    rendered_now = (render_entry(site, loaded, lock, data, tokenizer) for loaded in todo)  # type: ignore[arg-type]
    for index, loaded, rendered in zip(missing, todo, rendered_now, strict=True):
        if loaded.cache_key:
            stamp = lock_stamp(lock[loaded.id])
            # Two fields, not one (stamp, pieces) tuple: one object less per entry for the
            # garbage collector to walk.
            site.cache.put(loaded.cache_key, "stamp", stamp)
            site.cache.put(loaded.cache_key, "rendered", rendered.to_keep())
        loaded.release()  # rendered: its models are not held while the rest renders
        data.forget(loaded)  # nor its data
        found[index] = rendered
    documents = tuple(found[: len(site.documents)])
    faqs = tuple(found[len(site.documents) :])
    return Catalog(
        documents,  # type: ignore[arg-type]
        faqs,  # type: ignore[arg-type]
        lock,
        history or History(),
        len(missing),
    )


def render_entry(
    site: Site,
    loaded: LoadedDocument | LoadedFaq,
    lock: Lock,
    data: DocumentData,
    tokenizer: Tokenizer,
) -> EntryRender:
    """One entry's pieces (also in a worker process: prime.py)."""
    if isinstance(loaded, LoadedDocument):
        return _rendered(site, loaded, partial(_document, site, loaded, lock, data, tokenizer))
    return _rendered(site, loaded, partial(_faq, site, loaded, lock, tokenizer))


def _from_cache(
    site: Site, loaded: LoadedDocument | LoadedFaq, dated: LockEntry
) -> EntryRender | None:
    # The pieces depend on the entry's bytes and the build settings (both in its cache
    # key) and on its lock entry, which is stored beside them and compared.
    if not loaded.cache_key or site.cache.get(loaded.cache_key, "stamp") != lock_stamp(dated):
        return None
    record = site.cache.get(loaded.cache_key, "rendered")
    return EntryRender.kept(record) if type(record) is tuple else None


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

    links = EntryLinks.found(
        json=body_links(site, rendered.json),  # type: ignore[arg-type]
        markdown=body_links(site, rendered.markdown),  # type: ignore[arg-type]
        authored=authored_links(site, loaded.source),
        pieces={name: body_links(site, text(getattr(rendered, name))) for name in JOINED.values()},
    )
    return rendered._replace(links=links.pack())


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
        "links": b"",
    }


def _document(
    site: Site, loaded: LoadedDocument, lock: Lock, data: DocumentData, tokenizer: Tokenizer
) -> EntryRender:
    dated = lock[loaded.id]
    document = content_document(site, loaded, dated, data(loaded))
    data.forget(loaded)
    markdown = text_body(
        document_markdown(
            site.base_url,
            document,
            loaded.source.description,
            loaded.file.endswith(MARKDOWN_SUFFIXES),
        )
    )
    body = json_body(document)
    size = entry_size(len(body), len(markdown))
    head, terms = document_search(site, loaded, document, tokenizer)
    return EntryRender(
        **_own_pieces(
            site, loaded, paths.document(document.id), body, markdown, dated,
            document.metadata.content_hash,
        ),
        index_entry=document_index_entry(site, loaded, document, size),
        search_head=head,
        terms=terms,
        llms_link=document_link(site, loaded, document, size),
        llms_full_block=document_block(site, loaded, document).encode("utf-8"),
    )  # fmt: skip


def _faq(site: Site, loaded: LoadedFaq, lock: Lock, tokenizer: Tokenizer) -> EntryRender:
    dated = lock[loaded.id]
    faq = faq_entry(loaded)
    content_hash = cached_content_hash(site, loaded.cache_key, lambda: faq.model_dump(mode="json"))
    head, terms = faq_search(site, loaded, faq, tokenizer)
    body, markdown = json_body(faq), text_body(faq_markdown(site.base_url, faq))
    size = entry_size(len(body), len(markdown))
    return EntryRender(
        **_own_pieces(
            site, loaded, paths.faq(faq.id), body, markdown, dated, content_hash,
        ),
        index_entry=faq_index_entry(site, loaded, faq, dated.updated_at, size),
        search_head=head,
        terms=terms,
        llms_link=faq_link(site, faq, size),
        llms_full_block=faq_block(site, loaded, faq).encode("utf-8"),
    )  # fmt: skip
