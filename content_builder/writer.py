"""Write the artifacts to the output folder, all or nothing.

The new output is staged in a folder beside the live one (`.dist.staging-*`): files
whose bytes the previous output already holds are hard-linked from it (one link, not a
file written), the others written. Then `manifest.json` (path -> sha256, size, media
type, Cache-Control; what the publisher and `verify --expect-from` read), and the staged
folder is exchanged with the live one in one atomic rename. A failure at any point
leaves the previous output exactly as it was; a staging folder a killed build left is
removed by the next build.
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
    # One writer at a time per parent folder: a staging folder found while holding the
    # lock is one a killed build left. (Advisory, flock; where there is none, builds are
    # not serialized.)
    with _locked(out_dir.parent):
        _remove_abandoned_staging(out_dir)
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
        staging = _stage(artifacts, out_dir, body, previous)
        try:
            replaced = _swap_in(staging, out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if replaced:
            shutil.rmtree(staging, ignore_errors=True)  # it holds the previous output
            # Last: removing the retired output moved the ctime of every file it shared
            # an inode with; the manifest's time is the line the next build trusts
            # files behind.
            _stamp_after_now(out_dir / MANIFEST_NAME)
        return report


def _stamp_after_now(manifest: Path) -> None:
    """Touch `manifest` until its mtime is later than a change made just before: file
    times come from a coarse clock (one tick is 1-10 ms on Linux), so a touch in the tick
    of the last ctime it must vouch against would equal it, and equal times are not
    trusted (`_reuse`). One tick at most."""
    probe = manifest.parent.with_name(f".{manifest.parent.name}.clock")  # beside the output
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


def _swap_in(staging: Path, out_dir: Path) -> bool:
    """The staged output in the output's place; True when it replaced one, which is
    then in `staging`."""
    if not out_dir.exists():
        os.rename(staging, out_dir)
        return False
    _exchange(staging, out_dir)
    return True


_STAGING = ".{}.staging-"


def _new_staging_folder(out_dir: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=_STAGING.format(out_dir.name), dir=out_dir.parent))


def _remove_abandoned_staging(out_dir: Path) -> None:
    """Staging folders beside the output: under the writer's lock, every one is a killed
    build's."""
    for folder in out_dir.parent.glob(_STAGING.format(out_dir.name) + "*"):
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _write_new_file(path: str, body: bytes) -> None:
    handle = os.open(path, _NEW_FILE, 0o644)
    with os.fdopen(handle, "wb") as stream:
        stream.write(body)


def _stage(
    artifacts: list[Artifact], out_dir: Path, body: bytes, previous: BuildManifest | None
) -> Path:
    """A new output in a temporary sibling folder: unchanged files hard-linked from the
    previous output, the others written, then manifest.json."""
    written = _written_before(out_dir, previous)
    staging = _new_staging_folder(out_dir)
    try:
        folders: set[str] = set()
        # Strings, not Paths, in this loop: it runs once per published file.
        staged, published = str(staging), str(out_dir)
        for artifact in artifacts:
            target = os.path.join(staged, artifact.key)
            folder = os.path.dirname(target)
            if folder not in folders:  # one mkdir per folder, not per file
                os.makedirs(folder, exist_ok=True)
                folders.add(folder)
            old = os.path.join(published, artifact.key)
            if previous is None or not _reuse(old, target, artifact, written):
                _write_new_file(target, artifact.body)
        (staging / MANIFEST_NAME).write_bytes(body)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


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
    the manifest, which was written after every file of that output (and touched again
    after the retired output was removed, `_stamp_after_now`). ctime
    moves on any change and cannot be set back (`cp -p`, `rsync -t`, `touch -r` restore an
    mtime, not a ctime); equal times are read, as coarse clocks give a whole tick one
    time. Any other file is compared byte for byte. (The body is asked for only then: an
    entry's file from the build cache is read from it when asked, content_builder.cache.)"""
    size = artifact.size
    try:
        stat = os.stat(old)
        if stat.st_size != size:
            return False
        listed = written.files.get(artifact.path) if written else None
        trusted = (
            written is not None
            and listed == (artifact.sha256, size)
            and max(stat.st_mtime_ns, stat.st_ctime_ns) < written.manifest_mtime_ns
        )
        if not trusted and Path(old).read_bytes() != artifact.body:
            return False
        os.link(old, target)
    except OSError:  # gone, unreadable, or a filesystem without hard links
        return False
    return True


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
