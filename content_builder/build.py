"""The build as a pipeline of named steps: load -> date -> render -> check -> write.

Pure up to `write`: `plan` turns site_data into artifacts without touching the disk,
so `check`, `serve`, the Pulumi program and the tests all share it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from agent_contract import paths
from agent_contract.artifacts import Artifact, json_body, text_body
from content_builder.errors import Problem, SiteDataError
from content_builder.loader import LOCK_FILE, Site, display_path, load_site
from content_builder.lock import (
    Lock,
    LockChange,
    MergedLock,
    lock_body,
    read_lock,
    resolve,
)
from content_builder.render.discovery import discovery_document
from content_builder.render.documents import (
    Catalog,
    build_catalog,
    tracked,
    unversioned_documents,
)
from content_builder.render.errors import not_found
from content_builder.render.indexes import content_index, search_index
from content_builder.render.llms import llms_full_txt, llms_txt
from content_builder.render.mcp import mcp_manifest
from content_builder.render.openapi import openapi_document
from content_builder.validate import check_artifacts, check_authored_links
from content_builder.writer import FileReport, write_file_atomically, write_output


@dataclass(frozen=True)
class Plan:
    site: Site
    artifacts: list[Artifact]
    lock: Lock
    lock_changes: list[LockChange]


def render(site: Site, lock: Lock, mcp_endpoint: str | None = None) -> list[Artifact]:
    """Every published file, leaves first, entry points last."""
    return render_catalog(site, build_catalog(site, lock), mcp_endpoint)


def render_catalog(
    site: Site, catalog: Catalog, mcp_endpoint: str | None = None
) -> list[Artifact]:
    manifest = json_body(mcp_manifest(site, catalog))
    return [
        *(
            Artifact(paths.document(document.id), json_body(document), loaded.file)
            for loaded, document in catalog.documents
        ),
        *(Artifact(paths.faq(faq.id), json_body(faq), loaded.file) for loaded, faq in catalog.faqs),
        Artifact(paths.ARCHITECTURE, json_body(site.architecture), site.architecture_file),
        Artifact(paths.ON_SITE_AGENT, json_body(site.on_site_agent), site.on_site_agent_file),
        Artifact(paths.NOT_FOUND, json_body(not_found(site))),
        Artifact(paths.CONTENT_INDEX, compact_json_body(content_index(site, catalog))),
        Artifact(paths.SEARCH_INDEX, compact_json_body(search_index(site, catalog))),
        Artifact(paths.LLMS_FULL_TXT, text_body(llms_full_txt(site, catalog))),
        Artifact(paths.MCP_MANIFEST, manifest),
        Artifact(paths.MCP_WELL_KNOWN, manifest),
        Artifact(paths.OPENAPI, json_body(openapi_document(site, catalog))),
        Artifact(
            paths.discovery(site.config.brand),
            json_body(discovery_document(site, catalog, mcp_endpoint)),
        ),
        Artifact(paths.LLMS_TXT, text_body(llms_txt(site, catalog))),
    ]


#: The aggregates that grow with the site are published without indentation: at 10,000
#: entries indentation was 43 % of search-index.json (83.5 MB -> 47.9 MB) and took
#: index.json over CloudFront's 10,000,000-byte limit for compression (11.3 MB -> 9.95 MB).
def compact_json_body(value: BaseModel) -> bytes:
    """JSON without whitespace (`json.dumps(data, ensure_ascii=False,
    separators=(",", ":"))`, tested), model field order, trailing newline."""
    return value.model_dump_json(exclude_none=True).encode("utf-8") + b"\n"


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
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def plan(
    site_dir: Path,
    base_url: str | None = None,
    frozen: bool = False,
    mcp_endpoint: str | None = None,  # a live MCP server's URL, named by the discovery doc
) -> Plan:
    with collector_paused():
        return _plan(site_dir, base_url, frozen, mcp_endpoint)


def _plan(site_dir: Path, base_url: str | None, frozen: bool, mcp_endpoint: str | None) -> Plan:
    site = load_site(site_dir, base_url)
    lock_display = display_path(site.root / LOCK_FILE)
    old_lock = read_lock(site.root / LOCK_FILE, lock_display)
    unversioned = unversioned_documents(site)  # rendered once, for the lock and the catalog
    lock, changes = resolve(old_lock, tracked(site, unversioned))
    if isinstance(old_lock, MergedLock):
        reason = "merge conflict in the lock merged (the newest version of each entry kept)"
        changes = [LockChange("*", lock_display, reason), *changes]
    if frozen and changes:
        raise stale_lock_error(site, changes)
    catalog = build_catalog(site, lock, unversioned)
    del unversioned  # not held while the aggregates render: the build's peak memory
    artifacts = render_catalog(site, catalog, mcp_endpoint)
    del catalog
    check_authored_links(site, frozenset(a.path for a in artifacts))
    check_artifacts(site, artifacts)
    return Plan(site, artifacts, lock, changes)


def build(
    site_dir: Path,
    out_dir: Path,
    base_url: str | None = None,
    frozen: bool = False,
    mcp_endpoint: str | None = None,
) -> tuple[Plan, list[FileReport]]:
    result = plan(site_dir, base_url, frozen, mcp_endpoint)
    with collector_paused():
        report = write_output(result.artifacts, out_dir, result.site.base_url)
    if result.lock_changes:
        # After the output: a failed write must leave both the output and the lock as they were.
        write_file_atomically(result.site.root / LOCK_FILE, lock_body(result.lock))
    return result, report
