"""The build manifest: the one interface between the build and the deployment.

`manifest.json` beside the output maps every published path to its sha256, size, media
type and Cache-Control. The writer writes it, the Pulumi program and the publisher (in
the engine's provider process, which must not load the builder) read it, `verify
--expect-from` checks a deployment against it. Its shape is defined here and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict

MANIFEST_NAME = "manifest.json"


class ManifestEntry(TypedDict):
    sha256: str
    size: int
    media_type: str
    cache_control: str


class BuildManifest(TypedDict):
    base_url: str
    files: dict[str, ManifestEntry]  # URL path -> entry, in path order


Files = Mapping[str, Mapping[str, Any]]  # path -> ManifestEntry (or a decoded copy)
_FIELDS = frozenset(ManifestEntry.__annotations__)


def entry(sha256: str, size: int, media_type: str, cache_control: str) -> ManifestEntry:
    return {"sha256": sha256, "size": size, "media_type": media_type,
            "cache_control": cache_control}  # fmt: skip


def build_manifest(base_url: str, files: Mapping[str, ManifestEntry]) -> BuildManifest:
    return {"base_url": base_url, "files": dict(_in_path_order(files))}


def manifest_body(manifest: BuildManifest) -> bytes:
    """`json.dumps(manifest, indent=2)` and a newline (pydantic-core's bytes when equal)."""
    # Imported here: the rest of this module is standard library only, which the CI's
    # preview-comment script relies on (it imports the contract's manifest functions).
    from agent_contract.artifacts import dumps_indented

    return dumps_indented(manifest)


def entry_signature(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes a published file different: its bytes or either of its headers.
    (The writer's change report and the publisher's upload plan both use it.)"""
    return (entry.get("sha256"), entry.get("media_type"), entry.get("cache_control"))


def is_build_manifest(data: Any) -> bool:
    """Whether `data` is a manifest the writer wrote (not any manifest.json, such as a
    web app's or a browser extension's)."""
    if not isinstance(data, dict) or not isinstance(data.get("base_url"), str):
        return False
    files = data.get("files")
    return isinstance(files, dict) and all(
        isinstance(entry, dict) and entry.keys() >= _FIELDS for entry in files.values()
    )


def read_manifest(out_dir: Path) -> BuildManifest | None:
    """The build manifest in `out_dir`, or None when there is none (or not ours)."""
    try:
        data = json.loads((out_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if is_build_manifest(data) else None


# The SiteContent input carries one string per file, not a nested map: the Pulumi SDK
# turns every nested value into an Output of its own, which made a 20,000-file preview
# take 27 s instead of 3 (benchmarks/README.md). A string still diffs file by file.
def encode_entry(entry: Mapping[str, Any]) -> str:
    """`<sha256> <size> <media type>|<cache-control>`: one line a reviewer can read."""
    return f"{entry['sha256']} {entry['size']} {entry['media_type']}|{entry['cache_control']}"


def decode_entry(text: str) -> ManifestEntry:
    head, cache_control = text.split("|", 1)
    sha256, size, media_type = head.split(" ", 2)
    return entry(sha256, int(size), media_type, cache_control)


def _in_path_order(files: Mapping[str, Any]) -> Mapping[str, Any]:
    # A build's manifest is in path order already: comparing the keys with their sorted
    # copy is linear on sorted input, and makes no (path, entry) tuple per file.
    paths = list(files)
    return files if paths == sorted(paths) else dict(sorted(files.items()))


def encode_files(files: Files) -> dict[str, str]:
    """path -> `encode_entry`, in path order."""
    ordered = _in_path_order(files)
    return dict(zip(ordered, map(encode_entry, ordered.values()), strict=True))


def decode_files(encoded: Mapping[str, str] | None) -> dict[str, ManifestEntry]:
    return {path: decode_entry(text) for path, text in (encoded or {}).items()}


def _listing(pairs: Iterable[tuple[str, str]]) -> str:
    return "".join([f"{path}\t{entry}\n" for path, entry in pairs])


def files_listing(encoded: Mapping[str, str] | None) -> str:
    """`<path>\t<entry>\n` per file, in path order: the text `files_digest` hashes."""
    return _listing(_in_path_order(encoded or {}).items())


def entries_listing(files: Files) -> str:
    """`files_listing(encode_files(files))`, without the intermediate map."""
    ordered = _in_path_order(files)
    return _listing(zip(ordered, map(encode_entry, ordered.values()), strict=True))


def listing_digest(listing: str) -> str:
    return hashlib.sha256(listing.encode()).hexdigest()


def files_digest(encoded: Mapping[str, str] | None) -> str:
    """One sha256 over every path and entry, in path order: a stack output that changes
    exactly when the published set does, at any size."""
    return listing_digest(files_listing(encoded))
