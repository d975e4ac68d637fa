"""Independent work in two halves, one in a forked child process, and work handed to a
spare process forked while the build is still small: the build's use of a second core.

Rendering 20,000 entries is independent work once the lock is resolved (9 s of a cold
10,000-entry build, all Python, so threads would share one core). A forked child renders
its half from the parent's memory as it is (no models pickled across), writes its
results to an unnamed temporary file, and exits; the parent renders the other half
meanwhile and then reads the file. The result is the same list, in the same order, as
doing all the work here: a child that fails in any way is ignored and its half is done
again here, so an error is raised exactly as it would be without a child.
"""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Below this many items a fork, a pickle and a read cost more than they save. Measured
#: on a cold build with a free second core (docs/decisions.md, "Issue 11: small sites"):
#: from 1,000 entries (N = 500) forking the render, the source hashes and the search
#: index pays (0.88 -> 0.66 s), as does a 1,000-file folder's load at N = 1,000; at 500
#: entries (N = 250) it did not (0.44 s either way, 0.57 s when the cores are busy), at
#: 200 it lost (0.18 -> 0.25 s). Not lower: a fork only pays with a core free for it.
MINIMUM_ITEMS = 1_000


#: prctl(2) option: the signal a process gets when the thread that forked it exits.
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In a forked child, first thing: be killed (SIGKILL) when `parent` dies, so that a
    build killed without any cleanup (SIGKILL, the OOM killer) leaves no child behind
    still writing. Linux only (prctl PR_SET_PDEATHSIG); elsewhere, or without ctypes, a
    no-op: the child then works as before. The forking thread is the main one
    (`can_fork` allows no other), whose exit is the process's."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):  # no ctypes, no libc, no prctl
        return
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # refused (a sandbox's seccomp filter, say): work on, as before
    if os.getppid() != parent:  # the parent died before the request: no signal will come
        os._exit(1)


def can_fork() -> bool:
    """Two CPUs, `os.fork`, and no other thread in this process: forking a process with
    threads can leave a lock held in the child (a logging or I/O lock another thread had)."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) >= 2 and threading.active_count() == 1


def in_halves(
    items: Sequence[T],
    work: Callable[[T], R],
    minimum: int = MINIMUM_ITEMS,
    given_away: Callable[[T], None] | None = None,
    child_takes_first: bool = False,
) -> list[R]:
    """`[work(item) for item in items]`, every other item in a forked child when worth it
    (alternate items, not the second half: neighbours cost alike, the halves of a site
    do not: its documents come first and cost twice as much as its FAQ entries).
    `given_away(item)` is called here for each item the child took, once it has forked,
    so that what only that work needed can be freed here (it runs again here if the
    child fails, so the work must not depend on what was freed).

    The child takes the odd items (the second, the fourth, ...), or the even ones with
    `child_takes_first`: so that work done in one pass is in memory for the process that
    needs it in the next (render/documents.py `tracked`).

    An error is the one a plain loop raises, the first in `items`' order: a failure
    here first runs here the child's items before it (`work` is a function of its item)."""
    if len(items) < minimum or not can_fork():
        return [work(item) for item in items]
    parents, childs = _split(len(items), child_takes_first)
    mine, theirs = [items[i] for i in parents], [items[i] for i in childs]
    with tempfile.TemporaryFile() as spill:
        pid = _forked_into(spill, lambda: [work(item) for item in theirs])
        if given_away is not None:  # the child has its own copy of what its half needs
            for item in theirs:
                given_away(item)
        first: list[R] = []
        failure: Exception | None = None
        try:
            for item in mine:
                first.append(work(item))
        except BaseException as error:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if not isinstance(error, Exception):  # an interrupt: at once
                raise
            failure = error
        if failure is not None:  # the plain loop's error: an earlier item of the child's
            failed_at = parents[len(first)]  # fails first (run outside the `except`, so
            for index in childs:  # that its error carries no context the loop's lacks)
                if index > failed_at:
                    break
                work(items[index])
            raise failure
        _, status = os.waitpid(pid, 0)
        if status != 0:  # the child failed: its half again, here, to raise what it raised
            second = [work(item) for item in theirs]
        else:
            spill.seek(0)
            second = pickle.load(spill)
    results: list[R] = [None] * len(items)  # type: ignore[list-item]
    for index, result in zip(parents, first, strict=True):
        results[index] = result
    for index, result in zip(childs, second, strict=True):
        results[index] = result
    return results


def _forked_into(spill: BinaryIO, produce: Callable[[], object]) -> int:
    """Fork; the child pickles `produce()` into `spill` and exits (0 when it did, 1 when
    anything failed) without any of this process's cleanup; the child's pid, here."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            die_with_parent(parent)
            pickle.dump(produce(), spill, pickle.HIGHEST_PROTOCOL)
            spill.flush()
            code = 0
        finally:
            os._exit(code)  # never the parent's atexit handlers, buffers or finally blocks
    return pid


def _split(count: int, child_takes_first: bool) -> tuple[list[int], list[int]]:
    """The indexes of the items this process works on and of those the child does."""
    evens, odds = list(range(0, count, 2)), list(range(1, count, 2))
    return (odds, evens) if child_takes_first else (evens, odds)


class Ahead(Generic[R]):
    """The value of a piece of work started ahead (`Spare.give`): called, it returns it,
    waiting for the child that works on it; `running()` says whether that would wait."""

    def __init__(self, work: Callable[[], R], spill: BinaryIO | None, pid: int | None) -> None:
        self._work = work
        self._spill = spill
        self._pid = pid  # None once reaped, or without a child
        self._status = -1  # the child's exit status, once reaped

    def running(self) -> bool:
        """True while the child still works: what this process does meanwhile is free."""
        if self._pid is None:
            return False
        pid, status = os.waitpid(self._pid, os.WNOHANG)
        if pid == 0:
            return True
        self._pid, self._status = None, status
        return False

    def __call__(self) -> R:
        if self._pid is not None:
            _, self._status = os.waitpid(self._pid, 0)
            self._pid = None
        spill, self._spill = self._spill, None
        if spill is not None and self._status == 0:
            spill.seek(0)
            return pickle.load(spill)  # type: ignore[no-any-return]
        # No child, a child that failed (or asked twice): here, to raise what it raised.
        return self._work()

    def stop(self) -> None:
        """Stop the child if it still runs (the block was left without asking)."""
        if self._pid is not None:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = None


class Spare:
    """A process forked while this one is still small, to do one piece of work later.

    A child forked from a full heap shares every page of it copy-on-write, and each page
    either process then writes (a reference count is a write: reading an object writes
    it) is copied. The search index's child, forked from a 10,000-entry build's ~680 MB
    heap while this process rendered the aggregates and wrote files, took the build's
    memory from ~680 to ~1,300 MB (benchmarks/README.md, the Pss timeline). A spare,
    forked before the site is loaded, shares only what the build had then (~40 MB); it
    waits on a pipe for its work, a function and its arguments pickled (the function by
    name), so what it holds is only what it is given and what it makes.

    `give` sends the work and returns its `Ahead`: a spare that fails in any way is
    ignored and the work runs here when asked for (`Ahead`). `close` stops a spare
    given nothing, or whose work was not asked for."""

    def __init__(self, pid: int, work_pipe: int, spill: BinaryIO) -> None:
        self._pid: int | None = pid  # None once given its work: its Ahead has it then
        self._work_pipe: int | None = work_pipe  # closed once the work is sent
        self._spill = spill
        self._given: Ahead[Any] | None = None

    @classmethod
    def start(cls) -> Spare | None:
        """A spare, or None when forking is not safe here (`can_fork`)."""
        if not can_fork():
            return None
        try:
            spill = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        except OSError:
            return None
        try:
            read_end, write_end = os.pipe()
        except OSError:
            spill.close()
            return None

        def given_work() -> object:  # in the spare: waits for its work, then does it
            os.close(write_end)
            with os.fdopen(read_end, "rb") as work_pipe:
                # The end of the pipe before a whole pickle (closed unused, or the work
                # could not be pickled) fails here: nothing in the spill to read.
                work, args = pickle.load(work_pipe)
            return work(*args)

        try:
            pid = _forked_into(spill, given_work)
        except OSError:  # no memory or no process left for it: the work runs here
            os.close(read_end)
            os.close(write_end)
            spill.close()
            return None
        try:
            os.close(read_end)
            return cls(pid, write_end, spill)
        except BaseException:  # an interrupt before the spare is known to its caller
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(write_end)
            spill.close()
            raise

    def give(self, work: Callable[..., R], *args: Any) -> Ahead[R]:
        """`work(*args)` started in the spare (once: a spare does one piece of work);
        `work` must be a module-level function (pickled by name), `args` picklable."""
        pipe, pid = self._work_pipe, self._pid
        if pipe is None or pid is None:
            raise RuntimeError("a spare does one piece of work")
        self._work_pipe = self._pid = None
        # Known before the work is sent: an interrupt while sending it (~0.25 s for the
        # search index's terms at 10,000 entries) leaves `close` a spare to stop.
        self._given = Ahead(lambda: work(*args), self._spill, pid)
        try:
            with os.fdopen(pipe, "wb") as work_pipe:  # closed after: the spare sees the end
                pickle.dump((work, args), work_pipe, pickle.HIGHEST_PROTOCOL)
        except Exception:  # whatever a __reduce__ raises: the work runs here instead
            pass  # the spare gone (a broken pipe) or the work not picklable: the spare
            # fails on a cut pickle, and the work runs here when asked for
        return self._given

    def close(self) -> None:
        """Stop the spare (idle, or still at work nobody asked for) and reap it."""
        if self._work_pipe is not None:
            os.close(self._work_pipe)
            self._work_pipe = None
        if self._pid is not None:  # given nothing: killed rather than waited for (any
            os.kill(self._pid, signal.SIGKILL)  # other child holding the pipe's end
            os.waitpid(self._pid, 0)  # would keep it from seeing the end)
            self._pid = None
        if self._given is not None:
            self._given.stop()
        self._spill.close()


@contextmanager
def spare_process(worth_it: bool = True) -> Iterator[Spare | None]:
    """A `Spare` for the length of the block (None when not worth it or not safe),
    stopped when the block is left."""
    found: Spare | None = None
    try:
        found = Spare.start() if worth_it else None
        yield found
    finally:
        if found is not None:
            found.close()
