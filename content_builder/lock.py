"""site_data/content.lock.json: when each document and FAQ entry last changed, and its version.

`updated_at` and `metadata.content_version` must move only when what a client reads
changes, and the output must not depend on the wall clock. So they live in a lock
file committed with the content (like Cargo.lock): `build` refreshes the entries of
changed documents, `check --frozen` fails when the lock is stale.

An entry's `source_hash` is computed over the rendered document with the deployment's
base URL replaced by the `{base_url}` token, so building for `http://127.0.0.1:8000`
and for production sees the same content and never bumps a version.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from content_builder.errors import SiteDataError

LOCK_FORMAT = 1
FIRST_VERSION = "1.0.0"


@dataclass(frozen=True)
class LockEntry:
    source_hash: str
    content_version: str
    updated_at: str


@dataclass(frozen=True)
class Tracked:
    """What the build knows about one document or FAQ entry, before the lock."""

    id: str
    source_hash: str
    pinned_version: str | None  # the author's `version`, if any
    file: str


Lock = dict[str, LockEntry]


def read_lock(path: Path, display: str) -> Lock:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != LOCK_FORMAT:
            raise ValueError(f"expected format {LOCK_FORMAT}, found {data.get('format')!r}")
        return {
            entry_id: LockEntry(
                source_hash=str(entry["source_hash"]),
                content_version=str(entry["content_version"]),
                updated_at=str(entry["updated_at"]),
            )
            for entry_id, entry in data["entries"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise SiteDataError.single(
            display, None, f"unreadable lock file ({error}); delete it and run build to recreate it"
        ) from error


def lock_body(lock: Lock) -> bytes:
    data = {
        "format": LOCK_FORMAT,
        "entries": {
            entry_id: {
                "source_hash": entry.source_hash,
                "content_version": entry.content_version,
                "updated_at": entry.updated_at,
            }
            for entry_id, entry in sorted(lock.items())
        },
    }
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def lock_timestamp() -> str:
    """The time recorded for a change: SOURCE_DATE_EPOCH when set (reproducible builds), else now.

    Only consulted when a document changed, i.e. when the lock is refreshed; a build
    from a fresh lock never reads the clock.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = int(epoch) if epoch and epoch.isdigit() else int(time.time())
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def bump_patch(version: str) -> str:
    major, minor, patch = (int(part) for part in version.split("."))
    return f"{major}.{minor}.{patch + 1}"


@dataclass(frozen=True)
class LockChange:
    id: str
    file: str | None
    reason: str


def resolve(
    old: Lock, tracked: list[Tracked], now: str | None = None
) -> tuple[Lock, list[LockChange]]:
    """The lock this content needs, and why it differs from `old`.

    `now` is evaluated lazily: a lock that needs no refresh never reads the clock.
    """
    new: Lock = {}
    changes: list[LockChange] = []
    stamp = now
    for item in tracked:
        previous = old.get(item.id)
        if previous is None:
            version, reason = item.pinned_version or FIRST_VERSION, "new entry"
        elif previous.source_hash != item.source_hash:
            version = item.pinned_version or bump_patch(previous.content_version)
            reason = "content changed"
        elif item.pinned_version and item.pinned_version != previous.content_version:
            # A version edit alone is not a content change: keep updated_at.
            new[item.id] = LockEntry(previous.source_hash, item.pinned_version, previous.updated_at)
            changes.append(LockChange(item.id, item.file, "version changed"))
            continue
        else:
            new[item.id] = previous
            continue
        stamp = stamp or lock_timestamp()
        new[item.id] = LockEntry(item.source_hash, version, stamp)
        changes.append(LockChange(item.id, item.file, reason))
    present = {item.id for item in tracked}
    changes.extend(
        LockChange(entry_id, None, "entry removed")
        for entry_id in sorted(old)
        if entry_id not in present
    )
    return new, changes
