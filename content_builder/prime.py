"""Many new YAML entries parsed, hashed, dated and rendered by a pool of worker processes
into the build cache, before the build loads them: it then finds each where it finds an
unchanged entry's, and parses and renders none of them itself. This is the cold build
of a large site; an edit, or a site under POOL_THRESHOLD new entries, never starts it.

A worker does for one entry what the build does for it, with the same functions: parse
and validate it (loader.py), make its source hash (render/documents.py `tracked`), date
it against the lock the build read (lock.py `dated_row`, with the build's one change
stamp) and render its pieces (render/entries.py). The pieces are kept only under the
stamp they were dated with, so if the build dates an entry otherwise after all, it
renders it again itself. An entry a worker cannot parse cleanly is left to the build,
which reports its problems in its own order: the errors are the build's, the output the
same bytes either way.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_contract.search_terms import Tokenizer
from content_builder.cache import EntryCache
from content_builder.errors import BuildStopped, Problem, SiteDataError
from content_builder.loaded import LoadedDocument, LoadedFaq, Site
from content_builder.loader import (
    Listed,
    SiteFiles,
    document_record,
    faq_record,
    loaded_document,
    loaded_faq,
    parse_document,
    parse_faq,
)
from content_builder.lock import ChangeStamp, Lock, LockFile, Row, dated_row
from content_builder.render.catalog import TERMS_AT, EntryTerms
from content_builder.render.documents import DocumentData, tracked
from content_builder.render.entries import lock_stamp, render_entry
from content_builder.render.indexes import search_tokenizer, with_words_of
from content_builder.tokens import Authoring

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess
    from multiprocessing.queues import Queue

#: Below this many new files, the build parses and renders them itself (~0.95 ms an
#: entry): two spawned workers cost ~0.8 s to start, and the results ~0.15 ms an entry
#: to take back. Measured on 2 shared cores (docs/decisions.md, issue 22, session 25).
POOL_THRESHOLD = 8000
#: At most this many workers: each costs ~0.5 s of CPU and ~100 MB to start, and the
#: parent takes every result back and then joins the aggregates alone. Measured on two
#: cores only; more cores would gain less and less (docs/decisions.md, session 25).
MAX_WORKERS = 4
#: Files sent to a worker at a time: few enough that Ctrl-C waits for little (each
#: worker finishes the chunk it holds), many enough that the pipes' overhead is small.
_CHUNK = 100


def prime(
    files: SiteFiles,
    lock_file: LockFile,
    stamp: ChangeStamp,
    stop: threading.Event | None = None,
) -> int:
    """The new YAML entries of `files` rendered into its cache by a pool, when there are
    POOL_THRESHOLD of them or more and more than one core; how many were. `stop` set
    (by another thread: `serve --watch` shutting down) ends it at the next chunk with
    BuildStopped, the chunks not started cancelled: at Python's exit concurrent.futures
    would otherwise run every queued chunk first (~10 s at 10,000 entries)."""
    todo = [
        (kind, listed)
        for kind, folder in (("document", files.content), ("faq", files.faqs))
        for listed in folder.files
        if listed.data is not None
    ]
    if not todo or len(todo) < POOL_THRESHOLD or _cores() < 2:
        return 0
    try:
        old = Lock.of(lock_file.lock()).rows
    except SiteDataError:
        return 0  # the build reports the lock's problem where it reads it
    # What rendering one YAML entry reads of its site: the settings, not the other files.
    alone = Site(
        root=files.root,
        base_url=files.base_url,
        config=files.config,
        documents=(),
        faqs=(),
        architecture=None,
        on_site_agent=None,
        architecture_file=None,
        on_site_agent_file=None,
    )
    try:
        now = stamp()
    except (ValueError, OverflowError, OSError):
        # SOURCE_DATE_EPOCH out of range: an error only if an entry changed, which the
        # build finds out and reports itself (lock.py reads the stamp at the first change).
        return 0
    context = _Context(alone, files.authoring, old, now)
    files.cache.hold_for_this_build()  # a cache that is off holds these until the build ends
    chunks = [todo[at : at + _CHUNK] for at in range(0, len(todo), _CHUNK)]
    primed = 0
    words: dict[str, str] = {}  # one string per word, for all the workers' entries
    # Closed on the way out, whatever ends the loop: `_in_pool` then shuts the pool down
    # with the chunks not started cancelled.
    with contextlib.closing(_in_pool(context, chunks)) as results:
        for records in results:
            if stop is not None and stop.is_set():
                raise BuildStopped
            for record in records:
                if record is not None:
                    _keep(files.cache, record, words)
                    primed += 1
    return primed


@dataclass(frozen=True)
class _Context:
    """What a worker renders with: the site without its entries (settings, config), the
    authoring rules, the lock's rows as read, and this build's change stamp."""

    site: Site
    authoring: Authoring
    old: dict[str, Row]
    stamp: str


#: What a worker sends back for a clean entry: (cache key, its loader record, its
#: source hash, the lock stamp its pieces were rendered under, the pieces to keep).
_Record = tuple[str, tuple[Any, ...], str, tuple[str, str], tuple[Any, ...]]


def _keep(cache: EntryCache, record: _Record, words: dict[str, str]) -> None:
    """A worker's record put in the cache where the build looks for an entry it knows,
    each word of its terms made the vocabulary's one string of it."""
    key, loaded, source_hash, dated, rendered = record
    terms = tuple(with_words_of(words, EntryTerms._make(rendered[TERMS_AT])))
    rendered = (*rendered[:TERMS_AT], terms, *rendered[TERMS_AT + 1 :])
    cache.put(key, "loaded", loaded)
    cache.put(key, "source_hash", source_hash)
    cache.put(key, "stamp", dated)
    cache.put(key, "rendered", rendered)


def _in_pool(
    context: _Context, chunks: list[list[Any]]
) -> Generator[list[_Record | None], None, None]:
    """Each chunk's records, in order, from one spawned worker per core (no more workers
    than chunks: each takes one copy of the context from the queue). A worker is spawned
    (a fresh interpreter), not forked: it holds no copy of this process's heap. Ctrl-C
    interrupts this process only (workers ignore SIGINT): the chunks not started are
    cancelled and the workers finish theirs and exit before the interrupt goes on; a
    build ended otherwise (SIGTERM) takes its workers with it (`_end_with`). A worker
    that dies (killed, out of memory) leaves the chunks not answered to the build, and a
    pool that cannot start (a process limit, no semaphores) leaves it every chunk."""
    # Imported here: ~20 ms of start-up that a small site or an edit never uses.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    spawn = multiprocessing.get_context("spawn")
    workers = min(_cores(), MAX_WORKERS, len(chunks))
    try:
        # What a worker renders with (the lock's rows: ~1 MB at 8,000 entries) reaches it
        # through a queue, not with its start-up arguments: on Python 3.11 a worker that
        # dies before it has read all of those (killed, crashed at import) leaves this
        # process waiting forever to write the rest, once they are more than a pipe
        # holds, 64 KiB (CPython gh-118981).
        contexts = spawn.Queue()
        pool = ProcessPoolExecutor(workers, spawn, initializer=_start_worker, initargs=(contexts,))
    except (OSError, NotImplementedError):  # no working semaphores (`_check_system_limits`)
        return
    contexts.cancel_join_thread()  # the copy of a worker that died is not waited for
    pickled = pickle.dumps(context)  # here: a failure raised here, not in the queue's thread
    for _ in range(workers):
        contexts.put(pickled)
    with pool:
        try:
            # Submitting starts the workers, which would take Ctrl-C while they import
            # the builder (before `_start_worker` ignores it): they start with SIGINT
            # blocked, as multiprocessing's resource tracker does.
            with _interrupts_held():
                try:
                    results = pool.map(_prime_chunk, chunks)
                except OSError:  # a worker could not be started (EAGAIN, ENOMEM)
                    pool.shutdown(cancel_futures=True)
                    return
            with contextlib.suppress(BrokenProcessPool):
                yield from results
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


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


#: A worker process's context and tokenizer (`_start_worker`): the process lives for one
#: build's pool, and so do they.
_worker: tuple[_Context, Tokenizer] | None = None


def _start_worker(contexts: Queue[bytes]) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A build ended without shutting its pool down (SIGTERM, a crash) would leave its
    # workers waiting for work forever: each ends when its parent does.
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    _worker = (pickle.loads(contexts.get()), search_tokenizer())


def _end_with(parent: BaseProcess) -> None:
    parent.join()  # returns once the parent process is gone
    os._exit(1)


def _prime_chunk(chunk: list[tuple[str, Listed]]) -> list[_Record | None]:
    assert _worker is not None
    context, tokenizer = _worker
    return [_prime_one(context, tokenizer, kind, listed) for kind, listed in chunk]


def _prime_one(
    context: _Context, tokenizer: Tokenizer, kind: str, listed: Listed
) -> _Record | None:
    problems: list[Problem] = []
    path, display, key = Path(listed.path), listed.display, listed.key
    loaded: LoadedDocument | LoadedFaq
    if kind == "document":
        parse = partial(parse_document, context.authoring)
        document = parse(path, listed.data, problems, display)
        if document is None or problems:
            return None
        record: tuple[Any, ...] = document_record(document)
        loaded = loaded_document(parse, listed, document, record)
        site = replace(context.site, documents=(loaded,))
    else:
        parse = partial(parse_faq, context.authoring)
        faq = parse(path, listed.data, problems, display)
        if faq is None or problems:
            return None
        record = faq_record(faq)
        loaded = loaded_faq(parse, listed, faq, record)
        site = replace(context.site, faqs=(loaded,))
    data = DocumentData(site)  # made once, for the source hash and the rendering
    try:
        source_hash = tracked(site, data).source_hashes[0]
        pinned = loaded.version if isinstance(loaded, LoadedDocument) else None
        stamp = ChangeStamp(context.stamp)
        row, _ = dated_row(context.old.get(loaded.id), source_hash, pinned, stamp)
        lock = Lock({loaded.id: row})
        rendered = render_entry(site, loaded, lock, data, tokenizer)
    except SiteDataError:
        return None  # the build renders it again, and reports the same problem there
    return (key, record, source_hash, lock_stamp(lock[loaded.id]), rendered.to_keep())
