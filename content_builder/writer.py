"""Write the artifacts to the output folder, all or nothing.

The new output is made in a folder beside the live one and swapped in whole, so a
failure at any point leaves the previous output exactly as it was. The folder also gets
`manifest.json` (path -> sha256, size, media type, Cache-Control), which is what the
publisher and `verify --expect-from` read.

That folder is the *spare*: the output before the last, kept in `.dist.spare/dist`
beside `dist`. A build brings it up to date in place (only the files that differ from
what it holds are written; the others cost a stat) and exchanges it with the live
output (one atomic rename on Linux); the output it replaced is the next spare. A small
record in the spare says what it holds and since when; it is removed before the spare
is touched, so a spare left by a failed build is never trusted. Without a usable spare
(the second build, after a failure, after another tool rewrote the output), the new
output is made of hard links to the live one as before. docs/decisions.md, "The
writer's spare output".
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import operator
import os
import shutil
import sys
import tempfile
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
from content_builder.early import (
    EarlyFiles,
    new_staging_folder,
    remove_abandoned_staging,
    write_new_file,
)
from content_builder.errors import SiteDataError
from content_builder.loader import display_path

# Each rule's headers, by the rule's id (the rule is kept in the value, so its id cannot
# be reused): `cache_control` formats a string on every call, 40,000 times a build.
_HEADERS: dict[int, tuple[RouteRule, str, str]] = {}


def _entry(artifact: Artifact) -> ManifestEntry:
    rule = artifact.rule
    headers = _HEADERS.get(id(rule))
    if headers is None:
        headers = _HEADERS[id(rule)] = (rule, rule.media_type, rule.cache_control)
    return entry(artifact.sha256, artifact.size, headers[1], headers[2])


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


def spare_folder(out_dir: Path) -> Path:
    """Where the output before the last is kept: `.dist.spare/dist` beside `dist`. The
    last part is the output's own name, so a `.gitignore` line such as `dist/` (which
    matches a folder of that name at any depth) ignores the spare too."""
    return out_dir.parent / f".{out_dir.name}.spare" / out_dir.name


def write_output(
    artifacts: list[Artifact],
    out_dir: Path,
    base_url: str,
    early: EarlyFiles | None = None,  # files already being written into a staging folder
) -> list[FileReport]:
    out_dir = out_dir.absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # One writer at a time per parent folder, from reading the previous manifest to the
    # spare's record: two builds updating one spare in place would swap in a mixture.
    # (Advisory, flock; where there is none, builds are not serialized, as before.)
    with _locked(out_dir.parent):
        remove_abandoned_staging(out_dir)
        return _write_output(artifacts, out_dir, base_url, early)


def _write_output(
    artifacts: list[Artifact], out_dir: Path, base_url: str, early: EarlyFiles | None
) -> list[FileReport]:
    previous = read_manifest(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or (previous is None and any(out_dir.iterdir()))):
        # Never replace a folder this tool did not write: `--out ~` must not eat a home.
        raise SiteDataError.single(
            display_path(out_dir),
            None,
            f"exists and is not a build output (no {MANIFEST_NAME}); choose another --out",
        )
    # In path order: the change report and the manifest then sort what is sorted already.
    entries = {artifact.path: _entry(artifact) for artifact in sorted(artifacts, key=_by_path)}
    report = compare(artifacts, previous, entries)
    body = manifest_body(build_manifest(base_url, entries))
    if previous is None:  # a first build (or an empty folder): everything is written
        staging, _ = _stage(artifacts, out_dir, body, None, early)
        try:
            _swap_in(staging, out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            if early is not None:
                early.discard()
            raise
        if early is not None:
            _spare_from_twin(early, artifacts, out_dir, body)
        return report
    if early is not None:  # an output appeared since the early files started: not used
        early.discard()
    spare = spare_folder(out_dir)
    kept = _read_spare(spare, out_dir, previous)
    if kept is None:
        _replace_from_links(artifacts, out_dir, body, previous, spare)
        return report
    _update(kept, artifacts, body, report)
    _exchange(spare, out_dir)
    # The spare now holds the replaced output: the previous manifest, unchanged since.
    differs = {row.path: _listed(previous, row.path) for row in report
               if row.status != "unchanged"}  # fmt: skip
    _keep_spare(spare, out_dir, differs, restamp=False)
    return report


def _stage(
    artifacts: list[Artifact],
    out_dir: Path,
    body: bytes,
    previous: BuildManifest | None,
    early: EarlyFiles | None = None,
) -> tuple[Path, set[str]]:
    """A new output in a temporary sibling folder: unchanged files hard-linked from the
    previous output, the others written (or, for a first build, taken from the files
    written early, content_builder/early.py). Returns it and the paths it linked."""
    written = _written_before(out_dir, previous)
    staging, done = _early_staging(early, previous, artifacts)
    staging = staging or new_staging_folder(out_dir)
    linked: set[str] = set()
    try:
        folders: set[str] = set()
        # Strings, not Paths, in this loop: it runs once per published file.
        staged, published = str(staging), str(out_dir)
        for artifact in artifacts:
            if artifact.key in done:  # written early, by content_builder/early.py
                continue
            target = os.path.join(staged, artifact.key)
            folder = os.path.dirname(target)
            if folder not in folders:  # one mkdir per folder, not per file
                os.makedirs(folder, exist_ok=True)
                folders.add(folder)
            old = os.path.join(published, artifact.key)
            if previous and _reuse(old, target, artifact, written):
                linked.add(artifact.path)
            else:
                write_new_file(target, artifact.body)
        (staging / MANIFEST_NAME).write_bytes(body)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, linked


def _replace_from_links(
    artifacts: list[Artifact],
    out_dir: Path,
    body: bytes,
    previous: BuildManifest,
    spare: Path,
) -> None:
    """Without a usable spare: stage the output from hard links and keep the output it
    replaces as the next spare (or remove it, where the spare's place is not ours)."""
    # An output that is a symlink is replaced by a folder, as ever; no spare is kept for it.
    keep = not out_dir.is_symlink() and _clear_spare(spare)
    staging, linked = _stage(artifacts, out_dir, body, previous)
    try:
        _exchange(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    retired = staging  # the exchange left the previous output under the staging name
    if keep:
        try:
            spare.parent.mkdir(exist_ok=True)
            os.rename(retired, spare)
        except OSError:
            keep = False
    if keep:
        # Every file linked was checked (trusted or compared) just before it was linked,
        # so it holds the new manifest's bytes; the rest of the old output is unknown.
        differs = {artifact.path: None for artifact in artifacts if artifact.path not in linked}
        _keep_spare(spare, out_dir, differs, restamp=True)
        return
    shutil.rmtree(retired, ignore_errors=True)
    # Last: removing the retired output moved the ctime of every file it shared an
    # inode with; the manifest's time is the line the next build trusts files behind.
    os.utime(out_dir / MANIFEST_NAME)


def _clear_spare(spare: Path) -> bool:
    """Make room for a new spare; False where the spare's place holds something this
    tool did not write (then it is left alone and no spare is kept)."""
    if not os.path.lexists(spare):
        return True
    if spare.is_symlink() or not spare.is_dir() or read_manifest(spare) is None:
        return False
    # A spare without its record (a build stopped while updating it, a live output
    # replaced by hand since): nothing in it can be trusted without reading it.
    shutil.rmtree(spare)
    return True


def _spare_from_twin(
    early: EarlyFiles, artifacts: list[Artifact], out_dir: Path, body: bytes
) -> None:
    """Keep the early files' twin (content_builder/early.py: hard links of the files the
    child wrote, made once it wrote them) as the spare of a first build, as
    `_replace_from_links` keeps one for the build after it. A file the twin lacks, or
    holds other bytes of (the child wrote a body a later artifact replaced), is listed
    as unknown, so the next build writes or compares it."""
    twin = early.take_twin()
    if twin is None:
        return
    spare = spare_folder(out_dir)
    try:
        final = early.written(artifacts) or frozenset()
        if out_dir.is_symlink() or not _clear_spare(spare):
            raise FileExistsError(spare)
        (twin / MANIFEST_NAME).write_bytes(body)  # the last file: its time vouches
        spare.parent.mkdir(exist_ok=True)
        os.rename(twin, spare)
    except OSError:
        shutil.rmtree(twin, ignore_errors=True)
        return
    differs = {artifact.path: None for artifact in artifacts if artifact.key not in final}
    _keep_spare(spare, out_dir, differs, restamp=False)


def _early_staging(
    early: EarlyFiles | None, previous: BuildManifest | None, artifacts: list[Artifact]
) -> tuple[Path | None, frozenset[str]]:
    """The early staging folder and the keys already final in it, when there is no
    previous output to reuse files from (there was none when it started)."""
    if early is None:
        return None, frozenset()
    folder = early.take() if previous is None else None
    done = early.written(artifacts) if folder is not None else None
    if folder is None or done is None:
        early.discard()
        return None, frozenset()
    return folder, done


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
    after the retired output was removed, where it was not kept as the spare). ctime
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


def _swap_in(staging: Path, out_dir: Path) -> None:
    # A first build: nothing to keep but an empty folder, if that.
    if not out_dir.exists():
        os.rename(staging, out_dir)
        return
    _exchange(staging, out_dir)
    shutil.rmtree(staging, ignore_errors=True)


# --- The spare: the output before the last, brought up to date in place --------------

SPARE_RECORD = ".agent-access-spare.json"  # in the spare only; removed before it goes live
_RECORD_VERSION = 1
_MANIFEST_PATH = f"/{MANIFEST_NAME}"


@dataclass(frozen=True)
class _Spare:
    """What the spare holds, as its record says: the live manifest's sha256 and size for
    each path, except `differs` (the spare's own, or None where unknown). A file is
    vouched for only while its mtime and ctime are both before `stamp`, a time the
    kernel gave a file after everything the writer did to the spare's files."""

    folder: str
    stamp: int
    differs: dict[str, tuple[str, int] | None]

    def holds(self, report: list[FileReport], wanted: dict[str, Artifact]) -> dict[str, bool]:
        """By path: whether the record says the spare's file holds the new bytes (True) or
        other bytes (False); absent where it does not know. Outside `differs` the spare
        holds what the live output does, which the change report has compared already
        (a change of headers only counts as other bytes: such a file is written again)."""
        holds = {row.path: row.status == "unchanged" for row in report if row.status != "new"}
        for path, listed in self.differs.items():
            artifact = wanted.get(path)
            if listed is None or artifact is None:
                holds.pop(path, None)
            else:
                holds[path] = listed == (artifact.sha256, artifact.size)
        return holds


def _listed(manifest: BuildManifest, path: str) -> tuple[str, int] | None:
    entry = manifest["files"].get(path)
    return None if entry is None else (entry["sha256"], entry["size"])


def _signature(path: Path) -> list[int]:
    stat = os.stat(path)
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def _read_spare(spare: Path, out_dir: Path, previous: BuildManifest) -> _Spare | None:
    """The spare, when its record is whole and was written against the live manifest
    as it is now (a manifest replaced or touched since voids it)."""
    try:
        data = json.loads((spare / SPARE_RECORD).read_bytes())
        live = _signature(out_dir / MANIFEST_NAME)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != _RECORD_VERSION:
        return None
    stamp, differs = data.get("stamp"), data.get("differs")
    if data.get("live") != live or not isinstance(stamp, int) or not isinstance(differs, dict):
        return None
    listed: dict[str, tuple[str, int] | None] = {}
    for path, value in differs.items():
        if value is None:
            listed[path] = None
        elif (
            isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], str)
            and isinstance(value[1], int)
        ):
            listed[path] = (value[0], value[1])
        else:
            return None
    return _Spare(str(spare), stamp, listed)


def _keep_spare(
    spare: Path, out_dir: Path, differs: dict[str, tuple[str, int] | None], restamp: bool
) -> None:
    """Write the record that lets the next build trust the spare's files. Its stamp is
    the spare's manifest's mtime: that manifest was written after every file of the
    spare when it was live, and nothing the writer did since made a file of it look
    older. `restamp` (a spare just made by linking, whose every linked file was checked
    a moment ago) touches it first. A failure here costs the next build its spare, not
    this build its output."""
    try:
        manifest = spare / MANIFEST_NAME
        if restamp:
            os.utime(manifest)
        record = {
            "version": _RECORD_VERSION,
            "live": _signature(out_dir / MANIFEST_NAME),
            "stamp": manifest.stat().st_mtime_ns,
            "differs": differs,
        }
        (spare / SPARE_RECORD).write_bytes(json.dumps(record).encode())
    except OSError:
        with contextlib.suppress(OSError):
            (spare / SPARE_RECORD).unlink()


def _update(
    spare: _Spare, artifacts: list[Artifact], body: bytes, report: list[FileReport]
) -> None:
    """Bring the spare to exactly the artifacts and `body` as manifest.json. The record
    goes first: a build stopped from here on leaves a spare the next one will not use.
    A file is never written in place (it may share its inode with the live output
    through a hard link): a new file is renamed over it."""
    root = spare.folder
    os.unlink(os.path.join(root, SPARE_RECORD))
    wanted = {artifact.path: artifact for artifact in artifacts}
    holds = spare.holds(report, wanted)
    folders = _folders(wanted)
    stamp = spare.stamp
    stale: list[Artifact] = []
    found: set[str] = set()
    pending = [""]
    while pending:  # one scandir per folder; stat relative to the folder's descriptor
        relative = pending.pop()  # "" for the root, else "/api/v1"
        folder = root + relative
        handle = os.open(folder, os.O_RDONLY)
        try:
            with os.scandir(handle) as listing:
                items = list(listing)
            for item in items:
                path = f"{relative}/{item.name}"
                if item.is_dir(follow_symlinks=False):
                    if path in folders:
                        pending.append(path)
                    else:
                        shutil.rmtree(folder + "/" + item.name)
                    continue
                artifact = wanted.get(path)
                if artifact is None:
                    if path != _MANIFEST_PATH:  # replaced last; nothing else is published
                        os.unlink(item.name, dir_fd=handle)
                    continue
                found.add(path)
                if not item.is_file(follow_symlinks=False):
                    stale.append(artifact)
                    continue
                stat = item.stat(follow_symlinks=False)
                if stat.st_size != artifact.size:
                    stale.append(artifact)
                    continue
                vouched = holds.get(path)  # True, False (other bytes), None (unknown)
                if vouched is None or stat.st_mtime_ns >= stamp or stat.st_ctime_ns >= stamp:
                    vouched = _same_bytes(folder + "/" + item.name, artifact.body)
                if not vouched:
                    stale.append(artifact)
        finally:
            os.close(handle)
    if len(found) < len(wanted):
        stale += [artifact for artifact in artifacts if artifact.path not in found]
    made: set[str] = set()
    for artifact in stale:
        folder = os.path.dirname(root + artifact.path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        _replace_file(root, artifact.path, artifact.body, wanted)
    _replace_file(root, _MANIFEST_PATH, body, wanted)


def _same_bytes(path: str, body: bytes) -> bool:
    try:
        return Path(path).read_bytes() == body
    except OSError:
        return False


def _folders(wanted: dict[str, Artifact]) -> set[str]:
    """Every folder that holds a published file, and the folders above them, as paths
    ("/api/v1"; "" is the root)."""
    folders = {""}
    for parent in {path.rpartition("/")[0] for path in wanted}:
        while parent not in folders:
            folders.add(parent)
            parent = parent.rpartition("/")[0]
    return folders


def _replace_file(root: str, path: str, body: bytes, wanted: dict[str, Artifact]) -> None:
    temporary = path + ".new"
    while temporary in wanted:  # never the name of a published file
        temporary += "~"
    temporary, target = root + temporary, root + path
    try:
        Path(temporary).write_bytes(body)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


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
