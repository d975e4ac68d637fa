"""Write the artifacts to the output folder, all or nothing.

Everything is written to a temporary sibling folder first and swapped in with renames,
so a failure at any point leaves the previous output exactly as it was. The folder
also gets `manifest.json` (path -> sha256, size, media type, Cache-Control), which is
what the publisher and `verify --expect-from` read.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from content_builder.artifacts import Artifact
from content_builder.errors import SiteDataError
from content_builder.loader import display_path

MANIFEST_NAME = "manifest.json"


def _entry(artifact: Artifact) -> dict[str, Any]:
    return {
        "sha256": artifact.sha256,
        "size": artifact.size,
        "media_type": artifact.media_type,
        "cache_control": artifact.cache_control,
    }


def manifest(artifacts: list[Artifact], base_url: str) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "files": {
            artifact.path: _entry(artifact) for artifact in sorted(artifacts, key=lambda a: a.path)
        },
    }


def entry_signature(entry: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a published file different: its bytes or either of its headers.
    (The writer's change report and the publisher's upload plan both use it.)"""
    return (entry.get("sha256"), entry.get("media_type"), entry.get("cache_control"))


def is_build_manifest(data: Any) -> bool:
    """Whether `data` is a manifest this writer wrote (not any manifest.json, such as a
    web app's or a browser extension's)."""
    if not isinstance(data, dict) or not isinstance(data.get("base_url"), str):
        return False
    files = data.get("files")
    return isinstance(files, dict) and all(
        isinstance(entry, dict) and {"sha256", "size", "media_type", "cache_control"} <= set(entry)
        for entry in files.values()
    )


def manifest_body(artifacts: list[Artifact], base_url: str) -> bytes:
    return (json.dumps(manifest(artifacts, base_url), indent=2) + "\n").encode("utf-8")


@dataclass(frozen=True)
class FileReport:
    path: str
    size: int
    status: str  # new | changed | unchanged | removed


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    """The build manifest in `out_dir`, or None when there is none (or not ours)."""
    try:
        data = json.loads((out_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if is_build_manifest(data) else None


def compare(artifacts: list[Artifact], previous: dict[str, Any] | None) -> list[FileReport]:
    before: dict[str, Any] = (previous or {}).get("files", {})
    rows = []
    for artifact in sorted(artifacts, key=lambda a: a.path):
        old = before.get(artifact.path)
        if old is None:
            status = "new"
        elif entry_signature(old) == entry_signature(_entry(artifact)):
            status = "unchanged"
        else:
            status = "changed"
        rows.append(FileReport(artifact.path, artifact.size, status))
    current = {artifact.path for artifact in artifacts}
    rows += [FileReport(path, 0, "removed") for path in sorted(before) if path not in current]
    return rows


def write_output(artifacts: list[Artifact], out_dir: Path, base_url: str) -> list[FileReport]:
    out_dir = out_dir.absolute()
    previous = read_manifest(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or (previous is None and any(out_dir.iterdir()))):
        # Never replace a folder this tool did not write: `--out ~` must not eat a home.
        raise SiteDataError.single(
            display_path(out_dir),
            None,
            f"exists and is not a build output (no {MANIFEST_NAME}); choose another --out",
        )
    report = compare(artifacts, previous)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        folders: set[Path] = set()
        for artifact in artifacts:
            target = staging / artifact.key
            if target.parent not in folders:  # one mkdir per folder, not per file
                target.parent.mkdir(parents=True, exist_ok=True)
                folders.add(target.parent)
            target.write_bytes(artifact.body)
        (staging / MANIFEST_NAME).write_bytes(manifest_body(artifacts, base_url))
        _swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


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
