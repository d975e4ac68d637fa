"""A first build's files written before the writer's turn: as they are rendered, while
the build waits for its spare, and while it checks them.

A cold build of 10,000 documents and 10,000 FAQ entries publishes 40,000 files; creating
them cost ~1.3 s of a 14 s build on one core. Once rendered, their bytes are final. So,
when the output folder does not exist yet (a first build: nothing to reuse), they are
written into a staging folder beside it early, by whoever is free:
- each entry's own two files by the process that rendered it (`EntryFiles`, given to
  render/entries.py): the forked half writes its half from memory it owns anyway;
- what is left (the aggregates, or entries taken from the build cache) by this process
  while the spare chooses the search index's keywords (`write_while`);
- and, when many are still left, by a child forked once the aggregates are rendered
  (`finish`), while this process checks them.
Nothing reaches the output folder before the build has succeeded: the writer (writer.py)
takes the staging folder, writes anything not written yet, and swaps it in as it does any
staging folder; a build that fails removes it. A write that fails, or a child that fails
in any way, leaves those files to the writer.

The entries' files are written as rendered, not by the child of `finish`: that child is
forked from the build's full heap (~830 MB at 10,000 entries) and shares it copy-on-write
while this process checks the files, and each page the checks read is copied (reading
an object writes its reference count): the build and that child held ~1,100-1,180 MB
together, against ~830 MB for the build alone (benchmarks/README.md, the Pss timeline).
The child of `finish` is forked after the aggregates are rendered, not before, for the
same reason: rendering the aggregates writes far more of that memory than the checks do.
Not with threads: the checks are pure Python, and a thread doing file system calls
only gets the GIL back every switch interval (5 ms), several times per file.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from agent_contract.artifacts import Artifact
from content_builder.cache import cache_dir
from content_builder.halves import MINIMUM_ITEMS, can_fork, die_with_parent

#: Below this many files a fork costs more than writing them here does.
MINIMUM_FILES = 2_000

#: From this many entry files in a site (what makes rendering fork, halves.py), a first
#: build writes each entry's files as it renders them (`EntryFiles`).
MINIMUM_ENTRY_FILES = MINIMUM_ITEMS

#: While writing in the time a child leaves free, whether it is still busy is asked
#: every this many files (one waitpid each; a small file takes ~25 us to write on tmpfs).
_ASK_EVERY = 16

#: Flags of `open(path, "wb")`, without Python's file object around the descriptor: one
#: open, one write and one close per file (the file object adds an fstat, an ioctl and
#: a seek, ~40 % of the time to create a small file on tmpfs).
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def write_new_file(path: str, body: bytes) -> None:
    """`Path(path).write_bytes(body)` (same flags, same mode), with fewer system calls."""
    descriptor = os.open(path, _NEW_FILE, 0o666)
    try:
        view = memoryview(body)
        while view:  # a write may be short (a signal, a full disk reports on the next one)
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)


def _target(folder: str, key: str, made: set[str]) -> str:
    """The path of `key` under `folder`, its parent folder made unless in `made` (then
    added: one `makedirs` per folder, not per file)."""
    target = os.path.join(folder, key)
    parent = os.path.dirname(target)
    if parent not in made:
        os.makedirs(parent, exist_ok=True)
        made.add(parent)
    return target


def write_files(folder: str, files: dict[str, bytes], made: set[str] | None = None) -> None:
    """Each key's body under `folder`, its folders made once each (those in `made`, which
    a caller writing in several calls keeps, are not made again)."""
    made = set() if made is None else made
    for key, body in files.items():
        write_new_file(_target(folder, key, made), body)


def link_files(folder: str, twin: str, keys: Iterable[str], made: set[str] | None = None) -> None:
    """A hard link in `twin` of each key's file in `folder`, its folders made once each
    (as for `write_files`)."""
    made = set() if made is None else made
    for key in keys:
        os.link(os.path.join(folder, key), _target(twin, key, made))


#: What `EntryFiles` did with an entry's files: nothing (a write failed, in this
#: process, now or before), wrote them, or wrote them and linked them into the twin.
NOT_WRITTEN, WRITTEN, LINKED = 0, 1, 2


class EntryFiles:
    """Writes an entry's own files into a staging folder as soon as they are rendered, in
    whichever process rendered them (content_builder/halves.py: the forked child writes
    the files of its half). Called in a child, it keeps its state there: what it made
    and whether a write failed, so that it stops writing."""

    def __init__(self, early: EarlyFiles, folder: str, twin: str | None) -> None:
        self._early = early
        self.folder = folder
        self.twin = twin
        self._made: set[str] = set()
        self._twin_made: set[str] = set()
        self._failed = False  # a write failed: the writer writes the rest
        self._unlinked = False  # a link failed: the twin is not whole (no use linking on)

    def __call__(self, files: list[tuple[str, bytes]]) -> int:
        """Write each (key, body); NOT_WRITTEN, WRITTEN or LINKED (also in the twin).
        Never raises: what is not written is left to the writer."""
        if self._failed:
            return NOT_WRITTEN
        try:
            write_files(self.folder, dict(files), self._made)
        except Exception:
            self._failed = True  # a half-written file: the writer writes it again
            return NOT_WRITTEN
        if self.twin is None or self._unlinked:
            return WRITTEN
        try:
            link_files(self.folder, self.twin, (key for key, _ in files), self._twin_made)
        except Exception:
            self._unlinked = True
            return WRITTEN
        return LINKED

    def recorded(self, files: list[tuple[str, bytes]], done: int) -> None:
        """In the build's process, after the halves: what a call did with these files,
        wherever it ran (`EarlyFiles.recorded`)."""
        self._early.recorded(files, done)


class EarlyFiles:
    """Files being written into a staging folder: entries' files as they are rendered
    (`entry_files`), then by this process while it waits for a child anyway
    (`write_while`), then by a forked child (`finish`)."""

    def __init__(self, out_dir: Path, folder: Path | None = None) -> None:
        self.out_dir = out_dir
        self.folder = folder  # made with the first file written
        self.files: dict[str, bytes] = {}  # key -> the very bytes object written
        self._pid: int | None = None  # a child still writing, until reaped
        self._failed = False
        # Hard links of every file, made by the child once all are written: the spare the
        # next build updates in place (writer.py), so that the first build after this one
        # does not stage 40,000 links itself (0.3-0.4 s at 10,000 entries).
        self.twin: Path | None = None
        # Made with the staging folder by `entry_files`: then every file written early is
        # linked into it as it is written, and a link that fails makes it useless.
        self._twin_broken = False

    @classmethod
    def begin(cls, out_dir: Path) -> EarlyFiles | None:
        """Files to write early for a build into `out_dir`, or None when not safe: an
        output folder that already exists (its files are reused or refused by the writer,
        which decides that once the build succeeded). The parent folder must exist: a
        build that fails creates no folder."""
        out_dir = out_dir.absolute()
        if os.path.lexists(out_dir) or not out_dir.parent.is_dir():
            return None
        return cls(out_dir)

    @classmethod
    def start(cls, artifacts: list[Artifact], out_dir: Path) -> EarlyFiles | None:
        """Start writing `artifacts` for a build into `out_dir` in a child, or None when
        that does not pay or is not safe (`begin`, `finish`)."""
        files = cls.begin(out_dir)
        if files is None:
            return None
        if not files.finish(artifacts):
            files.discard()  # a folder made for a child that did not start
            return None
        return files

    def entry_files(self) -> EntryFiles | None:
        """A writer of entries' files into the staging folder (made now, with its twin
        when the build cache is on: see `finish`), for the processes that render them
        (render/entries.py); None when the folder cannot be made."""
        if self._failed or self._pid is not None or self.folder is not None:
            return None
        try:
            self.folder = new_staging_folder(self.out_dir)
            self.twin = new_staging_folder(self.out_dir) if cache_dir() is not None else None
        except OSError:
            return None  # the writer writes them (and reports what it cannot); a folder
            # made is removed with the build's other early files (`discard`)
        return EntryFiles(self, str(self.folder), str(self.twin) if self.twin is not None else None)

    def recorded(self, files: list[tuple[str, bytes]], done: int) -> None:
        """What an `EntryFiles` call returned (`done`) for these files, in any process: the
        files written are known here by the very bytes objects the build publishes."""
        if done == NOT_WRITTEN:
            if files:  # a write failed (a full disk): every file left to the writer, which
                self._failed = True  # reports the failure in its order
            return
        if done != LINKED:
            self._twin_broken = True
        for key, body in files:
            self.files[key] = body

    def _link(self, key: str, made: set[str]) -> None:
        """Link a file just written here into a twin made up front (`entry_files`)."""
        if self.twin is None or self._twin_broken or self.folder is None:
            return
        try:
            link_files(str(self.folder), str(self.twin), [key], made)
        except OSError:
            self._twin_broken = True

    def write_while(self, artifacts: list[Artifact], busy: Callable[[], bool]) -> None:
        """Write `artifacts` here while `busy()` (a child works on something this process
        then waits for: the time is free), asking it every few files. Never raises: a
        file that cannot be written is left to the writer, which reports it in its order."""
        if self._failed or self._pid is not None:
            return
        made: set[str] = set()
        linked: set[str] = set()
        written = 0
        try:
            for artifact in artifacts:
                if self.files.get(artifact.key) is artifact.body:
                    continue  # written as rendered (`entry_files`)
                if written % _ASK_EVERY == 0 and not busy():
                    return
                if self.folder is None:
                    self.folder = new_staging_folder(self.out_dir)
                target = _target(str(self.folder), artifact.key, made)
                self.files.pop(artifact.key, None)  # unknown while half-written
                write_new_file(target, artifact.body)
                self.files[artifact.key] = artifact.body
                self._link(artifact.key, linked)
                written += 1
        except Exception:
            self._failed = True  # the writer writes everything itself

    def finish(self, artifacts: list[Artifact]) -> bool:
        """Start a child writing the files of `artifacts` not written yet, when enough of
        them are left to pay for a fork (and forking is safe: one CPU or other threads in
        this process, whose locks a fork can leave held); whether one started."""
        if self._failed or self._pid is not None:
            return False
        rest = {a.key: a.body for a in artifacts if a.key not in self.files}  # the last wins
        if len(rest) < MINIMUM_FILES or not can_fork():
            return False
        try:
            if self.folder is None:
                self.folder = new_staging_folder(self.out_dir)
        except OSError:
            return False  # the writer writes them (and reports what it cannot)
        folder = str(self.folder)
        # The twin only with the build cache on: then the parent writes the cache after
        # this fork (1.7 s at 10,000 entries), which hides the child's 40,000 links
        # (0.25 s of CPU), and the next build is an incremental one that the spare makes
        # faster. With the cache off the parent soon waits for the child (the links made
        # it wait 0.15 s longer at 10,000 entries) and no later build is incremental.
        # A twin made up front (`entry_files`) holds the files written so far already.
        made_before = self.twin is not None
        try:
            twin = self.twin or (
                new_staging_folder(self.out_dir) if cache_dir() is not None else None
            )
        except OSError:
            twin = None  # no spare kept: the next build stages its own
        to_link = [*rest] if made_before else [*self.files, *rest]
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            if twin is not None and not made_before:
                shutil.rmtree(twin, ignore_errors=True)
            return False
        if pid == 0:  # the child: write, then out without any of the parent's cleanup
            code = 1
            try:
                die_with_parent(parent)
                write_files(folder, rest)
                if twin is not None:
                    code = 2  # the files are written; the twin is not whole
                    link_files(folder, str(twin), to_link)
                code = 0
            finally:
                os._exit(code)
        self._pid = pid
        self.twin = twin
        self.files.update(rest)
        return True

    def take(self) -> Path | None:
        """The staging folder with every file written, once the child (if any) is done;
        None (and the folder removed) when nothing was written or anything failed. The
        twin is kept only when whole (`take_twin`)."""
        status = 0
        if self._pid is not None:
            try:
                _, status = os.waitpid(self._pid, 0)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): unknown
                status = -1
            self._pid = None
        if status != 0 and self.twin is not None:
            shutil.rmtree(self.twin, ignore_errors=True)
            self.twin = None
        written_not_linked = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 2
        if written_not_linked and not self._failed and self.folder is not None:
            return self.folder  # the files are whole
        if status != 0 or self._failed or self.folder is None:
            self.discard()
            return None
        return self.folder

    def take_twin(self) -> Path | None:
        """The twin folder (every file hard-linked), once `take` found the child done and
        whole; None otherwise. The caller owns it from then on."""
        twin = self.twin
        if twin is None or self._pid is not None or not twin.is_dir():
            return None
        if self._twin_broken:  # a file written early is missing from it
            shutil.rmtree(twin, ignore_errors=True)
            self.twin = None
            return None
        return twin

    def written(self, artifacts: list[Artifact]) -> frozenset[str] | None:
        """The keys whose file in the staging folder is final: those whose last artifact
        (the one a plain loop writes last) is the very body written early. None when a
        file was written that the build does not publish (then the folder is unusable)."""
        final = {artifact.key: artifact.body for artifact in artifacts}
        if not all(key in final for key in self.files):
            return None
        return frozenset(key for key, body in self.files.items() if final[key] is body)

    def discard(self) -> None:
        """Stop the child if it still runs and remove the staging folder (a failed build)."""
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass  # already gone
            self._pid = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        if self.twin is not None:
            shutil.rmtree(self.twin, ignore_errors=True)
            self.twin = None
        self.files = {}


def new_staging_folder(out_dir: Path) -> Path:
    """An empty folder beside `out_dir` for a new output, named with this process's pid
    (`.dist.new-<pid>-<random>`), so that one a killed build left can be told from one
    a running build is writing (`remove_abandoned_staging`)."""
    prefix = f".{out_dir.name}.new-{os.getpid()}-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=out_dir.parent))


def remove_abandoned_staging(out_dir: Path) -> None:
    """Remove the staging folders of builds into `out_dir` whose process is gone (killed
    with SIGKILL, a power cut: no cleanup ran; each is a full-size output at worst). A
    folder whose pid is alive is left, even if the pid was reused: never a running
    build's. Folders named without a pid (older versions) are left too."""
    prefix = f".{out_dir.name}.new-"
    try:
        names = os.listdir(out_dir.parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(out_dir.parent / name, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # not ours to signal, or no such number: leave it
        return True
    return True
