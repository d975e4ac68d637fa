"""The build, top to bottom: list -> (prime) -> load -> date -> render -> check -> write.

    list    site.yaml read, the build cache opened, each YAML file read once and keyed
            by its bytes, or known to the cache by its stat (loader.py `list_site`)
    prime   only when thousands of entries are new (a cold build of a large site): a
            process pool parses, dates and renders them into the cache (prime.py)
    load    the files -> Site (loader.py `load_files`), each parsed only when the build
            cache does not know its bytes
    date    the lock: which entries changed, their updated_at and version (lock.py)
    render  each entry taken from the cache or rendered into its pieces, then the
            aggregates joined from the pieces (render/)
    check   every link, enum and coverage rule, skipping what the last passing
            build proved (validate.py, cache.py `Proven`), and the size budgets
    write   the files staged beside the output and swapped in at once (writer.py)

Pure up to `write`: `plan` turns site_data into artifacts without touching the output,
so `check`, `serve`, the MCP server, the Pulumi program and the tests all share it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.endpoints import ENDPOINT, SINGLE_FILES
from agent_contract.routes import rule_for
from content_builder.budgets import check_budgets
from content_builder.cache import entry_identity
from content_builder.errors import Problem, SiteDataError
from content_builder.loaded import Site, display_path
from content_builder.loader import (
    LOCK_FILE,
    list_site,
    load_files,
    load_site_config,
    settle_racy_reads,
)
from content_builder.lock import (
    ChangeStamp,
    History,
    Lock,
    LockChange,
    LockFile,
    MergedLock,
    advance,
    lock_body,
    resolve,
)
from content_builder.prime import prime
from content_builder.render.catalog import JOINED, Catalog, EntryLinks, entry_file
from content_builder.render.documents import DocumentData, tracked
from content_builder.render.endpoints import (
    RENDERERS,
    RenderContext,
    markdown_mirrors,
    search_shard_files,
)
from content_builder.render.entries import build_catalog, lock_stamp
from content_builder.validate import body_links, check_artifacts, check_authored_links
from content_builder.writer import ChangeReport, staged_file, write_output


@dataclass(frozen=True)
class Plan:
    site: Site
    artifacts: list[Artifact]
    lock: Lock
    lock_changes: list[LockChange]
    history: History = field(default_factory=History)  # the change feed's generation
    lock_body: bytes | None = None  # the lock file to write, when it changed


def plan(
    site_dir: Path,
    base_url: str | None = None,
    frozen: bool = False,
    mcp_endpoint: str | None = None,  # a live MCP server's URL, named by the discovery doc
    last: Plan | None = None,  # the previous build of a series (`serve --watch`)
    stop: threading.Event | None = None,  # set by another thread: BuildStopped (prime.py)
) -> Plan:
    """Every file the site publishes, checked, in memory."""
    files = list_site(site_dir, base_url, last.site.cache if last is not None else None)
    lock_file = LockFile(site_dir / LOCK_FILE, display_path(site_dir / LOCK_FILE), files.cache)
    stamp = ChangeStamp()  # the time of every change this build dates
    if prime(files, lock_file, stamp, stop):
        settle_racy_reads(files)  # the pool took longer than the racy window
    site = load_files(files)
    del files  # the bytes of the files it listed, parsed now
    data = DocumentData(site)  # the documents the lock renders, not rendered again
    lock, changes, history, body = date(site, data, frozen, lock_file, stamp)
    catalog = build_catalog(site, lock, history, data)
    del data
    artifacts = render(site, catalog, mcp_endpoint)
    check(site, catalog, artifacts)
    oversized = check_budgets(artifacts)
    if oversized:
        site = replace(site, warnings=(*site.warnings, *oversized))
    site.cache.save()  # after every check: a failed build teaches the cache nothing
    return Plan(site, artifacts, lock, changes, history, body)


def date(
    site: Site, data: DocumentData, frozen: bool, lock_file: LockFile, stamp: ChangeStamp
) -> tuple[Lock, list[LockChange], History, bytes | None]:
    """The lock this build publishes by: each entry's updated_at and content_version moved
    forward only where its content changed (`--frozen`: a change is an error), and the
    lock file's new bytes when it changed."""
    old_lock = lock_file.lock()
    lock, changes = resolve(old_lock, tracked(site, data), stamp)
    if isinstance(old_lock, MergedLock):
        reason = "merge conflict in the lock merged (the newest version of each entry kept)"
        changes = [LockChange("*", lock_file.display, reason), *changes]
    if frozen and changes:
        raise stale_lock_error(site, changes)
    old_history = lock_file.history()
    history = advance(old_history, changes)
    body = lock_file.body(lock, history, changes) if changes else None
    lock_file.remember(old_lock, old_history, lock if changes else None, history, body)
    return lock, changes, history, body


def render(site: Site, catalog: Catalog, mcp_endpoint: str | None = None) -> list[Artifact]:
    """Every published file: each entry's own files, then one per single-file row of the
    endpoint table, by publish tier (leaves first, entry points last)."""
    brand = site.config.brand
    context = RenderContext(site, catalog, mcp_endpoint)
    entries = [
        *(
            entry_file(
                paths.document(entry.id), entry.json, entry.json_sha256, loaded.file, site.cache
            )
            for loaded, entry in zip(site.documents, catalog.documents, strict=True)
        ),
        *(
            entry_file(paths.faq(entry.id), entry.json, entry.json_sha256, loaded.file, site.cache)
            for loaded, entry in zip(site.faqs, catalog.faqs, strict=True)
        ),
        *markdown_mirrors(site, catalog),
        *search_shard_files(site, catalog),
    ]
    single = sorted(SINGLE_FILES, key=lambda endpoint: rule_for(endpoint.resolve(brand)).tier)
    return [
        *entries,
        *(
            Artifact(
                endpoint.resolve(brand),
                RENDERERS[endpoint.key].body(context),
                RENDERERS[endpoint.key].source(site),
            )
            for endpoint in single
        ),
    ]


_SHARDS = paths.SEARCH_SHARD_TEMPLATE.split("{", 1)[0]


def check(site: Site, catalog: Catalog, artifacts: list[Artifact]) -> None:
    """The cross-checks (validate.py), of what the last build that passed did not prove
    already (cache.py `Proven`); what this one proves is recorded for the next."""
    by_path = {artifact.path: artifact for artifact in artifacts}
    published = frozenset(by_path)
    # Search shards are named by their bytes: an edit replaces a few, and a proof keyed by
    # them would lapse at every edit (every link checked again). Nothing links one shard
    # by name but the term map, which is checked whenever its bytes change.
    proof_paths = frozenset(p for p in published if not p.startswith(_SHARDS))
    before = site.cache.proven(proof_paths)
    identities = [
        entry_identity(loaded.cache_key, lock_stamp(catalog.lock[loaded.id]))
        if loaded.cache_key
        else None
        for loaded in (*site.documents, *site.faqs)
    ]
    settled = before.settled(identities) if before else [False] * len(identities)
    coverage = (
        by_path[paths.discovery(site.config.brand)].sha256,
        by_path[paths.OPENAPI].sha256,
    )
    # Unpacked once each (EntryLinks), only those of entries whose links are not proven.
    links = catalog.links(settled)
    check_authored_links(site, catalog, published, links)
    found = known_links(site, catalog, artifacts, links, before.files if before else frozenset())
    check_artifacts(
        site,
        artifacts,
        found,
        coverage_proven=before is not None and before.coverage_holds(proof_paths, coverage),
    )
    # render() puts each entry's two files first; the rest are named by their bytes.
    others = artifacts[2 * len(catalog.entries) :]
    site.cache.record_proof(proof_paths, identities, others, coverage)


def known_links(
    site: Site,
    catalog: Catalog,
    artifacts: list[Artifact],
    links: list[EntryLinks | None] | None = None,  # per entry (`Catalog.links`; none: all)
    proven_files: frozenset[str] = frozenset(),
) -> dict[str, Sequence[tuple[str, str]]]:
    """The links still to check, by published path: those of every entry's own files and
    of the aggregates joined from its pieces, found when the entry was rendered (and kept by
    the build cache with it), so a build does not scan 110 MB of aggregates for links at
    10,000 entries; none for a settled entry or a file whose sha256 is in `proven_files`.
    Files not named here are scanned."""
    if links is None:
        links = catalog.links()
    unsettled = [found for found in links if found is not None]
    found: dict[str, Sequence[tuple[str, str]]] = (
        {artifact.path: () for artifact in artifacts if artifact.sha256 in proven_files}
        if proven_files  # without, no file is hashed here
        else {}
    )
    nothing = RenderContext(site, Catalog((), (), catalog.lock, catalog.history), None)
    for key, piece in JOINED.items():
        path = ENDPOINT[key].resolve(site.config.brand)
        if path in found:
            continue
        around = body_links(site, RENDERERS[key].body(nothing))  # the text around the pieces
        found[path] = around + [link for entry in unsettled for link in entry.pieces[piece]]
    entry_paths = [
        *((paths.document(e.id), paths.document_markdown(e.id)) for e in catalog.documents),
        *((paths.faq(e.id), paths.faq_markdown(e.id)) for e in catalog.faqs),
    ]
    for (json_path, markdown_path), entry_links in zip(entry_paths, links, strict=True):
        # A settled entry's files: no link left to check (one shared empty tuple each).
        found[json_path] = () if entry_links is None else entry_links.json
        found[markdown_path] = () if entry_links is None else entry_links.markdown
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


def discovery_path(site_dir: Path) -> str:
    """The site's discovery document path (site.yaml's brand), for a party that names it
    before any build runs: the Pulumi program's response headers policy (every answer's
    Link). A bad site.yaml raises the build's own error, naming the file and field."""
    return paths.discovery(load_site_config(site_dir).brand)


def build(
    site_dir: Path,
    out_dir: Path,
    base_url: str | None = None,
    frozen: bool = False,
    mcp_endpoint: str | None = None,
    every_file: bool = False,
) -> tuple[Plan, ChangeReport]:
    """`plan`, then the output and the lock written: both or neither. The report has a
    row per file only with `every_file` (`writer.compare`)."""
    result = plan(site_dir, base_url, frozen, mcp_endpoint)
    new_lock: Path | None = None
    try:
        if result.lock_changes:
            # Written beside the lock first, put in place after the output: a lock that
            # cannot be written (a full disk) fails the build before the output changes,
            # and an output that cannot be written leaves the lock as it was.
            body = result.lock_body or lock_body(result.lock, result.history)
            new_lock = staged_file(result.site.root / LOCK_FILE, body)
        report = write_output(result.artifacts, out_dir, result.site.base_url, every_file)
    except BaseException:
        if new_lock is not None:
            new_lock.unlink(missing_ok=True)
        raise
    if new_lock is not None:
        os.replace(new_lock, result.site.root / LOCK_FILE)
    return result, report
