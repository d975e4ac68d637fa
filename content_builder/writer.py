"""Write the artifacts to the output folder, all or nothing.

The new output is staged in the spare (`.dist.spare/dist` beside `dist`: the output the
last build replaced), brought to exactly the new files: a file the live output already
holds is kept when the spare has that very file (the same inode) or hard-linked from the
live output, the others written; then `manifest.json` (path -> sha256, size, media type,
Cache-Control; what the publisher and `verify --expect-from` read). The spare is then
exchanged with the live output in one atomic rename, and the output it replaced is the
next spare. A failure at any point leaves the live output exactly as it was; a spare
left half-updated is trusted for nothing by the next build (`_stage`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import operator
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any

from pydantic_core import from_json

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from agent_contract.artifacts import Artifact
from agent_contract.manifest import (
    MANIFEST_NAME,
    BuildManifest,
    ManifestEntry,
    build_manifest,
    entry,
    entry_signature,
    is_build_manifest,
    manifest_body,
    read_manifest,
)
from content_builder.errors import SiteDataError
from content_builder.loaded import display_path


def _entries(
    artifacts: Iterable[Artifact], written: Mapping[str, Any] | None = None
) -> dict[str, ManifestEntry]:
    """Each artifact's manifest entry, by path, in the order given. Where `written` (the
    live manifest's entries, when it is the very file the last build wrote:
    `_written_before`) has the same entry, that dict itself: an edit at 10,000 entries
    then makes a handful of dicts, not 48,000 (allocations enough to start a full
    garbage collection of the build's heap)."""
    # A rule's headers asked once per rule, not per file: a dozen rules, 48,000 files at
    # 10,000 entries (a frozen dataclass hashes in Python: not a key worth 48,000 calls).
    headers: dict[int, tuple[str, str]] = {}  # by id: each rule lives in ROUTE_RULES
    before = written or {}
    entries = {}
    for artifact in artifacts:
        rule = artifact.rule
        pair = headers.get(id(rule))
        if pair is None:
            pair = headers[id(rule)] = (rule.media_type, rule.cache_control)
        sha256, size, path = artifact.sha256, artifact.size, artifact.path
        old = before.get(path)
        if (
            old is not None
            and old["sha256"] == sha256
            and old["size"] == size
            and (old["media_type"], old["cache_control"]) == pair
            and tuple(old) == _ENTRY_FIELDS  # its fields and their order: the same bytes
        ):
            entries[path] = old
        else:
            entries[path] = entry(sha256, size, *pair)
    return entries


_ENTRY_FIELDS = tuple(entry("", 0, "", ""))


def manifest(artifacts: list[Artifact], base_url: str) -> BuildManifest:
    return build_manifest(base_url, _entries(artifacts))


@dataclass(frozen=True)
class FileReport:
    path: str
    size: int
    status: str  # new | changed | unchanged | removed


@dataclass(frozen=True)
class ChangeReport:
    """What a build changed: a row per file written or removed (with `every`, per file
    published too), and the counts of the whole. Not a row per file by default: after one
    edit of a 10,000-entry site, 48,000 rows of which a handful say something, and the
    objects cost the edit a full garbage collection (~0.3 s) for nothing."""

    rows: list[FileReport]  # in path order, then the removed files in path order
    files: int  # files published (the manifest aside)
    changed: int  # files new, changed or removed


def compare(
    artifacts: list[Artifact],
    previous: dict[str, Any] | None,
    entries: dict[str, ManifestEntry] | None = None,  # each artifact's, when already made
    every: bool = False,  # a row for every file, the unchanged ones too
) -> ChangeReport:
    before: dict[str, Any] = (previous or {}).get("files", {})
    if entries is None or len(entries) != len(artifacts):
        entries = _entries(artifacts)
        if len(entries) != len(artifacts):  # the same path twice: one row each, as ever
            return _compare_each(artifacts, before, every)
    rows = []
    unchanged = matched = 0
    # Sorted paths, not artifacts by key: the writer hands them over in order already,
    # and sorting sorted strings is one pass.
    for path in sorted(entries):
        new = entries[path]
        old = before.get(path)
        if old is None:
            rows.append(FileReport(path, new["size"], "new"))
            continue
        matched += 1
        if old == new or entry_signature(old) == entry_signature(new):  # equal dicts: fast
            unchanged += 1
            if every:
                rows.append(FileReport(path, new["size"], "unchanged"))
        else:
            rows.append(FileReport(path, new["size"], "changed"))
    removed = (
        [FileReport(path, 0, "removed") for path in sorted(before) if path not in entries]
        if matched < len(before)
        else []
    )
    return ChangeReport(rows + removed, len(entries), len(entries) - unchanged + len(removed))


def _compare_each(artifacts: list[Artifact], before: dict[str, Any], every: bool) -> ChangeReport:
    rows = []
    unchanged = 0
    for artifact in sorted(artifacts, key=_by_path):
        old = before.get(artifact.path)
        if old is None:
            status = "new"
        elif entry_signature(old) == entry_signature(_entries([artifact])[artifact.path]):
            status = "unchanged"
            unchanged += 1
            if not every:
                continue
        else:
            status = "changed"
        rows.append(FileReport(artifact.path, artifact.size, status))
    current = {artifact.path for artifact in artifacts}
    removed = [FileReport(path, 0, "removed") for path in sorted(before) if path not in current]
    return ChangeReport(rows + removed, len(artifacts), len(artifacts) - unchanged + len(removed))


_by_path = operator.attrgetter("path")


def write_output(
    artifacts: list[Artifact], out_dir: Path, base_url: str, every: bool = False
) -> ChangeReport:
    """Write the output; the report has a row per file only with `every` (`compare`)."""
    out_dir = out_dir.absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # One writer at a time per parent folder: two builds staging in one spare would swap
    # in a mixture. (Advisory, flock; where there is none, builds are not serialized.)
    with _locked(out_dir.parent):
        previous = _read_previous(out_dir)
        if out_dir.exists() and (
            not out_dir.is_dir() or (previous is None and any(out_dir.iterdir()))
        ):
            # Never replace a folder this tool did not write: `--out ~` must not eat a home.
            raise SiteDataError.single(
                display_path(out_dir),
                None,
                f"exists and is not a build output (no {MANIFEST_NAME}); choose another --out",
            )
        written = _written_before(out_dir, previous)  # the stamp, read before `_stage` clears it
        # In path order: the change report and the manifest then sort what is sorted.
        entries = _entries(sorted(artifacts, key=_by_path), written.files if written else None)
        report = compare(artifacts, previous, entries, every)
        body = manifest_body(build_manifest(base_url, entries))
        staging = _staging_folder(out_dir)
        _stage(staging, artifacts, out_dir, body, previous, written)
        if out_dir.exists():
            _exchange(staging, out_dir)  # the spare now holds the output it replaced
        else:
            os.rename(staging, out_dir)
        # Which manifest vouches for the live files' times: that very inode, untouched
        # since (a ctime cannot be set back). A manifest touched or edited by hand, or a
        # build killed before this line, and the next build trusts no time (`_holds`).
        done = (out_dir / MANIFEST_NAME).stat()
        stamp = _stamp_file(out_dir)
        with contextlib.suppress(OSError):
            stamp.parent.mkdir(parents=True, exist_ok=True)  # a first build's spare
            stamp.write_text(f"{done.st_ino} {done.st_ctime_ns}")
        return report


def _read_previous(out_dir: Path) -> BuildManifest | None:
    """`read_manifest`, parsed by pydantic-core's JSON reader: the 15 MB manifest of a
    10,000-entry site in 0.06 s, not ~0.19 s, in a build's heap (every edit).
    The same values for any JSON both accept; a text it refuses that json accepts (an
    escaped lone surrogate) is read by `read_manifest` as before."""
    try:
        data = from_json((out_dir / MANIFEST_NAME).read_bytes(), cache_strings="keys")
    except OSError:
        return None
    except ValueError:
        return read_manifest(out_dir)
    return data if is_build_manifest(data) else None


_STAMP = ".manifest-stamp"


def _stamp_file(out_dir: Path) -> Path:
    """In the spare (a folder named like the output, so a `dist/` ignore line covers it):
    read by the next build before it empties the spare of all but the new files."""
    return spare_folder(out_dir) / _STAMP


def spare_folder(out_dir: Path) -> Path:
    """Where the output before the last is kept, to stage the next one in:
    `.dist.spare/dist` beside `dist`. The last part is the output's own name, so a
    `.gitignore` line such as `dist/` (a folder of that name at any depth) ignores it."""
    return out_dir.parent / f".{out_dir.name}.spare" / out_dir.name


def _staging_folder(out_dir: Path) -> Path:
    """The spare: the output the last build replaced, whose unchanged files are hard links
    of the live output's (so a build after one edit stats 40,000 files and replaces a few,
    instead of linking 40,000 and removing 40,000 more). Nothing in it is trusted by
    itself (`_stage`), so a spare a killed build left half-updated, or one changed by hand,
    is only slower. A spare's place holding something this tool did not write (not a
    folder, or a non-empty folder without a manifest.json) is an error naming it."""
    spare = spare_folder(out_dir)
    real_folder = spare.is_dir() and not spare.is_symlink()
    names = {path.name for path in spare.iterdir()} if real_folder else set()
    if (os.path.lexists(spare) and not real_folder) or (
        names and not names & {MANIFEST_NAME, _STAMP}
    ):
        # Not a folder this tool wrote: never emptied, as `--out` is not (write_output).
        raise SiteDataError.single(
            display_path(spare), None, "is not the build's spare output folder; remove it"
        )
    if not (spare / MANIFEST_NAME).is_file():
        spare.mkdir(parents=True, exist_ok=True)
        # Marked as ours from the start (manifest.json, replaced last by `_stage`): a
        # build that stops while filling it leaves a spare the next one recognizes.
        (spare / MANIFEST_NAME).write_bytes(b"{}\n")
    return spare


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _write_new_file(path: str, body: bytes) -> None:
    # os.write, not a file object: no buffered stream made and closed per file (there
    # are a thousand at 100 entries, issue 22).
    handle = os.open(path, _NEW_FILE, 0o644)
    try:
        left = memoryview(body)
        while left:  # a regular file takes it whole, unless a signal or a full disk cuts in
            left = left[os.write(handle, left) :]
    finally:
        os.close(handle)


def _stage(
    staging: Path,
    artifacts: list[Artifact],
    out_dir: Path,
    body: bytes,
    previous: BuildManifest | None,
    written: _Written | None,
) -> None:
    """Bring `staging` to exactly the artifacts and `body` as manifest.json. A file it
    holds is kept only when it is the very file (the same inode) the live output holds
    for that path and the live file is known to hold the artifact's bytes (`_holds`); any
    other is removed (never written in place: it may share its inode with the live
    output) and replaced by a hard link of the live file when that holds the bytes, else
    written. A build stopped here leaves the live output as it was."""
    keys = [artifact.key for artifact in artifacts]
    spare = _clear_spare(str(staging), {*keys, MANIFEST_NAME})  # the manifest: replaced last
    made: set[str] = set()
    memo: dict[str, bool] = {}
    folders_hold: dict[str, bool] = {}  # by key's folder: `_folder_holds`, asked once each
    # Strings, not Paths, in this loop: it runs once per published file (48,000 at
    # 10,000 entries), and so does nothing else it can do once per folder.
    staged, published = str(staging), str(out_dir)
    links = _Linker(published, staged)
    try:
        for artifact, key in zip(artifacts, keys, strict=True):
            folder = key.rpartition("/")[0]
            live = f"{published}/{key}"
            live_stat = None
            if previous is not None:
                folder_holds = folders_hold.get(folder)
                if folder_holds is None:
                    live_folder = f"{published}/{folder}" if folder else published
                    folder_holds = _folder_holds(published, live_folder, written, memo)
                    folders_hold[folder] = folder_holds
                if folder_holds:
                    live_stat = _holds(live, artifact, written)
            target = f"{staged}/{key}"
            kept = spare.file(key, folder, target)
            if kept is not None:
                if live_stat is not None and kept == (live_stat.st_dev, live_stat.st_ino):
                    continue
                os.unlink(target)
            if folder not in made:  # one mkdir per folder, not per file
                os.makedirs(os.path.dirname(target), exist_ok=True)
                made.add(folder)
            if live_stat is None or not links.link(folder, key):
                _write_new_file(target, artifact.body)
    finally:
        links.close()
    manifest = staging / MANIFEST_NAME
    os.replace(staged_file(manifest, body), manifest)  # never absent, never written in place
    _stamp_after_now(manifest)


def _stamp_after_now(manifest: Path) -> None:
    """Touch `manifest` until its mtime is later than a change made just before it: file
    times come from a coarse clock (one tick is 1-10 ms on Linux), so the files written
    in the manifest's tick would have times equal to it, and equal times are not trusted
    (`_holds`). One tick at most."""
    probe = manifest.with_name(".clock")
    probe.write_bytes(b"")
    try:
        changed = probe.stat().st_ctime_ns
    finally:
        probe.unlink()
    for _ in range(1000):
        os.utime(manifest)
        if manifest.stat().st_mtime_ns > changed:
            return
        time.sleep(0.001)


class _Linker:
    """Hard links from the live output into the staged one, made by name between the two
    folders' descriptors (linkat), one pair opened per folder: the kernel then resolves two
    names, not two whole paths. The first edit after a cold build links every file
    (48,000 at 10,000 entries: 0.23 -> 0.18 s). Where descriptors cannot be used (no
    `dir_fd` for link on this system, a folder that cannot be opened), by whole paths."""

    _BY_NAME = os.link in os.supports_dir_fd
    _FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)

    def __init__(self, live_root: str, staged_root: str) -> None:
        self._roots = (live_root, staged_root)
        self._pairs: dict[str, tuple[int, int] | None] = {}  # by folder key

    def link(self, folder: str, key: str) -> bool:
        """Whether the live file at `key` (in `folder`) is now linked at the staged `key`."""
        if self._BY_NAME and folder not in self._pairs:
            self._pairs[folder] = self._open(folder)
        pair = self._pairs.get(folder)
        live_root, staged_root = self._roots
        try:
            if pair is None:
                os.link(f"{live_root}/{key}", f"{staged_root}/{key}")
            else:
                name = key.rpartition("/")[2]
                os.link(name, name, src_dir_fd=pair[0], dst_dir_fd=pair[1])
        except OSError:  # a filesystem without hard links, or the file gone meanwhile
            return False
        return True

    def _open(self, folder: str) -> tuple[int, int] | None:
        opened: list[int] = []
        try:
            for root in self._roots:
                opened.append(os.open(f"{root}/{folder}" if folder else root, self._FOLDER))
        except OSError:
            for handle in opened:
                os.close(handle)
            return None
        return opened[0], opened[1]

    def close(self) -> None:
        for pair in self._pairs.values():
            for handle in pair or ():
                os.close(handle)
        self._pairs = {}


class _SpareFiles:
    """The files the spare holds once cleared (`_clear_spare`): by key, (device, inode).

    From the folder listing, not an lstat per file: a listing names each entry's inode
    (d_ino, POSIX's file serial number, st_ino on the usual Linux filesystems for a file
    that is not a mount point), and the device is the folder's. Where lstat of one file of
    a folder disagrees with its listing (a FUSE filesystem without use_ino numbers
    listings its own way; on overlayfs a file may report the st_dev of the layer holding
    it, not the folder's: Documentation/filesystems/overlayfs.rst, "Overlay objects"),
    every file of that folder is asked with lstat, as if there were no listing."""

    def __init__(self) -> None:
        self.inodes: dict[str, int] = {}  # key -> inode: ints only, nothing for the collector
        self.devices: dict[str, int] = {}  # folder key -> its device, for its listed files
        self.unlisted: set[str] = set()  # folder keys whose files are asked with lstat

    def file(self, key: str, folder: str, path: str) -> tuple[int, int] | None:
        """(device, inode) of the spare's file at `key` (at `path`), or None: none there."""
        if folder in self.unlisted:
            try:
                stat = os.lstat(path)
            except FileNotFoundError:
                return None
            return stat.st_dev, stat.st_ino
        inode = self.inodes.get(key)
        return None if inode is None else (self.devices[folder], inode)


def _clear_spare(root: str, wanted: set[str]) -> _SpareFiles:
    """Remove from the spare everything but the regular files at `wanted` keys and the
    folders on their way, one scandir per folder; what stays, by key (`_SpareFiles`)."""
    folders = {""}
    for parent in {key.rpartition("/")[0] for key in wanted}:
        while parent not in folders:
            folders.add(parent)
            parent = parent.rpartition("/")[0]
    spare = _SpareFiles()
    pending = [("", os.lstat(root).st_dev)]
    while pending:
        relative, device = pending.pop()
        prefix = f"{relative}/" if relative else ""
        spare.devices[relative] = device
        checked = False
        unwanted: list[os.DirEntry[str]] = []  # removed once the listing is read
        # Read as it comes, not listed first: a listing of 40,000 entry objects at once
        # is enough allocations to start a full garbage collection of the build's heap.
        with os.scandir(f"{root}/{relative}" if relative else root) as listing:
            for item in listing:
                key = prefix + item.name
                if key in wanted and item.is_file(follow_symlinks=False):  # most: first
                    if not checked:  # does this folder's listing tell inodes as lstat does?
                        stat = item.stat(follow_symlinks=False)
                        if (stat.st_dev, stat.st_ino) != (device, item.inode()):
                            spare.unlisted.add(relative)
                        checked = True
                    spare.inodes[key] = item.inode()
                elif item.is_dir(follow_symlinks=False) and key in folders:
                    pending.append((key, item.stat(follow_symlinks=False).st_dev))
                else:
                    unwanted.append(item)
        for item in unwanted:
            if item.is_dir(follow_symlinks=False):
                shutil.rmtree(item.path)
            else:
                os.unlink(item.path)
    return spare


@dataclass(frozen=True)
class _Written:
    """What the previous build wrote: each file's manifest entry by path, and when its
    manifest was written (every file of that build was written before it)."""

    files: dict[str, Any]  # path -> the live manifest's entry (ManifestEntry)
    manifest_mtime_ns: int

    def vouches_for_file(self, artifact: Artifact, stat: os.stat_result) -> bool:
        """Whether the manifest lists the artifact's path with its sha256 and this file's
        size, and was written after the file last changed (`vouches_for`)."""
        listed = self.files.get(artifact.path)
        written = self.manifest_mtime_ns
        return (
            listed is not None
            and listed["sha256"] == artifact.sha256  # its fields: `is_build_manifest`
            and listed["size"] == stat.st_size
            and stat.st_mtime_ns < written
            and stat.st_ctime_ns < written
        )

    def vouches_for(self, stat: os.stat_result) -> bool:
        """Whether the manifest was written after this file or folder last changed."""
        return max(stat.st_mtime_ns, stat.st_ctime_ns) < self.manifest_mtime_ns


def _written_before(out_dir: Path, previous: BuildManifest | None) -> _Written | None:
    if previous is None:
        return None
    try:
        stat = (out_dir / MANIFEST_NAME).stat()
        stamp = _stamp_file(out_dir).read_text()
    except OSError:
        return None
    if stamp != f"{stat.st_ino} {stat.st_ctime_ns}":  # touched or edited since: trust nothing
        return None
    # The entries themselves, not a (sha256, size) tuple of each: 48,000 objects the
    # collector would walk, for what two lookups answer.
    return _Written(previous["files"], stat.st_mtime_ns)  # type: ignore[arg-type]


def _holds(live: str, artifact: Artifact, written: _Written | None) -> os.stat_result | None:
    """The live output's file at `live`, when it holds exactly the artifact's bytes: it is
    then hard-linked (or kept, `_stage`), not written. Creating 20,000 files cost 5-8 s of
    a 10,000-entry build, linking one 5 us. Nothing writes into a published file in place,
    so sharing its inode between outputs is safe.

    A file the live manifest lists with the same sha256 and size is trusted without
    reading when it still has that size and neither its mtime nor its ctime is as late as
    the manifest, which was written after every file of that output. ctime moves on any
    change and cannot be set back (`cp -p`, `rsync -t`, `touch -r` restore an mtime, not a
    ctime); equal times are read, as coarse clocks give a whole tick one time. Any other
    file is compared byte for byte. (The body is asked for only then: an entry's file from
    the build cache is read from it when asked, content_builder.cache.)"""
    try:
        stat = os.lstat(live)
        if stat.st_size != artifact.size or not S_ISREG(stat.st_mode):  # a symlink: not ours
            return None
        trusted = written is not None and written.vouches_for_file(artifact, stat)
        if not trusted and Path(live).read_bytes() != artifact.body:
            return None
    except OSError:  # gone or unreadable
        return None
    return stat


def _folder_holds(root: str, folder: str, written: _Written | None, memo: dict[str, bool]) -> bool:
    """Every folder from `folder` up to (not including) the output's root is a real folder,
    not a symlink, and, when times are trusted, changed before the manifest: a folder moved
    in keeps its files' ctimes, but not its own."""
    if folder == root:
        return True
    if folder not in memo:
        try:
            stat = os.lstat(folder)
        except OSError:
            memo[folder] = False
            return False
        ok = S_ISDIR(stat.st_mode) and (written is None or written.vouches_for(stat))
        memo[folder] = ok and _folder_holds(root, os.path.dirname(folder), written, memo)
    return memo[folder]


# --- Swapping two folders --------------------------------------------------------------

_AT_FDCWD = -100  # linux/fcntl.h
_RENAME_EXCHANGE = 2  # linux/fs.h


@functools.cache
def _renameat2() -> Any:
    """libc's renameat2 (glibc 2.28+), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]  # fmt: skip
    function.restype = ctypes.c_int
    return function


def _exchange(staged: Path, out_dir: Path) -> None:
    """Swap two folders. Atomic with renameat2(RENAME_EXCHANGE): a reader of the output
    sees the old folder or the new one, never none. Elsewhere (other systems, a
    filesystem without it), three renames: the output is briefly absent, never
    half-written. Either way `staged` then holds the previous output. Raises only
    before the output changed."""
    function = _renameat2()
    if function is not None:
        if function(_AT_FDCWD, os.fsencode(staged), _AT_FDCWD, os.fsencode(out_dir),
                    _RENAME_EXCHANGE) == 0:  # fmt: skip
            return
        error = ctypes.get_errno()
        if error not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(error, os.strerror(error), str(staged), None, str(out_dir))
    parked = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    parked.rmdir()
    os.rename(out_dir, parked)
    try:
        os.rename(staged, out_dir)
    except BaseException:
        os.rename(parked, out_dir)
        raise
    try:
        os.rename(parked, staged)
    except OSError:  # the new output is in place; only the old one is not where expected
        shutil.rmtree(parked, ignore_errors=True)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock on `folder` (flock) while the writer works in it."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:  # not openable as a file here (Windows): no lock
        yield
        return
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def staged_file(path: Path, body: bytes) -> Path:
    """`body` written to a temporary file beside `path`, for an `os.replace` later: what
    can fail (a full disk) fails here, before anything else has changed."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(body)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Path(temporary)
