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
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent_contract.artifacts import dumps_indented
from content_builder.errors import Problem, SiteDataError

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

#: How many generations of removed ids the change feed keeps: a client further behind
#: starts over (docs/sync.md).
KEEP_GENERATIONS = 50


@dataclass(frozen=True)
class History:
    """The change feed's generation, kept in the lock beside the entries so that it is
    reproducible (no clock) and moves exactly when the lock records a content change.

    `removed` holds (generation, ids) for the generations that removed something, of
    the last KEEP_GENERATIONS generations only, oldest first."""

    generation: int = 0
    removed: tuple[tuple[int, tuple[str, ...]], ...] = ()

    @property
    def oldest_generation(self) -> int:
        """The oldest generation a client can sync from: every removal after it is listed."""
        return max(0, self.generation - KEEP_GENERATIONS)


def advance(history: History, changes: list[LockChange]) -> History:
    """The history after a build with these lock changes: one generation more when any
    content changed (a version edit alone changes no content_hash, so it does not count)."""
    if not any(change.reason != "version changed" for change in changes):
        return history
    generation = history.generation + 1
    gone = tuple(sorted(c.id for c in changes if c.reason == "entry removed"))
    removed = [(g, ids) for g, ids in history.removed if g > generation - KEEP_GENERATIONS]
    if gone:
        removed.append((generation, gone))
    return History(generation, tuple(removed))


def read_history(path: Path, display: str) -> History:
    """The history in the lock file (none before issue 14: generation 0). Of a conflicted
    lock's two sides, the one further ahead (the merge itself then moves it once more)."""
    if not path.exists():
        return History()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return History()  # read_lock reports it
    sides = _conflict_sides(text)
    candidates = [_parse_history(side, display) for side in (sides or (text,))]
    return max(candidates, key=lambda history: history.generation)


def _parse_history(text: str, display: str) -> History:
    try:
        data = json.loads(text)
    except ValueError:
        return History()  # read_lock reports it
    if not isinstance(data, dict):
        return History()
    generation = data.get("generation", 0)
    removed = data.get("removed", {})
    problems: list[Problem] = []
    if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
        problems.append(Problem(display, "generation", f"expected a whole number >= 0, found "
                                f"{generation!r}; {_RECREATE.format(display)}"))  # fmt: skip
    if not isinstance(removed, dict) or not all(
        key.isdigit() and isinstance(ids, list) and all(isinstance(i, str) for i in ids)
        for key, ids in removed.items()
    ):
        problems.append(Problem(display, "removed", "expected an object of generation -> "
                                f"[ids]; {_RECREATE.format(display)}"))  # fmt: skip
    if problems:
        raise SiteDataError(problems)
    return History(
        generation,
        tuple(sorted((int(key), tuple(ids)) for key, ids in removed.items())),
    )


_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_RECREATE = "restore it from git (git checkout -- {0}) or fix the field; run build to refresh it"


class MergedLock(dict[str, LockEntry]):
    """A lock read from a file with git conflict markers, both sides merged: the file
    itself must be rewritten, so the build reports it as a change."""


def read_lock(path: Path, display: str) -> Lock:
    """The lock, validated; a git merge conflict in it is merged, not refused.

    Both sides of a conflict are complete locks; for each id the entry with the higher
    content_version wins (then the later updated_at), so no version goes backwards and
    no date is lost. `resolve` then bumps whatever the merged content changed.
    """
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SiteDataError.single(display, None, f"cannot read the lock file ({error})") from error
    sides = _conflict_sides(text)
    if sides is None:
        return _parse(text, display)
    ours, theirs = (_parse(side, display, "the conflicted ") for side in sides)
    merged = MergedLock(ours)
    for entry_id, entry in theirs.items():
        if entry_id not in merged or _newer(entry, merged[entry_id]):
            merged[entry_id] = entry
    return merged


def _newer(candidate: LockEntry, current: LockEntry) -> bool:
    def key(entry: LockEntry) -> tuple[tuple[int, ...], str]:
        return tuple(int(part) for part in entry.content_version.split(".")), entry.updated_at

    return key(candidate) > key(current)


def _conflict_sides(text: str) -> tuple[str, str] | None:
    """`ours` and `theirs` of a file with git conflict markers (merge or diff3 style)."""
    if "\n<<<<<<< " not in "\n" + text:
        return None
    ours: list[str] = []
    theirs: list[str] = []
    state = "both"
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<<"):
            state = "ours"
        elif line.startswith("|||||||") and state == "ours":
            state = "base"
        elif line.startswith("=======") and state in ("ours", "base"):
            state = "theirs"
        elif line.startswith(">>>>>>>") and state == "theirs":
            state = "both"
        else:
            if state in ("both", "ours"):
                ours.append(line)
            if state in ("both", "theirs"):
                theirs.append(line)
    return "".join(ours), "".join(theirs)


#: The last lock text parsed and its entries: `serve --watch` rebuilds with the same lock
#: after every edit (it never writes the lock), 20,000 entries checked again each time.
_last_parsed: tuple[tuple[str, str, str], Lock] | None = None


def _parse(text: str, display: str, which: str = "") -> Lock:
    global _last_parsed
    if _last_parsed is not None and _last_parsed[0] == (text, display, which):
        return dict(_last_parsed[1])  # a copy: the caller may change its own
    lock = _parse_text(text, display, which)
    _last_parsed = ((text, display, which), dict(lock))
    return lock


def _parse_text(text: str, display: str, which: str) -> Lock:
    advice = _RECREATE.format(display)
    try:
        data = json.loads(text)
    except ValueError as error:
        raise SiteDataError.single(
            display, None, f"{which}lock file is not valid JSON ({error}); {advice}"
        ) from error
    if not isinstance(data, dict) or data.get("format") != LOCK_FORMAT:
        found = data.get("format") if isinstance(data, dict) else data
        raise SiteDataError.single(
            display, "format", f"expected {LOCK_FORMAT}, found {found!r}; {advice}"
        )
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise SiteDataError.single(display, "entries", f"expected an object of entries; {advice}")
    problems: list[Problem] = []
    lock: Lock = {}
    for entry_id, entry in entries.items():
        where = f"entries.{entry_id}"
        if not isinstance(entry, dict):
            problems.append(Problem(display, where, "expected an object"))
            continue
        fields = {
            name: entry.get(name) for name in ("source_hash", "content_version", "updated_at")
        }
        for name, value in fields.items():
            if not isinstance(value, str):
                problems.append(
                    Problem(display, f"{where}.{name}", f"expected text, found {value!r}")
                )
        unknown = sorted(set(entry) - set(fields))
        problems += [Problem(display, f"{where}.{name}", "unknown field") for name in unknown]
        if any(not isinstance(value, str) for value in fields.values()):
            continue
        checks = (
            ("source_hash", _HASH, "expected sha256:<64 hex digits>"),
            ("content_version", _VERSION, "expected a version MAJOR.MINOR.PATCH like 1.0.2"),
            ("updated_at", _STAMP, "expected a UTC timestamp like 2026-11-25T21:39:01Z"),
        )
        bad = False
        for name, pattern, expected in checks:
            if not pattern.fullmatch(fields[name]):
                problems.append(
                    Problem(display, f"{where}.{name}", f"{expected}, found {fields[name]!r}")
                )
                bad = True
        if not bad:
            try:
                # The pattern above fixed the form; fromisoformat (C, 20x faster than
                # strptime on a 20,000-entry lock) checks that the date and time exist.
                datetime.fromisoformat(fields["updated_at"][:-1])
            except ValueError as error:
                problems.append(
                    Problem(display, f"{where}.updated_at", f"not a real time ({error}), found "
                            f"{fields['updated_at']!r}")
                )  # fmt: skip
                bad = True
        if not bad:
            lock[entry_id] = LockEntry(**fields)  # type: ignore[arg-type]
    if problems:
        raise SiteDataError(problems)
    return lock


def lock_body(lock: Lock, history: History | None = None) -> bytes:
    history = history or History()
    data = {
        "format": LOCK_FORMAT,
        "generation": history.generation,
        "removed": {str(g): list(ids) for g, ids in history.removed},
        "entries": {
            entry_id: {
                "source_hash": entry.source_hash,
                "content_version": entry.content_version,
                "updated_at": entry.updated_at,
            }
            for entry_id, entry in sorted(lock.items())
        },
    }
    return dumps_indented(data)


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


def resolve(old: Lock, tracked: list[Tracked]) -> tuple[Lock, list[LockChange]]:
    """The lock this content needs, and why it differs from `old`.

    The clock is read lazily: a lock that needs no refresh never reads it.
    """
    new: Lock = {}
    changes: list[LockChange] = []
    stamp: str | None = None
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
