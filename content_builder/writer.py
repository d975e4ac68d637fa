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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any

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
    manifest_body,
    read_manifest,
)
from agent_contract.routes import RouteRule
from content_builder.errors import SiteDataError
from content_builder.loader import display_path


def _entry(artifact: Artifact) -> ManifestEntry:
    rule = artifact.rule
    return entry(artifact.sha256, artifact.size, rule.media_type, _cache_control(rule))


@functools.lru_cache(maxsize=64)  # a pure function of a frozen rule; 40,000 calls a build
def _cache_control(rule: RouteRule) -> str:
    return rule.cache_control


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
    if entries is None or len(entries) != len(artifacts):
        entries = {artifact.path: _entry(artifact) for artifact in artifacts}
        if len(entries) != len(artifacts):  # the same path twice: one row each, as ever
            return _compare_each(artifacts, before)
    rows = []
    matched = 0
    # Sorted paths, not artifacts by key: the writer hands them over in order already,
    # and sorting sorted strings is one pass.
    for path in sorted(entries):
        new = entries[path]
        old = before.get(path)
        if old is None:
            status = "new"
        elif old == new or entry_signature(old) == entry_signature(new):  # equal dicts: fast
            status = "unchanged"
            matched += 1
        else:
            status = "changed"
            matched += 1
        rows.append(FileReport(path, new["size"], status))
    if matched < len(before):
        rows += [FileReport(path, 0, "removed") for path in sorted(before) if path not in entries]
    return rows


def _compare_each(artifacts: list[Artifact], before: dict[str, Any]) -> list[FileReport]:
    rows = []
    for artifact in sorted(artifacts, key=_by_path):
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


_by_path = operator.attrgetter("path")


def write_output(artifacts: list[Artifact], out_dir: Path, base_url: str) -> list[FileReport]:
    out_dir = out_dir.absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # One writer at a time per parent folder: two builds staging in one spare would swap
    # in a mixture. (Advisory, flock; where there is none, builds are not serialized.)
    with _locked(out_dir.parent):
        previous = read_manifest(out_dir)
        if out_dir.exists() and (
            not out_dir.is_dir() or (previous is None and any(out_dir.iterdir()))
        ):
            # Never replace a folder this tool did not write: `--out ~` must not eat a home.
            raise SiteDataError.single(
                display_path(out_dir),
                None,
                f"exists and is not a build output (no {MANIFEST_NAME}); choose another --out",
            )
        # In path order: the change report and the manifest then sort what is sorted.
        entries = {artifact.path: _entry(artifact) for artifact in sorted(artifacts, key=_by_path)}
        report = compare(artifacts, previous, entries)
        body = manifest_body(build_manifest(base_url, entries))
        staging = _staging_folder(out_dir)
        _stage(staging, artifacts, out_dir, body, previous)  # the old stamp read, then gone
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
) -> None:
    """Bring `staging` to exactly the artifacts and `body` as manifest.json. A file it
    holds is kept only when it is the very file (the same inode) the live output holds
    for that path and the live file is known to hold the artifact's bytes (`_holds`); any
    other is removed (never written in place: it may share its inode with the live
    output) and replaced by a hard link of the live file when that holds the bytes, else
    written. A build stopped here leaves the live output as it was."""
    written = _written_before(out_dir, previous)
    wanted = {artifact.key for artifact in artifacts}
    # The manifest too: it is replaced last.
    present = _remove_unwanted(str(staging), wanted | {MANIFEST_NAME})
    made: set[str] = set()
    memo: dict[str, bool] = {}
    # Strings, not Paths, in this loop: it runs once per published file.
    staged, published = str(staging), str(out_dir)
    for artifact in artifacts:
        target = os.path.join(staged, artifact.key)
        live = os.path.join(published, artifact.key)
        live_stat = (
            _holds(live, artifact, written)
            if previous is not None
            and _folder_holds(published, os.path.dirname(live), written, memo)
            else None
        )
        kept = os.lstat(target) if artifact.key in present else None  # no lstat that fails
        if kept is not None:
            if live_stat is not None and _same_file(kept, live_stat):
                continue
            os.unlink(target)
        folder = os.path.dirname(target)
        if folder not in made:  # one mkdir per folder, not per file
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        if live_stat is None or not _linked(live, target):
            _write_new_file(target, artifact.body)
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


def _same_file(one: os.stat_result, other: os.stat_result) -> bool:
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _linked(source: str, target: str) -> bool:
    try:
        os.link(source, target)
    except OSError:  # a filesystem without hard links, or the file gone meanwhile
        return False
    return True


def _remove_unwanted(root: str, wanted: set[str]) -> set[str]:
    """Remove from the staging folder everything but the files at `wanted` keys and the
    folders on their way: one scandir per folder. The keys of the files left."""
    present: set[str] = set()
    folders = {""}
    for parent in {key.rpartition("/")[0] for key in wanted}:
        while parent not in folders:
            folders.add(parent)
            parent = parent.rpartition("/")[0]
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(os.path.join(root, relative) if relative else root) as listing:
            items = list(listing)
        for item in items:
            key = f"{relative}/{item.name}" if relative else item.name
            if item.is_dir(follow_symlinks=False) and key in folders:
                pending.append(key)
            elif item.is_dir(follow_symlinks=False):
                shutil.rmtree(item.path)
            elif key not in wanted or not item.is_file(follow_symlinks=False):
                os.unlink(item.path)
            else:
                present.add(key)
    return present


@dataclass(frozen=True)
class _Written:
    """What the previous build wrote: each file's sha256 and size by path, and when its
    manifest was written (every file of that build was written before it)."""

    files: dict[str, tuple[str, int]]
    manifest_mtime_ns: int

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
    mtime = stat.st_mtime_ns
    files = {
        path: (entry.get("sha256"), entry.get("size")) for path, entry in previous["files"].items()
    }
    return _Written(files, mtime)  # type: ignore[arg-type]


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
    size = artifact.size
    try:
        stat = os.lstat(live)
        if stat.st_size != size or not S_ISREG(stat.st_mode):  # a symlink is not ours
            return None
        listed = written.files.get(artifact.path) if written else None
        trusted = (
            written is not None and listed == (artifact.sha256, size) and written.vouches_for(stat)
        )
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
