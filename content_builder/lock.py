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

import bisect
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agent_contract.artifacts import dumps_indented
from content_builder.errors import Problem, SiteDataError

if TYPE_CHECKING:
    from content_builder.cache import EntryCache

LOCK_FORMAT = 1
FIRST_VERSION = "1.0.0"


class LockEntry(NamedTuple):
    source_hash: str
    content_version: str
    updated_at: str


#: An entry as a `Lock` holds it: (source_hash, content_version, updated_at), a plain
#: tuple of text, which the garbage collector stops tracking at its first look (a
#: LockEntry, a tuple subclass, or a dataclass instance stays tracked: 20,000 of them
#: were walked by every full collection of the rest of the build).
Row = tuple[str, str, str]


class Lock(Mapping[str, LockEntry]):
    """The lock: each document's and FAQ entry's LockEntry, by id. Held as plain rows
    (`Row`), each LockEntry made when asked for (a build asks for each a few times)."""

    __slots__ = ("rows",)

    def __init__(self, rows: dict[str, Row] | None = None) -> None:
        self.rows: dict[str, Row] = {} if rows is None else rows

    @classmethod
    def of(cls, lock: Mapping[str, LockEntry]) -> Lock:
        """`lock` as a Lock (itself if it is one): a caller may hand any mapping."""
        if isinstance(lock, Lock):
            return lock
        return cls(
            {key: (e.source_hash, e.content_version, e.updated_at) for key, e in lock.items()}
        )

    def __getitem__(self, entry_id: str) -> LockEntry:
        return LockEntry._make(self.rows[entry_id])

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Lock):
            return self.rows == other.rows
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.rows!r})"


@dataclass(frozen=True)
class Tracked:
    """What the build knows about the documents and FAQ entries, before the lock: one
    column per field, in publication order (columns of text, not an object per entry:
    see `Row`)."""

    ids: tuple[str, ...]
    source_hashes: tuple[str, ...]
    pinned_versions: tuple[str | None, ...]  # the author's `version`, if any
    files: tuple[str, ...]


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


def _text(raw: bytes) -> str:
    """`raw` as `Path.read_text(encoding="utf-8")` reads it (universal newlines)."""
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def read_history(path: Path, display: str, raw: bytes | None = None) -> History:
    """The history in the lock file (none before issue 14: generation 0). Of a conflicted
    lock's two sides, the one further ahead (the merge itself then moves it once more).
    `raw`: the file's bytes, already read."""
    if raw is None and not path.exists():
        return History()
    try:
        text = path.read_text(encoding="utf-8") if raw is None else _text(raw)
    except (OSError, UnicodeDecodeError):
        return History()  # read_lock reports it
    sides = _conflict_sides(text)
    candidates = [_parse_history(side, display) for side in (sides or (text,))]
    return max(candidates, key=lambda history: history.generation)


def _parse_history(text: str, display: str) -> History:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested past the decoder's recursion limit
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


class MergedLock(Lock):
    """A lock read from a file with git conflict markers, both sides merged: the file
    itself must be rewritten, so the build reports it as a change."""

    __slots__ = ()


def read_lock(path: Path, display: str, raw: bytes | None = None) -> Lock:
    """The lock, validated; a git merge conflict in it is merged, not refused.

    Both sides of a conflict are complete locks; for each id the entry with the higher
    content_version wins (then the later updated_at), so no version goes backwards and
    no date is lost. `resolve` then bumps whatever the merged content changed. `raw`: the
    file's bytes, already read.
    """
    if raw is None and not path.exists():
        return Lock()
    try:
        text = path.read_text(encoding="utf-8") if raw is None else _text(raw)
    except (OSError, UnicodeDecodeError) as error:
        raise SiteDataError.single(display, None, f"cannot read the lock file ({error})") from error
    sides = _conflict_sides(text)
    if sides is None:
        return _parse_text(text, display, "")
    ours, theirs = (_parse_text(side, display, "the conflicted ") for side in sides)
    merged = dict(ours.rows)
    for entry_id, row in theirs.rows.items():
        if entry_id not in merged or _newer(row, merged[entry_id]):
            merged[entry_id] = row
    return MergedLock(merged)


#: The build cache's name (`put_latest`) for the parsed form of the lock files the last
#: build read and wrote, by the SHA-256 of their exact bytes.
PARSED_LOCKS = "parsed-lock"
#: The build cache's name for the digests, among those, of the files that are
#: lock_body's own bytes (written by a build, or found so when read): the lock after an
#: edit is written from such a file's bytes, its changed entries alone made anew.
LOCK_BODIES = "lock-bodies"
#: (ids, source hashes, versions, stamps, generation, removed): plain tuples of text,
#: 5x quicker to pickle than 20,000 LockEntry objects.
_Parsed = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], int, Any]


class LockFile:
    """The lock file as a build reads it: parsed and validated (read_lock, read_history),
    or, when the build cache holds the parsed form of these exact bytes (the lock the last
    build read or wrote), that form: 20,000 entries parsed and checked cost 0.1-0.25 s
    of a build after one edit. Only a lock that parsed without a problem (and without a
    merge conflict) is remembered, so a bad lock is always parsed and reported the same.
    """

    def __init__(self, path: Path, display: str, cache: EntryCache | None = None) -> None:
        self.path, self.display = path, display
        self.cache = cache if cache is not None and cache.enabled else None
        self.digest: str | None = None
        self.recalled: dict[str, _Parsed] = {}
        self._hit: tuple[Lock, History] | None = None
        self._read: Lock | None = None
        self.bodies: frozenset[str] = frozenset()
        # The bytes hashed are the bytes parsed: a lock replaced meanwhile (a checkout, a
        # build beside this one) must not be remembered under the other bytes' digest.
        self._raw: bytes | None = None
        if self.cache is None:
            return
        try:
            self._raw = path.read_bytes()
        except OSError:
            return  # missing or unreadable: read_lock says which
        self.digest = hashlib.sha256(self._raw).hexdigest()
        self.recalled = _recalled(self.cache.get_latest(PARSED_LOCKS))
        known = self.recalled.get(self.digest)
        self._hit = _decode(known) if known is not None else None
        self.bodies = _recalled_bodies(self.cache.get_latest(LOCK_BODIES))

    def lock(self) -> Lock:
        if self._hit is not None:
            return self._hit[0]  # a Lock is not changed in place: no copy needed
        if self._read is None:  # read once a build (prime.py reads it, then the build)
            self._read = read_lock(self.path, self.display, self._raw)
        return self._read

    def history(self) -> History:
        if self._hit is not None:
            return self._hit[1]
        return read_history(self.path, self.display, self._raw)

    def body(self, lock: Lock, history: History, changes: list[LockChange]) -> bytes:
        """lock_body(lock, history), `lock` being the lock read with `changes`: when the
        file read is lock_body's own bytes (the build cache knows them), made from them
        with only the changed entries written anew (at 20,000 entries, 5 ms, not 40)."""
        if self._hit is not None and self._raw is not None and self.digest in self.bodies:
            old, old_history = self._hit
            spliced = _spliced_body(self._raw, old, old_history, lock, history, changes)
            if spliced is not None:
                return spliced
        return lock_body(lock, history)

    def remember(
        self,
        read: Mapping[str, LockEntry],
        old_history: History,
        written: Mapping[str, LockEntry] | None,
        history: History,
        written_body: bytes | None = None,  # lock_body(written, history), when made already
    ) -> None:
        """Put the parsed form of the lock read (if it had no merge conflict) and of the
        lock this build writes (`written`, None if none), by their bytes, for the next build:
        the next edit reads the lock this one writes; a build that finds the lock it read
        put back (the benchmark's edits, a `git checkout`) reads that one."""
        if self.cache is None or (self._hit is not None and written is None):
            return  # nothing the cache does not hold already
        known: dict[str, _Parsed] = {}
        bodies: set[str] = set()
        merged = isinstance(read, MergedLock)
        if self.digest is not None and not merged:
            known[self.digest] = (
                self.recalled[self.digest]
                if self._hit is not None
                else _encode(Lock.of(read).rows, old_history)
            )
            if self.digest in self.bodies or (
                self._hit is None and self._raw == lock_body(read, old_history)
            ):
                bodies.add(self.digest)
        if written is not None:
            old = {} if merged else Lock.of(read).rows
            rows = Lock.of(written).rows
            # Entries taken over from the lock read were checked when it was parsed; a
            # new or changed one is checked as a read would check it, or nothing of the
            # written lock is remembered (the next build parses it and says what is wrong).
            if all(old.get(entry_id) == row or _row_valid(row) for entry_id, row in rows.items()):
                body = written_body or lock_body(written, history)
                digest = hashlib.sha256(body).hexdigest()
                known[digest] = _encode(rows, history)
                bodies.add(digest)
        if known != self.recalled:
            self.cache.put_latest(PARSED_LOCKS, known)
        if bodies != self.bodies:
            self.cache.put_latest(LOCK_BODIES, frozenset(bodies))


def _encode(rows: dict[str, Row], history: History) -> _Parsed:
    """The parsed form of a lock: its columns in the order lock_body writes (by id)."""
    ids = tuple(sorted(rows))
    hashes, versions, stamps = tuple(zip(*map(rows.__getitem__, ids), strict=True)) or ((), (), ())
    return (
        ids,
        hashes,
        versions,
        stamps,
        history.generation,
        tuple((generation, tuple(group)) for generation, group in history.removed),
    )


def _decode(parsed: _Parsed) -> tuple[Lock, History] | None:
    """The lock and history `parsed` holds, or None if it is not what `_encode` makes (a
    damaged or foreign value: the file is parsed instead)."""
    try:
        ids, hashes, versions, stamps, generation, removed = parsed
        columns = (ids, hashes, versions, stamps)
        if not all(type(column) is tuple and len(column) == len(ids) for column in columns):
            return None
        if type(generation) is not int:
            return None
        if not all(set(map(type, column)) <= {str} for column in columns):
            return None
        rows = dict(zip(ids, zip(hashes, versions, stamps, strict=True), strict=True))
        if len(rows) != len(ids):
            return None
        history = History(
            generation,
            tuple((int(g), tuple(group_ids)) for g, group_ids in removed),
        )
        if not all(type(i) is str for _, group in history.removed for i in group):
            return None
    except (TypeError, ValueError):
        return None
    return Lock(rows), history


def _recalled_bodies(value: object) -> frozenset[str]:
    if not isinstance(value, frozenset):
        return frozenset()
    return frozenset(digest for digest in value if isinstance(digest, str))


def _recalled(value: object) -> dict[str, _Parsed]:
    if not isinstance(value, dict):
        return {}
    return {key: parsed for key, parsed in value.items() if isinstance(key, str)}


def _newer(candidate: Row, current: Row) -> bool:
    def key(row: Row) -> tuple[tuple[int, ...], str]:
        return tuple(int(part) for part in row[1].split(".")), row[2]

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


def _parse_text(text: str, display: str, which: str) -> Lock:
    advice = _RECREATE.format(display)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:  # nested past the decoder's recursion limit
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
    rows: dict[str, Row] = {}
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
                _real_time(fields["updated_at"])
            except ValueError as error:
                problems.append(
                    Problem(display, f"{where}.updated_at", f"not a real time ({error}), found "
                            f"{fields['updated_at']!r}")
                )  # fmt: skip
                bad = True
        if not bad:
            rows[entry_id] = tuple(fields.values())  # type: ignore[assignment]
    if problems:
        raise SiteDataError(problems)
    return Lock(rows)


def _real_time(stamp: str) -> None:
    datetime.fromisoformat(stamp[:-1])


def _row_valid(row: Row) -> bool:
    """Whether _parse_text would accept this entry as it is, without a problem."""
    source_hash, version, stamp = row
    if not all(isinstance(value, str) for value in row):
        return False
    if not (
        _HASH.fullmatch(source_hash) and _VERSION.fullmatch(version) and _STAMP.fullmatch(stamp)
    ):
        return False
    try:
        _real_time(stamp)
    except ValueError:
        return False
    return True


#: One entry of the lock file as `json.dumps(..., indent=2)` writes it, but its closing
#: brace, each text put through the JSON encoder's own string escaping
#: (`encode_basestring_ascii`: what json.dumps does with ensure_ascii). Made per entry,
#: not as one dict of 20,000 dicts for an encoder: those dicts were 20,000 objects more
#: for the garbage collector.
_ENTRY = (
    '    {}: {{\n      "source_hash": {},\n      "content_version": {},\n      "updated_at": {}'
)
#: What comes between two entries (the first one's closing brace), and after the last.
_BETWEEN = "\n    },\n"
_TAIL = b"\n    }\n  }\n}\n"
#: How the lock's head ends as dumps_indented writes it with no entries.
_NO_ENTRIES = b"{}\n}\n"


def _head(history: History) -> bytes:
    """The lock file's bytes up to its first entry (dumps_indented's, as before)."""
    head = dumps_indented(
        {
            "format": LOCK_FORMAT,
            "generation": history.generation,
            "removed": {str(g): list(ids) for g, ids in history.removed},
            "entries": {},
        }
    )
    assert head.endswith(_NO_ENTRIES)
    return head[: -len(_NO_ENTRIES)] + b"{\n"


def _entry(entry_id: str, row: Row) -> str:
    return _ENTRY.format(*map(encode_basestring_ascii, (entry_id, *row)))


def lock_body(lock: Mapping[str, LockEntry], history: History | None = None) -> bytes:
    """The lock file's bytes: `json.dumps(data, indent=2)` and a newline, entries by id."""
    history = history or History()
    rows = Lock.of(lock).rows
    if not rows:
        return _head(history)[:-2] + _NO_ENTRIES
    entries = _BETWEEN.join(_entry(entry_id, rows[entry_id]) for entry_id in sorted(rows))
    return _head(history) + entries.encode("ascii") + _TAIL


def _spliced_body(
    raw: bytes,
    old: Lock,
    old_history: History,
    new: Lock,
    history: History,
    changes: list[LockChange],
) -> bytes | None:
    """lock_body(new, history), made from `raw` = lock_body(old, old_history) with the
    rows listed in `changes` written anew and the rest of the bytes copied (old's rows
    in the file's order: by id); None when entries were added or removed (or `raw` is
    not of that shape), for lock_body to write the whole."""
    if any(change.reason not in _SPLICED for change in changes) or len(new) != len(old):
        return None
    head = _head(old_history)
    if not (raw.startswith(head) and raw.endswith(_TAIL)):
        return None
    parts = raw[len(head) : -len(_TAIL)].split(_BETWEEN.encode("ascii"))
    ids = list(old.rows)
    if len(parts) != len(ids):
        return None
    for change in changes:
        at = bisect.bisect_left(ids, change.id)
        if at == len(ids) or ids[at] != change.id or change.id not in new.rows:
            return None
        parts[at] = _entry(change.id, new.rows[change.id]).encode("ascii")
    return _head(history) + _BETWEEN.encode("ascii").join(parts) + _TAIL


#: The changes that keep every id where it is in the file (no entry added or removed).
_SPLICED = frozenset({"content changed", "version changed"})


def lock_timestamp() -> str:
    """The time recorded for a change: SOURCE_DATE_EPOCH when set (reproducible builds), else now.

    Read once a build, through its `ChangeStamp`: at the first change, or before the
    prime step's pool starts (it dates entries before anyone knows whether one changed).
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


class ChangeStamp:
    """The time this build records for every entry it finds changed: read from the clock
    (lock_timestamp) at the first change, then the same for the rest of the build, also
    for entries dated ahead in other processes (prime.py, which reads it before it knows
    of any change). A build that changes nothing and primes nothing never reads it."""

    def __init__(self, value: str | None = None) -> None:
        self._value = value

    def __call__(self) -> str:
        if self._value is None:
            self._value = lock_timestamp()
        return self._value


def resolve(
    old: Mapping[str, LockEntry], tracked: Tracked, stamp: ChangeStamp | None = None
) -> tuple[Lock, list[LockChange]]:
    """The lock this content needs, and why it differs from `old`."""
    before = Lock.of(old).rows
    stamp = stamp or ChangeStamp()
    rows: dict[str, Row] = {}
    changes: list[LockChange] = []
    for entry_id, source_hash, pinned, file in zip(
        tracked.ids, tracked.source_hashes, tracked.pinned_versions, tracked.files, strict=True
    ):
        rows[entry_id], reason = dated_row(before.get(entry_id), source_hash, pinned, stamp)
        if reason is not None:
            changes.append(LockChange(entry_id, file, reason))
    changes.extend(
        LockChange(entry_id, None, "entry removed")
        for entry_id in sorted(before)
        if entry_id not in rows
    )
    return Lock(rows), changes


def dated_row(
    previous: Row | None, source_hash: str, pinned: str | None, stamp: ChangeStamp
) -> tuple[Row, str | None]:
    """One entry's lock row, given its row in the lock read, and why it changed (None:
    it did not)."""
    if previous is None:
        return (source_hash, pinned or FIRST_VERSION, stamp()), "new entry"
    if previous[0] != source_hash:
        return (source_hash, pinned or bump_patch(previous[1]), stamp()), "content changed"
    if pinned and pinned != previous[1]:
        # A version edit alone is not a content change: keep updated_at.
        return (previous[0], pinned, previous[2]), "version changed"
    return previous, None
