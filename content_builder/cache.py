"""The build cache: what a build derived from each source entry, kept between builds.

An entry (a content document or an FAQ file) whose bytes did not change is not parsed,
validated, rendered, link-checked or tokenized again. A record is keyed by the entry's file name
and the SHA-256 of its bytes; the whole cache is keyed by the build settings (site.yaml's
bytes, the effective base URL, the site folder, the working directory that display paths
are relative to) and by a fingerprint of the builder's own code and of the libraries that
shape its data, so that a code or settings change starts from empty, never from stale.

The records are general: per entry, named fields that any step may store and read back,
not a list of today's published files: `loaded` (id, order, pinned version),
`source_hash`, `content_hash`, and `rendered` (the entry's published pieces,
render/catalog.py, with the lock entry they were dated by).

Large bytes a build seldom needs (an entry's own files: half the file at 10,000 entries,
which a cached build writes only when they changed) are put as `Blob`s: kept after the
frame's pickle as raw bytes, checked with the frame, and read back as `BlobRef`s (plain
tuples), whose bytes are read from the file only when asked for (`EntryCache.blob`).
A record read back holds only strings, bytes, ints and tuples of them: objects the
garbage collector stops walking once it has seen them (issue 22, session 24). It is
itself a flat tuple, field, value, field, value..., not a dict (`Record`): a dict is
untracked only by a full collection, so the 60,000 records of a 10,000-entry site read
at once started full collections of the build's heap one after another (session 25).

Where it lives: $AGENT_ACCESS_CACHE_DIR, else $XDG_CACHE_HOME/agent-access, else
~/.cache/agent-access: never in the repository. One file per site folder and settings
(about 355 MB for 10,000 documents and 10,000 FAQ entries, ~18 KB an entry: its own
two files, 9 KB, read only when written or served; its llms-full.txt block, 4.3 KB,
joined at every build; its candidate keywords, links and aggregate pieces, the rest;
docs/decisions.md, issue 22, session 23). Bounded: past AGENT_ACCESS_CACHE_MAX_MB (default
2048) in all, the least recently used files go (`prune`). `make clean` clears it;
AGENT_ACCESS_CACHE_DIR=off turns it off. Builds that run at once write it one at a time
(an advisory lock), and every frame is checked before it is read: a cache that is
missing, corrupt, from another version or for other settings is ignored and rewritten:
it can make a build faster, never different.

It also keeps, beside the records, what the last build that passed every check proved
(`Proven`), so that the next build checks only what changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

try:
    import fcntl
except ImportError:  # Windows: builds that run at once are not serialized
    fcntl = None  # type: ignore[assignment]

from agent_contract.artifacts import Artifact

CACHE_ENV = "AGENT_ACCESS_CACHE_DIR"
#: The cache's bound in megabytes (MB = 10**6 bytes) over every site's files.
CACHE_MAX_ENV = "AGENT_ACCESS_CACHE_MAX_MB"
#: The default bound: five 10,000-entry sites' caches (~380 MB each), or a `build` and a
#: `serve` cache of two such sites with room to spare.
DEFAULT_MAX_MB = 2048
# v2: every frame carries its length and a checksum, checked before it is unpickled (v1
# frames had none, so a flipped byte inside a string was published as content).
# v3: the checksum is CRC-32, not SHA-256: it catches every burst of damage up to 32 bits
# and almost all others, which is what a disk or a killed writer does (the cache is not
# a security boundary: it lives in the user's own folder), at 0.2 s instead of 0.9 s for
# the 380 MB cache of a 10,000-entry site.
# v4: each frame's pickle is followed by its blobs' region (`Blob`), checked by a CRC-32
# of its own.
# (A blob is now pickled as a call to `_blob_in_frame`, no longer as a persistent ID: the
# framing is the same, and a file of the older code is never read, its header's code
# fingerprint being another.)
_MAGIC = b"agent-access build cache v4\n"
#: The packages whose code decides what a record holds.
_CODE_PACKAGES = ("content_builder", "agent_contract")


@cache
def code_fingerprint() -> str:
    """SHA-256 of the builder's and the contract's sources and of the library versions."""
    # The libraries' own version attributes, which a build has imported: the strings of
    # their distributions' metadata, without importlib.metadata searching every installed
    # distribution for them (5 ms of every build, issue 22).
    import pydantic
    import pydantic_core
    import yaml

    digest = hashlib.sha256(sys.version.encode())
    versions = (pydantic.VERSION, pydantic_core.__version__, yaml.__version__)
    for name, version in zip(("pydantic", "pydantic-core", "PyYAML"), versions, strict=True):
        digest.update(f"{name}={version};".encode())
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


def max_bytes() -> int:
    chosen = os.environ.get(CACHE_MAX_ENV, "")
    try:
        megabytes = float(chosen) if chosen else DEFAULT_MAX_MB
    except ValueError:
        megabytes = DEFAULT_MAX_MB
    return int(max(megabytes, 0) * 1_000_000) if megabytes == megabytes else 0  # NaN: 0


class EntryCache:
    """Records by entry key. A build appends the records it added to the file; when most
    of the file is records no build uses any more (removed or edited entries), the next
    save rewrites it with the used ones only.

    A series of builds of one site (`serve --watch`) passes each build the cache the last
    one used (`open(..., last=)`): its records are taken from memory while the file is
    the one it wrote, not read back from disk."""

    def __init__(
        self,
        file: Path | None,
        header: bytes,
        records: dict[str, Record],
        appendable: bool,
        latest: dict[str, Any] | None = None,
        blobs: BlobFile | None = None,
        latest_seen: tuple[int, ...] | None = None,
    ):
        self.file = file
        self.header = header
        self.records = records
        self.appendable = appendable  # the file holds this header: new records can follow
        self.used: set[str] = set()
        self.added: dict[str, dict[str, Any]] = {}
        self.signature = _signature(file) if file is not None else (-1, -1)
        self.blobs = blobs  # the file the records' BlobRefs are read from
        self._latest = latest  # the values `put_latest` kept, read when first asked
        self._latest_seen = latest_seen  # the side file they were read from (`_signature`)
        self._latest_put: dict[str, Any] = {}  # put_latest, written by save
        self._holds = False  # off, but holding records for this build (`hold_for_this_build`)

    @classmethod
    def disabled(cls) -> EntryCache:
        return cls(None, b"", {}, False)

    @classmethod
    def open(cls, site_root: Path, settings: bytes, last: EntryCache | None = None) -> EntryCache:
        folder = cache_dir()
        if folder is None:
            return cls.disabled()
        root = str(site_root.resolve())
        # One file per site folder and settings (say `build` and `serve`, whose base URLs
        # differ, do not evict each other), at most KEEP_PER_SITE per folder (`save`
        # removes older ones); the code is in the header, so an upgrade replaces the file
        # rather than adding one.
        site = hashlib.sha256(root.encode()).hexdigest()[:12]
        where = hashlib.sha256(root.encode() + b"\0" + settings).hexdigest()[:12]
        file = folder / f"build-{site}-{where}.pickle"
        header = (
            hashlib.sha256(
                code_fingerprint().encode() + b"\0" + root.encode() + b"\0" + settings
            ).hexdigest()
        ).encode() + b"\n"
        unchanged = (
            last is not None
            and last.file == file
            and last.header == header
            and last.appendable
            and last.signature == _signature(file)
        )
        _touch(file)  # used now: the least recently used files are pruned first
        if unchanged:
            assert last is not None
            # Records are keyed by content: one another build added meanwhile is only
            # missing here, never wrong.
            return cls(
                file, header, last.records, True, last._latest, last.blobs, last._latest_seen
            )
        records, whole, blobs = _read_records(file, header)
        return cls(file, header, records, whole and bool(records), blobs=blobs)

    def get(self, key: str, field: str) -> Any | None:
        record = self.records.get(key)
        if record is None:
            return None
        try:  # a few fields, searched in order (inline: 130,000 calls an edit)
            at = record.index(field)
        except ValueError:
            return None
        if at % 2:  # a value equal to the field's name came first
            at = _field_at(record, field)
            if at < 0:
                return None
        self.used.add(key)
        return record[at + 1]

    def blob(self, value: Blob | BlobRef) -> bytes:
        """A blob's bytes: a `Blob` put by this build, or a `BlobRef` read from the file."""
        if type(value) is Blob:
            return value.data
        assert self.blobs is not None, "a BlobRef comes only from a file that was read"
        return self.blobs.read(value)  # type: ignore[arg-type]

    def put(self, key: str, field: str, value: Any) -> None:
        if self.file is None and not self._holds:  # off: hold nothing (peak memory)
            return
        # A new tuple per put (a record has a handful of fields): no dict, which the
        # collector would walk until a full collection (20,000 entries' records in a cold
        # build, the stat records of the files an edit read).
        record = self.records.get(key, ())
        at = _field_at(record, field)
        changed = (
            (*record, field, value) if at < 0 else (*record[:at], field, value, *record[at + 2 :])
        )
        self.records[key] = self.added[key] = changed
        self.used.add(key)

    def hold_for_this_build(self) -> None:
        """A cache that is off holds what is put from now on, for this build only (never
        saved): the entries rendered ahead by prime.py, which the build takes from it."""
        self._holds = True

    @property
    def enabled(self) -> bool:
        return self.file is not None

    def save(self) -> None:
        """Append the new records (or rewrite the file), atomically for a rewrite; a cache
        that cannot be written is only a slower next build, never a failed one. One build
        at a time writes (`_locked`): two appending at once would interleave frames."""
        if self.file is None:
            return
        stale = len(self.records) - len(self.used)
        rewrite = not self.appendable or stale > max(len(self.used), 1000)
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.file.parent):
                if rewrite or self.added or self._latest_put:
                    self._write(rewrite)
                prune(self.file.parent, max_bytes(), keep=self.file)  # the bound, always
        except OSError:
            return
        self.added = {}
        self.appendable = True

    def _write(self, rewrite: bool) -> None:
        """Under the lock: the side file, then the records appended or rewritten."""
        assert self.file is not None
        self._save_latest()
        # Appended only to a file that still starts with this cache's header: since it
        # was read, another build (other code) may have replaced it, or a prune removed
        # it (an append would then start a file without a header).
        if rewrite or not _starts_with(self.file, _MAGIC + self.header):
            kept = {key: self.records[key] for key in self.used}
            _write_new(self.file, _MAGIC + self.header, self._for_rewrite(kept))
            self.records = kept
            # Their BlobRefs name the replaced file, which `blobs` keeps open: the next
            # build of a series reads the new one rather than keeping the old one's space.
            self.signature = (-1, -1) if self.blobs is not None else _signature(self.file)
            return
        if self.added:
            with self.file.open("ab") as stream:
                _write_frame(stream, self.added)
        self.signature = _signature(self.file)

    def _for_rewrite(self, records: dict[str, Record]) -> dict[str, Record]:
        """`records` with each BlobRef (a field's value, or an item of a field's tuple:
        where records hold blobs) as a blob copied from the file being replaced: its frame
        numbers and offsets name that file's, not the new one's."""
        blobs = self.blobs
        if blobs is None:
            return records

        def copied(value: Any) -> Any:
            if type(value) is not tuple:
                return value
            if is_blob_ref(value):
                return _BlobToCopy(blobs, value)
            if any(map(is_blob_ref, value)):
                return tuple(_BlobToCopy(blobs, v) if is_blob_ref(v) else v for v in value)
            return value

        return {
            key: tuple(copied(item) if at % 2 else item for at, item in enumerate(record))
            for key, record in records.items()
        }

    # Results about the whole site, not one entry (the search keywords' ranking state,
    # what the last passing build proved): each build replaces the value, so it is kept
    # beside the records, in a small file of its own rewritten whole (appended to the
    # records, every build would add a copy).
    def get_latest(self, name: str) -> Any | None:
        """The value the last build that saved put under `name`, if any."""
        if self.file is None:
            return None
        if self._latest is None:
            side = _latest_file(self.file)
            # Which file was read: taken before reading, so a file replaced meanwhile
            # is read again by `_save_latest`, never taken for the one read.
            self._latest_seen = _signature(side)
            self._latest = _read_latest(side, self.header)
        return self._latest.get(name)

    def put_latest(self, name: str, value: Any) -> None:
        """`name`'s value from now on, written by `save` (a failed build changes nothing)."""
        if self.file is not None:
            self._latest_put[name] = value

    def _save_latest(self) -> None:
        if self.file is None or not self._latest_put:
            return
        side = _latest_file(self.file)
        # Read again under the lock if another build saved its values meanwhile (the file
        # is always replaced, never written in place: a new inode). Not read again when it
        # is the very file this cache read (14 MB at 10,000 entries: ~0.3 s an edit).
        known = self._latest is not None and _signature(side) == self._latest_seen
        before = self._latest if known else _read_latest(side, self.header)
        values = {**before, **self._latest_put}  # type: ignore[dict-item]
        _write_new(side, _MAGIC + self.header, values)
        self._latest = values
        self._latest_seen = _signature(side)
        self._latest_put = {}

    # What the last build that passed every check proved (`Proven`).
    def proven(self, published: frozenset[str]) -> Proven | None:
        """What the last build that passed proved, if its links still hold (no path gone)."""
        found = self.get_latest(_PROVEN)
        return found if isinstance(found, Proven) and found.links_hold(published) else None

    def record_proof(
        self,
        published: frozenset[str],
        identities: Sequence[str | None],
        other_files: Iterable[Artifact],
        coverage: tuple[str, str],
    ) -> None:
        """What this build proved, for the next: called only once every check has passed."""
        if not self.enabled or None in identities:
            return  # the cache off, or an entry without a key: nothing to keep it or name it by
        proof = Proven(
            published,
            frozenset(identities),  # type: ignore[arg-type]
            frozenset(artifact.sha256 for artifact in other_files),
            coverage,
        )
        if self.get_latest(_PROVEN) != proof:  # the same proof again: nothing to write
            self.put_latest(_PROVEN, proof)


_PROVEN = "proven"  # its name among the values kept beside the records


@dataclass(frozen=True)
class Proven:
    """What a build that passed every check proved, so that the next proves only what
    changed. The cross-checks (validate.py) ask that every link in every published file
    name a published file, and that the discovery document and the OpenAPI description
    cover every published path. An entry's links depend only on its identity (its cache
    key, which holds its bytes, under the settings and code the cache is keyed by, and
    its lock stamp); any other file's on its bytes (its sha256); whether a link resolves
    only on the set of published paths. So when a build publishes every path the last
    passing one published, the links of an entry of the same identity or a file of the
    same sha256 resolve again (at 10,000 entries after one edit: one entry's links, not
    about a million); when it publishes exactly those paths, coverage by the same
    discovery and OpenAPI bytes holds again."""

    published: frozenset[str]  # the build's published paths
    entries: frozenset[str]  # entry_identity of every entry, whose links all resolved
    files: frozenset[str]  # sha256 of every other file, whose links all resolved
    coverage: tuple[str, str]  # sha256 of the discovery document and the OpenAPI description

    def links_hold(self, published: frozenset[str]) -> bool:
        """A link that named a published path still does when no path was taken away
        (`links.resolves` asks for membership, or for a template, one member)."""
        return published.issuperset(self.published)

    def coverage_holds(self, published: frozenset[str], coverage: tuple[str, str]) -> bool:
        """The same discovery and OpenAPI bytes cover the same paths, and only those: a
        path added is one they may not cover."""
        return coverage == self.coverage and published == self.published

    def settled(self, identities: Sequence[str | None]) -> list[bool]:
        """Per entry, whether its links are proven (an entry without a cache key never is)."""
        return [identity is not None and identity in self.entries for identity in identities]


def entry_identity(cache_key: str, stamp: tuple[str, str]) -> str:
    """An entry's identity: the key its rendered pieces are cached by (which ends in the
    64 hex digits of its bytes' SHA-256) and their lock stamp (a timestamp and a version,
    whose patterns hold no NUL), joined by NUL: no two differ and join alike."""
    return "\0".join((cache_key, *stamp))


#: Cache files kept per site folder: the settings of `build` and of `serve` (their base
#: URLs differ); older ones (a site.yaml edited, another --base-url) are removed.
KEEP_PER_SITE = 2
# The names before the site folder was part of them (`build-<24 hex>.pickle`).
_OLD_NAME = re.compile(r"build-[0-9a-f]{24}\.pickle")
_LOCK_NAME = ".lock"


def prune(folder: Path, limit: int, keep: Path | None = None) -> None:
    """Bring the cache folder within its bound: at most KEEP_PER_SITE files per site
    folder, none named the old way, and then, least recently used first (by mtime:
    `open` touches the file it uses), whole files removed until the rest takes at most
    `limit` bytes. `keep` (the file just written) is never removed."""
    files: list[tuple[int, int, Path]] = []  # (mtime, bytes with its side file, file)
    for path in folder.glob("build-*.pickle"):
        if _OLD_NAME.fullmatch(path.name):
            _remove(path)
            continue
        try:
            stat = path.stat()
        except OSError:
            continue
        side = _latest_file(path)
        size = stat.st_size + (side.stat().st_size if side.exists() else 0)
        files.append((stat.st_mtime_ns, size, path))
    files.sort(key=lambda found: (found[0], found[2].name), reverse=True)  # newest first
    per_site: dict[str, int] = {}
    total = 0
    for _, size, path in files:
        site = path.name.split("-")[1]
        per_site[site] = per_site.get(site, 0) + 1
        if path != keep and (per_site[site] > KEEP_PER_SITE or total + size > limit):
            _remove(path)
            continue
        total += size
    kept = {_latest_file(path) for _, _, path in files if path.exists()}
    for side in folder.glob(f"build-*.pickle{_LATEST_SUFFIX}"):
        if side not in kept:  # its records' file was removed
            side.unlink(missing_ok=True)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    _latest_file(path).unlink(missing_ok=True)


def _touch(file: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(file)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock (flock) on the cache folder's lock file while a build
    writes: one writer at a time, whatever the number of builds."""
    if fcntl is None:
        yield
        return
    handle = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


#: The file of a cache file's `put_latest` values, pruned with it (`*.pickle` globs
#: above do not match it).
_LATEST_SUFFIX = ".latest"


def _latest_file(file: Path) -> Path:
    return file.with_name(file.name + _LATEST_SUFFIX)


def _read_latest(side: Path, header: bytes) -> dict[str, Any]:
    """The values of a `put_latest` file: {} if missing, damaged or for other settings."""
    try:
        with side.open("rb") as stream:
            if stream.read(len(_MAGIC)) != _MAGIC or stream.readline() != header:
                return {}
            values, _ = _read_frame(stream)  # type: ignore[arg-type]
    except Exception:  # missing, truncated, corrupt: nothing is known
        return {}
    return values if isinstance(values, dict) else {}


def _starts_with(file: Path, head: bytes) -> bool:
    try:
        with file.open("rb") as stream:
            return stream.read(len(head)) == head
    except OSError:
        return False


def _signature(file: Path) -> tuple[int, ...]:
    """Which file is at `file` now, as it is: an append changes its size and times, a
    replacement its inode too; (-1, -1) when there is none."""
    try:
        stat = file.stat()
    except OSError:
        return (-1, -1)
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _write_new(file: Path, head: bytes, records: Any) -> None:
    """`records` as the whole of `file`, replaced atomically. Their blobs keep reading
    from the file they were read from (its descriptor stays open while one of them is
    alive): a blob never moves, so a request thread of `serve --watch` reading one never
    races a rewrite. The next build reads the new file (`save` forgets the signature)."""
    handle, temporary = tempfile.mkstemp(prefix=".build-", dir=file.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(head)
            _write_frame(stream, records)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


#: A record, in memory and in a frame: field, value, field, value..., each field once.
#: Not a dict, which the garbage collector walks until a full collection; not pairs,
#: another tuple per field, and one more level the collector untracks one collection at a
#: time.
Record = tuple[Any, ...]


def _joined(before: Record, after: Record) -> Record:
    """A record of two frames: `after`'s fields win, `before`'s others are kept."""
    fields = dict(zip(before[::2], before[1::2], strict=True))
    fields.update(zip(after[::2], after[1::2], strict=True))
    return tuple(item for pair in fields.items() for item in pair)


def _field_at(record: tuple[Any, ...], field: str) -> int:
    """Where `field` is in a flat record (its value follows), or -1."""
    at = 0
    while True:
        try:
            at = record.index(field, at)
        except ValueError:
            return -1
        if at % 2 == 0:
            return at
        at += 1  # a value equal to the field's name: look on


_LENGTH = 8
_DIGEST = 4


class _Store:
    """A cache file open for reading its blobs: the file as it was opened, whatever
    happens to its name later (a rewrite replaces the file, never its bytes; an append only
    adds to it). Closed when the last reader of it goes."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @classmethod
    def open(cls, file: Path) -> _Store:
        return cls(os.open(file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))

    def stream(self) -> BinaryIO:
        """A buffered reader from the start of the file (one open file: the bytes checked
        while reading it are those the blobs are later read from)."""
        return os.fdopen(os.dup(self._fd), "rb")

    def read(self, offset: int, size: int) -> bytes:
        parts = []
        while size:
            part = os.pread(self._fd, size, offset)
            if not part:  # only if the file was cut in place, which no build does
                raise OSError(f"build cache: a blob past the end of the file ({offset})")
            parts.append(part)
            offset, size = offset + len(part), size - len(part)
        return b"".join(parts)

    # `os.close` bound here: at interpreter exit a module's globals may be gone already
    # ("'NoneType' object has no attribute 'close'" was printed).
    def __del__(self, close: Callable[[int], None] = os.close) -> None:
        with contextlib.suppress(OSError):
            close(self._fd)


class Blob:
    """Bytes a record holds that most builds never look at (an entry's own files, half of a
    10,000-entry site's cache): written after the frame's pickle as raw bytes, checked with
    the frame when the cache is read (CRC-32), and read from the file only when asked for,
    so a cached build neither unpickles nor holds them. Put into a record as a `Blob`; read
    back as a `BlobRef` (`EntryCache.blob`). Pickled anywhere else, a blob is its bytes."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    @property
    def size(self) -> int:
        return len(self.data)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Blob, (self.data,))  # outside a cache frame (`_FramePickler`): its bytes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Blob) and self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Blob({self.size} bytes)"


#: A blob as a record read from the file holds it: (BLOB_TAG, frame, offset in the frame's
#: region, size). A plain tuple of a string and ints, not an object: the garbage collector
#: stops walking such a tuple once it has seen it, and stops walking a record (a dict)
#: holding only such values at its first full collection. 60,000 blob objects and the
#: records holding them were most of the ~1.4 s a 10,000-entry edit spent collecting
#: (docs/decisions.md, issue 22, session 24).
BlobRef = tuple[str, int, int, int]
BLOB_TAG = "\0blob"


def is_blob_ref(value: Any) -> bool:
    return type(value) is tuple and len(value) == 4 and value[0] == BLOB_TAG


class BlobFile:
    """The cache file a build's records were read from, and where each of its frames'
    regions starts: what a `BlobRef` is read from. It keeps the file open (a rewrite
    replaces the name, never these bytes) while a record or an artifact needs it."""

    __slots__ = ("_starts", "_store")

    def __init__(self, store: _Store, starts: list[int]) -> None:
        self._store = store
        self._starts = starts

    def read(self, ref: BlobRef) -> bytes:
        _, frame, offset, size = ref
        return self._store.read(self._starts[frame] + offset, size)


class _Region:
    """The blobs of the frame being written, in order, and the size of their region."""

    def __init__(self) -> None:
        self.blobs: list[Blob | _BlobToCopy] = []
        self.size = 0

    def place(self, blob: Blob | _BlobToCopy) -> int:
        """The blob's offset in the region, once added to it."""
        offset = self.size
        self.blobs.append(blob)
        self.size += blob.size
        return offset


class _FramePickler(pickle.Pickler):
    """Pickles a frame's records with each blob as a call that places it in the frame's
    region (`_blob_in_frame`, read back by `_FrameUnpickler`), not as its bytes."""

    def __init__(self, stream: Any, region: _Region) -> None:
        super().__init__(stream, protocol=pickle.HIGHEST_PROTOCOL)
        self.region = region

    def reducer_override(self, obj: Any) -> Any:
        # Asked only of objects pickle has no fast path for (not of str, bytes, int,
        # tuples, lists, dicts): `persistent_id`, asked of every object, was a Python
        # call per string and tuple of every record (a quarter of a save).
        if type(obj) is Blob or type(obj) is _BlobToCopy:
            return (_blob_in_frame, (self.region.place(obj), obj.size))
        return NotImplemented


class _BlobToCopy:
    """A blob of the file being replaced, written into the new one (`_for_rewrite`): read
    when its frame's region is written, one at a time, never all held at once."""

    __slots__ = ("_file", "_ref")

    def __init__(self, file: BlobFile, ref: BlobRef) -> None:
        self._file, self._ref = file, ref

    @property
    def size(self) -> int:
        return self._ref[3]

    @property
    def data(self) -> bytes:  # as a Blob's: read now, from the file being replaced
        return self._file.read(self._ref)


def _blob_in_frame(offset: int, size: int) -> BlobRef:
    """What `_FrameUnpickler` turns into a blob of its frame; anywhere else, an error."""
    raise pickle.UnpicklingError("a build cache blob outside its cache frame")


class _FrameUnpickler(pickle.Unpickler):
    """Reads a frame's records back, each blob placed by offset in the frame's region
    (its file and absolute offset set once the region is checked, `_read_frame`)."""

    def __init__(self, stream: Any, frame: int | None) -> None:
        super().__init__(stream)
        self.frame = frame  # None: a file whose records hold no blob (`_read_latest`)
        self.region_end = 0  # the end of the furthest blob, checked against the region

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == _blob_in_frame.__name__:
            return self._blob_at
        return super().find_class(module, name)

    def _blob_at(self, offset: int, size: int) -> BlobRef:
        if self.frame is None or not (isinstance(offset, int) and isinstance(size, int)):
            raise pickle.UnpicklingError("a build cache blob where none can be")
        self.region_end = max(self.region_end, offset + size)
        return (BLOB_TAG, self.frame, offset, size)


class _Counted:
    """The bytes pickle writes or reads through it, counted and checksummed on the way, so
    that a frame is never held whole in memory twice (a 10,000-entry site's cache is
    ~380 MB: as one `pickle.dumps` it doubled the build's peak memory)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.length = 0
        self.crc = 0

    def _seen(self, data: bytes | memoryview) -> None:
        self.length += len(data)
        self.crc = zlib.crc32(data, self.crc)

    def write(self, data: bytes) -> int:
        self._seen(data)
        return self.stream.write(data)

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self._seen(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:
        read = self.stream.readinto(buffer)  # type: ignore[attr-defined]
        self._seen(memoryview(buffer)[:read])
        return read  # type: ignore[no-any-return]

    def readline(self) -> bytes:
        data = self.stream.readline()
        self._seen(data)
        return data

    def trailer(self) -> bytes:
        return self.length.to_bytes(_LENGTH, "big") + self.crc.to_bytes(_DIGEST, "big")


def _write_frame(stream: BinaryIO, records: Any) -> None:
    """One frame: the pickled records, then their length and CRC-32 (a trailer, so that
    a frame can be appended in one pass); then the region of the blobs they hold: its
    length, their bytes, its CRC-32."""
    counted = _Counted(stream)
    region = _Region()
    _FramePickler(counted, region).dump(records)
    stream.write(counted.trailer())
    stream.write(region.size.to_bytes(_LENGTH, "big"))
    crc = 0
    for blob in region.blobs:
        data = blob.data
        crc = zlib.crc32(data, crc)
        stream.write(data)
    stream.write(crc.to_bytes(_DIGEST, "big"))


_CHUNK = 1 << 20


def _read_frame(stream: BinaryIO, frame: int | None = None) -> tuple[Any, int]:
    """The next frame and where its blobs' region starts, returned only once its pickle
    and the region match their lengths and checksums (the region is checked, not kept: its
    blobs read from the file when asked for, `BlobFile`); EOFError at the end of the file,
    ValueError for a frame cut short or damaged. `frame`: its number in the file, which
    its blobs are named by (None: a blob there is damage)."""
    if not stream.peek(1)[:1]:  # type: ignore[attr-defined]
        raise EOFError
    counted = _Counted(stream)
    unpickler = _FrameUnpickler(counted, frame)
    try:
        records = unpickler.load()
    except Exception as error:  # damaged bytes can fail in any way while unpickling
        raise ValueError("a cache frame cut short or damaged") from error
    if stream.read(_LENGTH + _DIGEST) != counted.trailer():
        raise ValueError("a cache frame cut short or damaged")
    size = int.from_bytes(stream.read(_LENGTH).ljust(_LENGTH, b"\xff"), "big")
    start = stream.tell()
    if unpickler.region_end > size:
        raise ValueError("a cache blob outside its frame's region")
    crc, left, buffer = 0, size, bytearray(min(size, _CHUNK))
    while left:
        read = stream.readinto(memoryview(buffer)[: min(left, _CHUNK)])  # type: ignore[attr-defined]
        if not read:
            raise ValueError("a cache frame's blobs cut short")
        crc = zlib.crc32(memoryview(buffer)[:read], crc)
        left -= read
    if stream.read(_DIGEST) != crc.to_bytes(_DIGEST, "big"):
        raise ValueError("a cache frame's blobs cut short or damaged")
    return records, start


def _read_records(file: Path, header: bytes) -> tuple[dict[str, Record], bool, BlobFile | None]:
    """The records of every frame, later ones winning field by field, whether the file was
    whole, and the file their blobs are read from. A frame cut short (a build killed while
    appending) ends the reading: the frames before it are kept, and the next save rewrites
    the file."""
    records: dict[str, Record] = {}
    starts: list[int] = []
    blobs: BlobFile | None = None
    try:
        store = _Store.open(file)
        blobs = BlobFile(store, starts)
        with store.stream() as stream:
            if stream.read(len(_MAGIC)) != _MAGIC or stream.readline() != header:
                return {}, False, None  # another version, other settings, not ours: not unpickled
            while True:
                try:
                    frame, start = _read_frame(stream, len(starts))
                except EOFError:
                    break
                if not isinstance(frame, dict) or not all(
                    type(key) is str and type(value) is tuple for key, value in frame.items()
                ):
                    return {}, False, None
                starts.append(start)
                if not records:  # the first frame: its dict as it is, not copied
                    records = frame
                    continue
                for key, value in frame.items():
                    before = records.get(key)
                    records[key] = value if before is None else _joined(before, value)
    except Exception:  # missing, truncated, corrupt: what was read whole is kept
        return records, False, blobs if records else None
    return records, True, blobs
