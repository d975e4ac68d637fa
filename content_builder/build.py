"""The build as a pipeline of named steps: load -> date -> render -> check -> write.

Pure up to `write`: `plan` turns site_data into artifacts without touching the disk,
so `check`, `serve`, the Pulumi program and the tests all share it.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.endpoints import ENDPOINT, SINGLE_FILES
from agent_contract.routes import rule_for
from content_builder import early as early_files
from content_builder import proven
from content_builder.budgets import check_budgets
from content_builder.early import EarlyFiles
from content_builder.errors import Problem, SiteDataError
from content_builder.halves import MINIMUM_ITEMS, Ahead, Spare, spare_process
from content_builder.loader import (
    CONTENT_DIR,
    FAQ_DIR,
    LOCK_FILE,
    Site,
    display_path,
    load_site,
)
from content_builder.lock import (
    History,
    Lock,
    LockChange,
    LockFile,
    MergedLock,
    advance,
    lock_body,
    resolve,
)
from content_builder.render.catalog import JOINED, Catalog, entry_file
from content_builder.render.documents import DocumentData, tracked
from content_builder.render.endpoints import RENDERERS, RenderContext, markdown_mirrors
from content_builder.render.entries import EntryFileSink, build_catalog, lock_stamp
from content_builder.render.indexes import KeywordChoice, fresh_keyword_choice, keyword_work
from content_builder.validate import (
    ReadAhead,
    body_links,
    check_artifacts,
    check_authored_links,
    read_ahead,
)
from content_builder.writer import FileReport, staged_file, write_output


@dataclass(frozen=True)
class Plan:
    site: Site
    artifacts: list[Artifact]
    lock: Lock
    lock_changes: list[LockChange]
    history: History = field(default_factory=History)  # the change feed's generation


def render(site: Site, lock: Lock, mcp_endpoint: str | None = None) -> list[Artifact]:
    """Every published file, leaves first, entry points last."""
    return render_catalog(site, build_catalog(site, lock), mcp_endpoint)


SEARCH_INDEX = "search_index"  # the endpoint table's key of the largest aggregate


def render_catalog(
    site: Site,
    catalog: Catalog,
    mcp_endpoint: str | None = None,
    meanwhile: Callable[[list[Artifact], frozenset[str]], None] | None = None,
    waiting: Callable[[list[Artifact], Callable[[], bool]], None] | None = None,
    spare: Spare | None = None,
) -> list[Artifact]:
    """One file per document and FAQ entry, then one per single-file row of the endpoint
    table, by publish tier: leaves first, entry points last.

    The search index's keywords (a byte budget over every entry: 0.85 s of the 1.4 s of
    aggregates at 10,000 entries) are chosen meanwhile by `spare` (content_builder/halves.py),
    when given one and this build rendered many entries; errors are raised in the order
    of a plain loop: an aggregate after the search index that fails waits for it, which
    raises first if it fails. Then, before waiting for the spare, `meanwhile` is given the
    files other than the entries' own and the search index, and the paths of all the
    files (it must not raise); then `waiting` is given every file but the search index
    and a function that says whether the spare still works (it must not raise: what it
    does until then costs no time)."""
    brand = site.config.brand
    single = sorted(SINGLE_FILES, key=lambda endpoint: rule_for(endpoint.resolve(brand)).tier)
    # Worth it when the entries' terms are new: the keyword choice of a cached build
    # reuses the last one (0.1 s at 10,000 entries), less than the hand-over and the wait.
    keywords: Ahead[KeywordChoice] | None = None
    if spare is not None and catalog.rendered_now >= MINIMUM_ITEMS:
        # Before any aggregate renders: keyword_work only gathers what the entries hold
        # (it raises nothing a plain loop would raise later, in another order).
        keywords = spare.give(fresh_keyword_choice, *keyword_work(site, catalog))
    context = RenderContext(site, catalog, mcp_endpoint, keywords)

    def search_index() -> bytes:
        return RENDERERS[SEARCH_INDEX].body(context)

    leaves = [
        *(
            entry_file(paths.document(entry.id), entry.json, entry.json_sha256, loaded.file)
            for loaded, entry in zip(site.documents, catalog.documents, strict=True)
        ),
        *(
            entry_file(paths.faq(entry.id), entry.json, entry.json_sha256, loaded.file)
            for loaded, entry in zip(site.faqs, catalog.faqs, strict=True)
        ),
        *markdown_mirrors(site, catalog),
    ]
    bodies: dict[str, bytes] = {}
    for position, endpoint in enumerate(single):
        if endpoint.key == SEARCH_INDEX:
            continue
        try:
            bodies[endpoint.key] = RENDERERS[endpoint.key].body(context)
        except BaseException:
            if any(earlier.key == SEARCH_INDEX for earlier in single[:position]):
                try:
                    search_index()  # a plain loop rendered it first: its error first
                except BaseException as first:
                    first.__suppress_context__ = True
                    raise
            raise
    if any(endpoint.key == SEARCH_INDEX for endpoint in single):
        if keywords is not None and meanwhile is not None:
            meanwhile(
                [
                    *leaves[2 * len(catalog.entries) :],
                    *(
                        Artifact(endpoint.resolve(brand), bodies[endpoint.key])
                        for endpoint in single
                        if endpoint.key in bodies
                    ),
                ],
                frozenset(
                    [
                        *(artifact.path for artifact in leaves),
                        *(endpoint.resolve(brand) for endpoint in single),
                    ]
                ),
            )
        if keywords is not None and waiting is not None:
            waiting(
                [
                    *leaves,
                    *(
                        Artifact(endpoint.resolve(brand), bodies[endpoint.key])
                        for endpoint in single
                        if endpoint.key in bodies
                    ),
                ],
                keywords.running,
            )
        bodies[SEARCH_INDEX] = search_index()
    return [
        *leaves,
        *(
            Artifact(
                endpoint.resolve(brand), bodies[endpoint.key], RENDERERS[endpoint.key].source(site)
            )
            for endpoint in single
        ),
    ]


def known_links(
    site: Site,
    catalog: Catalog,
    artifacts: list[Artifact],
    settled: list[bool] | None = None,
    proven_files: frozenset[str] = frozenset(),
) -> dict[str, list[tuple[str, str]]]:
    """The links still to check, by published path: those of every entry's own files and
    of the aggregates joined from its pieces, found when the entry was rendered (and kept by
    the build cache with it), so a build does not scan 110 MB of aggregates for links at
    10,000 entries; none for a settled entry (`settled`, one flag per entry) or a file whose
    sha256 is in `proven_files` (content_builder/proven.py). Files not named here are
    scanned."""
    settled = settled or [False] * len(catalog.entries)
    unsettled = [entry for entry, done in zip(catalog.entries, settled, strict=True) if not done]
    found: dict[str, list[tuple[str, str]]] = (
        {artifact.path: [] for artifact in artifacts if artifact.sha256 in proven_files}
        if proven_files  # without, no file is hashed here
        else {}
    )
    nothing = RenderContext(site, Catalog((), (), catalog.lock, catalog.history), None)
    for key, piece in JOINED.items():
        path = ENDPOINT[key].resolve(site.config.brand)
        if path in found:
            continue
        around = body_links(site, RENDERERS[key].body(nothing))  # the text around the pieces
        found[path] = around + [link for entry in unsettled for link in entry.links.pieces[piece]]
    documents = len(catalog.documents)
    for entry, done in zip(catalog.documents, settled[:documents], strict=True):
        found[paths.document(entry.id)] = [] if done else entry.links.json
        found[paths.document_markdown(entry.id)] = [] if done else entry.links.markdown
    for entry, done in zip(catalog.faqs, settled[documents:], strict=True):
        found[paths.faq(entry.id)] = [] if done else entry.links.json
        found[paths.faq_markdown(entry.id)] = [] if done else entry.links.markdown
    return found


def stale_lock_error(site: Site, changes: list[LockChange]) -> SiteDataError:
    lock_file = display_path(site.root / LOCK_FILE)
    return SiteDataError(
        [
            Problem(
                change.file or lock_file,
                None,
                f"{change.reason} since {LOCK_FILE} was written (id {change.id!r}); run "
                f"`python -m content_builder build` and commit {lock_file}",
            )
            for change in changes
        ]
    )


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the length of a build.

    A build allocates millions of objects that live until it ends (parsed YAML, models,
    artifacts) and makes almost no reference cycles, so every collection the allocation
    count triggers walks a growing heap to free nothing: 8-10 s of a 65 s build at
    10,000 entries (docs/decisions.md). Reference counting still frees everything else.

    After a build that succeeded, what is alive is frozen (`gc.freeze`) before the
    collector is turned back on: every object allocated meanwhile still counts as young,
    so the first collection would walk them all to free nothing (0.2-0.4 s at 10,000
    entries). Frozen objects are still freed by reference counting; only a reference
    cycle already dead at that moment is kept, and `serve --watch` unfreezes after each
    rebuild so that the collector sees its old builds again.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    except BaseException:
        if was_enabled:
            gc.enable()
        raise
    if was_enabled:
        gc.freeze()
        gc.enable()


def plan(
    site_dir: Path,
    base_url: str | None = None,
    frozen: bool = False,
    mcp_endpoint: str | None = None,  # a live MCP server's URL, named by the discovery doc
    rendered: Callable[[list[Artifact]], None] | None = None,  # told the files, before checks
    # Told the files but the search index while the spare chooses its keywords, and whether
    # it still does.
    waiting: Callable[[list[Artifact], Callable[[], bool]], None] | None = None,
    sink: EntryFileSink | None = None,  # given each entry's own files as it is rendered
) -> Plan:
    worth_a_spare = _holds_entry_files(site_dir, MINIMUM_ITEMS)
    with collector_paused(), spare_process(worth_a_spare) as spare:
        return _plan(site_dir, base_url, frozen, mcp_endpoint, rendered, waiting, spare, sink)


def _holds_entry_files(site_dir: Path, at_least: int) -> bool:
    """Whether the content and FAQ folders hold `at_least` files (the site's entries, at
    most), counted up to that number only: a listing of 20,000 names costs ~8 ms, which
    a build after one edit does not pay."""
    count = 0
    for folder in (CONTENT_DIR, FAQ_DIR):
        try:
            with os.scandir(site_dir / folder) as found:
                for _ in found:
                    count += 1
                    if count >= at_least:
                        return True
        except OSError:  # no such folder: the loader says what is wrong, if anything
            pass
    return count >= at_least


def _plan(
    site_dir: Path,
    base_url: str | None,
    frozen: bool,
    mcp_endpoint: str | None,
    rendered: Callable[[list[Artifact]], None] | None = None,
    waiting: Callable[[list[Artifact], Callable[[], bool]], None] | None = None,
    spare: Spare | None = None,  # a process forked before the site is loaded (halves.py)
    sink: EntryFileSink | None = None,
) -> Plan:
    site = load_site(site_dir, base_url)
    lock_display = display_path(site.root / LOCK_FILE)
    lock_file = LockFile(site.root / LOCK_FILE, lock_display, site.cache)
    old_lock = lock_file.lock()
    data = DocumentData(site)  # what the lock renders, the catalog does not render again
    lock, changes = resolve(old_lock, tracked(site, data))
    if isinstance(old_lock, MergedLock):
        reason = "merge conflict in the lock merged (the newest version of each entry kept)"
        changes = [LockChange("*", lock_display, reason), *changes]
    if frozen and changes:
        raise stale_lock_error(site, changes)
    old_history = lock_file.history()
    history = advance(old_history, changes)
    lock_file.remember(old_lock, old_history, lock if changes else None, history)
    catalog = build_catalog(site, lock, history, data, sink)
    del data
    ahead: list[ReadAhead] = []

    def read_while_waiting(others: list[Artifact], published: frozenset[str]) -> None:
        # The links and JSON the checks read of these files, and the coverage of the
        # published paths, found while the search index renders in a child (0.3 s of a
        # cold 10,000-entry build's critical path).
        joined = {ENDPOINT[key].resolve(site.config.brand) for key in JOINED}
        ahead.append(read_ahead(site, others, joined, published))

    artifacts = render_catalog(site, catalog, mcp_endpoint, read_while_waiting, waiting, spare)
    if rendered is not None:  # build() starts writing them while the checks run
        rendered(artifacts)
    _check(site, catalog, artifacts, ahead[0] if ahead else None)
    del catalog
    check_budgets(artifacts)
    site.cache.save()  # after every check: a failed build teaches the cache nothing
    return Plan(site, artifacts, lock, changes, history)


def _check(
    site: Site, catalog: Catalog, artifacts: list[Artifact], ahead: ReadAhead | None = None
) -> None:
    """The cross-checks (validate.py), of what the last build that passed did not prove
    already (content_builder/proven.py); what this one proves is recorded for the next."""
    by_path = {artifact.path: artifact for artifact in artifacts}
    published = frozenset(by_path)
    before = proven.recalled(site.cache, published)
    identities = [
        proven.entry_identity(loaded.cache_key, lock_stamp(catalog.lock[loaded.id]))
        if loaded.cache_key
        else None
        for loaded in (*site.documents, *site.faqs)
    ]
    settled = proven.settled(before, identities)
    if catalog.links_resolved and catalog.resolved_in <= published:
        # The links of an entry this build rendered that named only paths of
        # `resolved_in` resolve, now that all of them are published (links.resolves asks
        # for membership, or for a template, one member): as for a proven entry.
        settled = [a or b for a, b in zip(settled, catalog.links_resolved, strict=True)]
    coverage = (
        by_path[paths.discovery(site.config.brand)].sha256,
        by_path[paths.OPENAPI].sha256,
    )
    check_authored_links(site, catalog, published, settled)
    found = known_links(site, catalog, artifacts, settled, before.files if before else frozenset())
    check_artifacts(
        site,
        artifacts,
        found,
        coverage_proven=before is not None and before.coverage_holds(published, coverage),
        ahead=ahead,
    )
    # render_catalog puts each entry's two files first; the rest are named by their bytes.
    others = artifacts[2 * len(catalog.entries) :]
    proven.record(site.cache, published, identities, others, coverage)


def build(
    site_dir: Path,
    out_dir: Path,
    base_url: str | None = None,
    frozen: bool = False,
    mcp_endpoint: str | None = None,
) -> tuple[Plan, list[FileReport]]:
    early: list[EarlyFiles] = []  # the files, written while the checks run
    sink: EntryFileSink | None = None
    files = EarlyFiles.begin(out_dir)  # None: an output to reuse files from
    if files is not None and _holds_entry_files(site_dir, early_files.MINIMUM_ENTRY_FILES):
        # A first build of a large site: each entry's files written by the process that
        # renders it (content_builder/early.py EntryFiles), from memory it owns anyway. A
        # child forked later to write them shared the build's full heap while the checks
        # ran, and each page they read was copied (~+300 MB at 10,000 entries).
        early.append(files)  # discarded below if the build fails
        sink = files.entry_files()

    def write_while_waiting(artifacts: list[Artifact], busy: Callable[[], bool]) -> None:
        # This process has nothing else to do until the spare has chosen the search
        # index's keywords: the files it writes there, the writer or an early child need not.
        if not early:
            files = EarlyFiles.begin(out_dir)
            if files is None:
                return
            early.append(files)  # discarded below if the build fails
        early[0].write_while(artifacts, busy)

    def start_early(artifacts: list[Artifact]) -> None:
        if early:  # some written already: the rest in a child, if enough are left
            early[0].finish(artifacts)
            return
        started = EarlyFiles.start(artifacts, out_dir)
        if started is not None:
            early.append(started)

    new_lock: Path | None = None
    try:
        result = plan(
            site_dir, base_url, frozen, mcp_endpoint, start_early, write_while_waiting, sink
        )
        if result.lock_changes:
            # Written beside the lock first, put in place after the output: a lock that
            # cannot be written (a full disk) fails the build before the output changes,
            # and an output that cannot be written leaves the lock as it was.
            body = lock_body(result.lock, result.history)
            new_lock = staged_file(result.site.root / LOCK_FILE, body)
        with collector_paused():
            report = write_output(
                result.artifacts, out_dir, result.site.base_url, early[0] if early else None
            )
    except BaseException:
        for files in early:  # a failed build: the staging folder goes, the output stays
            files.discard()
        if new_lock is not None:
            new_lock.unlink(missing_ok=True)
        raise
    if new_lock is not None:
        os.replace(new_lock, result.site.root / LOCK_FILE)
    return result, report
