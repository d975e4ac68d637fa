"""Write the artifacts to the output folder, all or nothing.

Everything is written to a temporary sibling folder first and swapped in with renames,
so a failure at any point leaves the previous output exactly as it was. The folder
also gets `manifest.json` (path -> sha256, size, media type, Cache-Control), which is
what the publisher and `verify --expect-from` read.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_contract.artifacts import Artifact
from agent_contract.manifest import (
    MANIFEST_NAME,
    BuildManifest,
    ManifestEntry,
    build_manifest,
    entry,
    entry_signature,
    manifest_body,
    read_manifest,
)
from content_builder.early import EarlyFiles, write_new_file
from content_builder.errors import SiteDataError
from content_builder.loader import display_path


def _entry(artifact: Artifact) -> ManifestEntry:
    return entry(artifact.sha256, artifact.size, artifact.media_type, artifact.cache_control)


def manifest(artifacts: list[Artifact], base_url: str) -> BuildManifest:
    return build_manifest(base_url, {artifact.path: _entry(artifact) for artifact in artifacts})


@dataclass(frozen=True)
class FileReport:
    path: str
    size: int
    status: str  # new | changed | unchanged | removed


def compare(
    artifacts: list[Artifact],
    previous: dict[str, Any] | None,
    entries: dict[str, ManifestEntry] | None = None,  # each artifact's, when already made
) -> list[FileReport]:
    before: dict[str, Any] = (previous or {}).get("files", {})
    rows = []
    for artifact in sorted(artifacts, key=lambda a: a.path):
        old = before.get(artifact.path)
        new = entries[artifact.path] if entries is not None else _entry(artifact)
        if old is None:
            status = "new"
        elif entry_signature(old) == entry_signature(new):
            status = "unchanged"
        else:
            status = "changed"
        rows.append(FileReport(artifact.path, artifact.size, status))
    current = {artifact.path for artifact in artifacts}
    rows += [FileReport(path, 0, "removed") for path in sorted(before) if path not in current]
    return rows


def write_output(
    artifacts: list[Artifact],
    out_dir: Path,
    base_url: str,
    early: EarlyFiles | None = None,  # files already being written into a staging folder
) -> list[FileReport]:
    out_dir = out_dir.absolute()
    previous = read_manifest(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or (previous is None and any(out_dir.iterdir()))):
        # Never replace a folder this tool did not write: `--out ~` must not eat a home.
        raise SiteDataError.single(
            display_path(out_dir),
            None,
            f"exists and is not a build output (no {MANIFEST_NAME}); choose another --out",
        )
    entries = {artifact.path: _entry(artifact) for artifact in artifacts}
    report = compare(artifacts, previous, entries)
    written = _written_before(out_dir, previous)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging, done = _early_staging(early, previous, artifacts)
    staging = staging or Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        folders: set[str] = set()
        # Strings, not Paths, in this loop: it runs once per published file.
        staged, published = str(staging), str(out_dir)
        for artifact in artifacts:
            if artifact.key in done:  # written early, by content_builder/early.py
                continue
            target = os.path.join(staged, artifact.key)
            folder = os.path.dirname(target)
            if folder not in folders:  # one mkdir per folder, not per file
                os.makedirs(folder, exist_ok=True)
                folders.add(folder)
            old = os.path.join(published, artifact.key)
            if not (previous and _reuse(old, target, artifact, written)):
                write_new_file(target, artifact.body)
        (staging / MANIFEST_NAME).write_bytes(manifest_body(build_manifest(base_url, entries)))
        _swap_in(staging, out_dir)
        # Last: removing the retired output moved the ctime of every file it shared an
        # inode with; the manifest's time is the line the next build trusts files behind.
        os.utime(out_dir / MANIFEST_NAME)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def _early_staging(
    early: EarlyFiles | None, previous: BuildManifest | None, artifacts: list[Artifact]
) -> tuple[Path | None, frozenset[str]]:
    """The early staging folder and the keys already final in it, when there is no
    previous output to reuse files from (there was none when it started)."""
    if early is None:
        return None, frozenset()
    folder = early.take() if previous is None else None
    done = early.written(artifacts) if folder is not None else None
    if folder is None or done is None:
        early.discard()
        return None, frozenset()
    return folder, done


@dataclass(frozen=True)
class _Written:
    """What the previous build wrote: each file's sha256 and size by path, and when its
    manifest was written (every file of that build was written before it)."""

    files: dict[str, tuple[str, int]]
    manifest_mtime_ns: int


def _written_before(out_dir: Path, previous: BuildManifest | None) -> _Written | None:
    if previous is None:
        return None
    try:
        mtime = (out_dir / MANIFEST_NAME).stat().st_mtime_ns
    except OSError:
        return None
    files = {
        path: (entry.get("sha256"), entry.get("size")) for path, entry in previous["files"].items()
    }
    return _Written(files, mtime)  # type: ignore[arg-type]


def _reuse(old: str, target: str, artifact: Artifact, written: _Written | None) -> bool:
    """Hard-link the previous output's file into the staging folder when it holds exactly
    the artifact's bytes: creating 20,000 files cost 5-8 s of a 10,000-entry build,
    linking one 5 us. Nothing writes into a published file in place, so sharing its
    inode with the retired output is safe.

    A file the previous manifest lists with the same sha256 and size is trusted without
    reading when it still has that size and neither its mtime nor its ctime is as late as
    the manifest, which the writer touches last, after the retired output is gone. ctime
    moves on any change and cannot be set back (`cp -p`, `rsync -t`, `touch -r` restore an
    mtime, not a ctime); equal times are read, as coarse clocks give a whole tick one
    time. Any other file is compared byte for byte."""
    body = artifact.body
    try:
        stat = os.stat(old)
        if stat.st_size != len(body):
            return False
        listed = written.files.get(artifact.path) if written else None
        trusted = (
            written is not None
            and listed == (artifact.sha256, len(body))
            and max(stat.st_mtime_ns, stat.st_ctime_ns) < written.manifest_mtime_ns
        )
        if not trusted and Path(old).read_bytes() != body:
            return False
        os.link(old, target)
    except OSError:  # gone, unreadable, or a filesystem without hard links
        return False
    return True


def _swap_in(staging: Path, out_dir: Path) -> None:
    # Two renames: Linux has no portable atomic exchange of directories from Python.
    # Between them the output folder is briefly absent, never half-written.
    if not out_dir.exists():
        os.rename(staging, out_dir)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    retired.rmdir()
    os.rename(out_dir, retired)
    try:
        os.rename(staging, out_dir)
    except BaseException:
        os.rename(retired, out_dir)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def write_file_atomically(path: Path, body: bytes) -> None:
    """Replace one file by rename, so a reader never sees it half-written."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(body)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
