"""The build cache: what a build derived from each source entry, kept between builds.

An entry (a content document or an FAQ file) whose bytes did not change is not parsed,
validated, link-checked or tokenized again. A record is keyed by the entry's file name
and the SHA-256 of its bytes; the whole cache is keyed by the build settings (site.yaml's
bytes, the effective base URL, the site folder, the working directory that display paths
are relative to) and by a fingerprint of the builder's own code and of the libraries that
shape its data, so that a code or settings change starts from empty, never from stale.

The records are general: per entry, named fields (`loaded`, `terms`, ...) that any step
may store and read back, not a list of today's published files.

Where it lives: $AGENT_ACCESS_CACHE_DIR, else $XDG_CACHE_HOME/agent-access, else
~/.cache/agent-access: never in the repository. One file per site folder. Clear it with
`rm -rf ~/.cache/agent-access` (or the folder above); AGENT_ACCESS_CACHE_DIR=off turns it
off. A cache that is missing, corrupt, from another version or for other settings is
ignored and rewritten: it can make a build faster, never different.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

CACHE_ENV = "AGENT_ACCESS_CACHE_DIR"
_MAGIC = b"agent-access build cache v1\n"
#: The packages whose code decides what a record holds.
_CODE_PACKAGES = ("content_builder", "agent_contract")


@cache
def code_fingerprint() -> str:
    """SHA-256 of the builder's and the contract's sources and of the library versions."""
    from importlib import metadata

    digest = hashlib.sha256(sys.version.encode())
    for name in ("pydantic", "pydantic-core", "PyYAML"):
        try:
            digest.update(f"{name}={metadata.version(name)};".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=?;".encode())
    root = Path(__file__).resolve().parent.parent
    for package in _CODE_PACKAGES:
        for source in sorted((root / package).rglob("*.py")):
            digest.update(str(source.relative_to(root)).encode() + b"\0")
            digest.update(source.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_dir() -> Path | None:
    chosen = os.environ.get(CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "agent-access"


def entry_key(name: str, data: bytes) -> str:
    return name + "\0" + hashlib.sha256(data).hexdigest()


class EntryCache:
    """Records by entry key; only the records a build used are saved again, so removed or
    edited entries do not pile up."""

    def __init__(self, file: Path | None, header: bytes, records: dict[str, dict[str, Any]]):
        self.file = file
        self.header = header
        self.records = records
        self.used: dict[str, dict[str, Any]] = {}
        self.changed = False

    @classmethod
    def disabled(cls) -> EntryCache:
        return cls(None, b"", {})

    @classmethod
    def open(cls, site_root: Path, settings: bytes) -> EntryCache:
        folder = cache_dir()
        if folder is None:
            return cls.disabled()
        root = str(site_root.resolve())
        file = folder / f"build-{hashlib.sha256(root.encode()).hexdigest()[:24]}.pickle"
        header = (
            hashlib.sha256(
                code_fingerprint().encode() + b"\0" + root.encode() + b"\0" + settings
            ).hexdigest()
        ).encode() + b"\n"
        return cls(file, header, _read_records(file, header))

    def get(self, key: str, field: str) -> Any | None:
        record = self.records.get(key)
        if record is None or field not in record:
            return None
        self.used[key] = record
        return record[field]

    def put(self, key: str, field: str, value: Any) -> None:
        record = self.records.setdefault(key, {})
        record[field] = value
        self.used[key] = record
        self.changed = True

    def save(self) -> None:
        """Write the used records back, atomically; a cache that cannot be written is
        only a slower next build, never a failed one."""
        if self.file is None or (not self.changed and len(self.used) == len(self.records)):
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".build-", dir=self.file.parent)
            try:
                with os.fdopen(handle, "wb") as stream:
                    stream.write(_MAGIC + self.header)
                    pickle.dump(self.used, stream, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, self.file)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return


def _read_records(file: Path, header: bytes) -> dict[str, dict[str, Any]]:
    try:
        with file.open("rb") as stream:
            if stream.read(len(_MAGIC)) != _MAGIC or stream.readline() != header:
                return {}  # another version, other settings or not ours: not unpickled
            records = pickle.load(stream)
    except Exception:  # missing, truncated, corrupt: a cold build
        return {}
    if not isinstance(records, dict) or not all(
        isinstance(key, str) and isinstance(value, dict) for key, value in records.items()
    ):
        return {}
    return records
