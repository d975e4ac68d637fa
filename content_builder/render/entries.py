"""Each document and FAQ entry rendered once into its published pieces (render/catalog.py),
or taken from the build cache when neither its file nor its lock entry changed."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from agent_contract import paths
from agent_contract.artifacts import json_body, text_body
from agent_contract.search_terms import Tokenizer
from content_builder.cache import EntryCache
from content_builder.errors import SiteDataError
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
    entry_size,
    faq_index_entry,
    faq_search,
    interned,
    search_tokenizer,
)
from content_builder.render.llms import document_block, document_link, faq_block, faq_link
from content_builder.render.markdown import document_markdown, faq_markdown
from content_builder.site_files import MARKDOWN_SUFFIXES
from content_builder.validate import authored_links, body_links

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

#: Below this many entries to render, this process renders them (~0.7 ms each): two
#: workers cost ~0.8 s to start and ~0.12 ms of CPU an entry, and gain only with a core
#: free. Measured on 2 shared cores: slower at 2,000 and 5,000 entries, 9 s faster at
#: 20,000 when a core was free (docs/decisions.md, issue 22, session 23).
POOL_THRESHOLD = 8000
#: Entries sent to a worker at a time: few enough that Ctrl-C waits for little (each
#: worker finishes the chunk it holds), many enough that the pipes' overhead is small.
_CHUNK = 100


def build_catalog(
    site: Site,
    lock: Lock,
    history: History | None = None,
    data: DocumentData | None = None,
) -> Catalog:
    """Every entry's pieces, in publication order. `data` holds the documents already
    rendered for the lock, so that none is rendered twice. The entries the cache does not
    hold are rendered here (by a pool of processes when there are many: `_render_all`),
    each released once rendered."""
    data = data or DocumentData(site)
    entries: list[LoadedDocument | LoadedFaq] = [*site.documents, *site.faqs]
    found = [_from_cache(site, loaded, lock[loaded.id]) for loaded in entries]
    missing = [index for index, rendered in enumerate(found) if rendered is None]
    todo = [entries[index] for index in missing]
    rendered_now = _render_all(site, todo, lock, data)
    for index, loaded, rendered in zip(missing, todo, rendered_now, strict=True):
        if loaded.cache_key:
            stamp = lock_stamp(lock[loaded.id])
            # Two fields, not one (stamp, pieces) tuple: one object less per entry for the
            # garbage collector to walk.
            site.cache.put(loaded.cache_key, "stamp", stamp)
            site.cache.put(loaded.cache_key, "rendered", rendered.to_keep())
        loaded.release()  # rendered: its models are not held while the rest renders
        data.forget(loaded)  # nor its data (a worker rendered it with its own)
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


def _render_all(
    site: Site, todo: list[LoadedDocument | LoadedFaq], lock: Lock, data: DocumentData
) -> Iterator[EntryRender]:
    """Each entry of `todo` rendered, in order: here, or, past POOL_THRESHOLD on a machine
    with more than one core, by one worker process per core.

    A worker gets the site without its entries (settings, config, groups) once, then
    chunks of entries, each with its parsed models, its lock entry and its known content
    hash, and sends back their pieces: never the whole site, and it is spawned (a fresh
    interpreter), not forked, so it holds no copy of this process's heap (issue 11
    measured +300 MB for forked workers). The pieces are those this process would
    render (the same functions): the output is the same bytes either way, and a
    failure is the same error, raised here in publication order. Ctrl-C interrupts
    this process only (workers ignore SIGINT): the chunks not started are cancelled and
    the workers finish theirs and exit before the interrupt goes on; a build ended
    otherwise (SIGTERM) takes its workers with it (`_end_with`)."""
    workers = _cores()
    if renders_here(len(todo)):
        tokenizer = search_tokenizer()
        yield from (_render(site, loaded, lock, data, tokenizer) for loaded in todo)
        return
    # Imported here, as in `_start_worker`: ~20 ms of start-up that a small site or a
    # cached edit never uses.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    alone = replace(site, documents=(), faqs=(), cache=EntryCache.disabled(), api_paths={})
    chunks = [
        [(loaded, lock[loaded.id], _known_hash(data, loaded)) for loaded in todo[at : at + _CHUNK]]
        for at in range(0, len(todo), _CHUNK)
    ]
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, spawn, initializer=_start_worker, initargs=(alone,)) as pool:
        try:
            # Submitting starts the workers, which would take Ctrl-C while they import
            # the builder (before `_start_worker` ignores it): they start with SIGINT
            # blocked, as multiprocessing's resource tracker does.
            with _interrupts_held():
                results = pool.map(_render_chunk, chunks)
            done = 0
            try:
                for rendered in results:
                    done += 1
                    yield from (r._replace(terms=interned(r.terms)) for r in rendered)
            except BrokenProcessPool:
                # A worker ended without answering (killed, out of memory): the entries
                # it and the others had not sent back are rendered here, as a small
                # site's are, rather than the build ending in a traceback.
                tokenizer = search_tokenizer()
                for chunk in chunks[done:]:
                    yield from (
                        _render(site, loaded, lock, data, tokenizer) for loaded, _, _ in chunk
                    )
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def renders_here(count: int) -> bool:
    """Whether `count` entries to render are rendered in this process, not by a pool."""
    return count < POOL_THRESHOLD or _cores() < 2


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT held back from this thread, and from the processes it starts, meanwhile
    (a Ctrl-C then is delivered here at the end)."""
    if not hasattr(signal, "pthread_sigmask"):  # not on POSIX: `_start_worker` alone
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may run on
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _known_hash(data: DocumentData, loaded: LoadedDocument | LoadedFaq) -> str | None:
    return data.known_content_hash(loaded) if isinstance(loaded, LoadedDocument) else None


#: A worker process's site and tokenizer (`_start_worker`): the process lives for one
#: build's pool, and so do they.
_worker: tuple[Site, Tokenizer] | None = None


def _start_worker(site: Site) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A build ended without shutting its pool down (SIGTERM, a crash) would leave its
    # workers waiting for work forever: each ends when its parent does.
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    _worker = (site, search_tokenizer())


def _end_with(parent: BaseProcess) -> None:
    parent.join()  # returns once the parent process is gone
    os._exit(1)


def _render_chunk(
    chunk: list[tuple[LoadedDocument | LoadedFaq, LockEntry, str | None]],
) -> list[EntryRender]:
    assert _worker is not None
    site, tokenizer = _worker
    rendered = []
    for loaded, dated, content_hash in chunk:
        data = DocumentData(site)
        if content_hash is not None:
            data.content_hash_known(loaded, content_hash)  # type: ignore[arg-type]
        rendered.append(_render(site, loaded, {loaded.id: dated}, data, tokenizer))
    return rendered


def _render(
    site: Site,
    loaded: LoadedDocument | LoadedFaq,
    lock: Lock,
    data: DocumentData,
    tokenizer: Tokenizer,
) -> EntryRender:
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
