"""Independent work in two halves, one in a forked child process: the build's one use of
a second core.

Rendering 20,000 entries is independent work once the lock is resolved (9 s of a cold
10,000-entry build, all Python, so threads would share one core). A forked child renders
its half from the parent's memory as it is (no models pickled across), writes its
results to an unnamed temporary file, and exits; the parent renders the other half
meanwhile and then reads the file. The result is the same list, in the same order, as
doing all the work here: a child that fails in any way is ignored and its half is done
again here, so an error is raised exactly as it would be without a child.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Below this many items a fork, a pickle and a read cost more than they save.
MINIMUM_ITEMS = 2_000


def can_fork() -> bool:
    """Two CPUs, `os.fork`, and no other thread in this process: forking a process with
    threads can leave a lock held in the child (a logging or I/O lock another thread had)."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) >= 2 and threading.active_count() == 1


def in_halves(
    items: Sequence[T],
    work: Callable[[T], R],
    minimum: int = MINIMUM_ITEMS,
    given_away: Callable[[T], None] | None = None,
) -> list[R]:
    """`[work(item) for item in items]`, shared with a forked child when worth it: this
    process works up from the first item, the child down from the last, until they meet
    (each says in shared memory how far it got before taking an item). So the split
    follows what the items and the two processes cost as they run: the two ends of a
    site do not cost alike (its documents come first and cost twice as much as its FAQ
    entries), this process has more to do around the work (`given_away`, reading the
    child's results), and the machine's cores are shared (a fixed split of alternate
    items left one process idle 0.3-0.9 s of a 5.5 s render at 10,000 entries).

    `given_away(item)` is called here for items the child took, as it takes them, so that
    what only that work needed can be freed here (the work may run again here if the
    child fails, so it must not depend on what was freed).

    An item both met at once is done by either, or by neither and then here, after the
    child: the results are those of the plain loop, and so is the error, the first in
    `items`' order (this process's items before it have all passed; an item of a child
    that failed, or left undone, is done here, in order)."""
    count = len(items)
    if count < minimum or not can_fork():
        return [work(item) for item in items]
    reach = _shared_reach(count)
    with tempfile.TemporaryFile() as spill:
        pid = os.fork()
        if pid == 0:  # the child: its end, to the file, then out without any cleanup
            code = 1
            try:
                _from_the_back(items, work, reach, pickle.Pickler(spill, pickle.HIGHEST_PROTOCOL))
                spill.flush()
                code = 0
            finally:
                os._exit(code)  # never the parent's atexit handlers, buffers or finally blocks
        first: list[R] = []
        given = count  # the items from here on were given away
        try:
            for index, item in enumerate(items):
                reach[FRONT] = index + 1
                back = reach[BACK]
                if index >= back:  # the child has (or is taking) this one: they met
                    break
                if given_away is not None and back + 1 < given:  # certainly the child's
                    for taken in items[back + 1 : given]:
                        given_away(taken)
                    given = back + 1
                first.append(work(item))
        except BaseException:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise  # every item before it passed here: the plain loop's error
        _, status = os.waitpid(pid, 0)
        start, theirs = count, []  # a child that failed: its end again, here
        if status == 0:
            spill.seek(0)
            start, theirs = _read_back(pickle.Unpickler(spill))
    return _joined(items, work, first, start, theirs)


def _joined(
    items: Sequence[T], work: Callable[[T], R], first: list[R], start: int, theirs: list[R]
) -> list[R]:
    """The results of the items: `first` of the first ones, done here, `theirs` of those
    from `start` on, done by the child. An item both did is taken from here; the items
    between (none, one that neither took, or the whole of the child's end if it failed)
    are done here, in order."""
    done = len(first)
    between = [work(item) for item in items[done:start]]
    return [*first, *between, *theirs[max(0, done - start) :]]


FRONT, BACK = 0, 1  # the two numbers' places in the shared memory


def _shared_reach(count: int) -> memoryview:
    """Two signed 64-bit numbers in memory shared with a child forked later (an anonymous
    mapping is shared across fork): [FRONT] how many items this process has taken from
    the front, [BACK] the first item the child has taken from the back. Read and written
    as whole aligned numbers: `struct.pack_into` zeroes its bytes before it writes them,
    and a process reading them meanwhile read 0 (then stopped at once and waited)."""
    reach = memoryview(mmap.mmap(-1, 16)).cast("q")
    reach[FRONT], reach[BACK] = 0, count
    return reach


def _from_the_back(
    items: Sequence[T], work: Callable[[T], R], reach: memoryview, out: pickle.Pickler
) -> None:
    """The child's share: each result written as it is made, last item first (none
    left to write when the two processes meet: writing them all then kept the parent
    waiting 0.4 s at 10,000 entries), then the first item it did (`_read_back`)."""
    index = len(items) - 1
    while index >= 0:
        reach[BACK] = index
        if index < reach[FRONT]:  # this process has (or is taking) it
            break
        out.dump(work(items[index]))
        index -= 1
    out.dump(_Start(index + 1))


class _Start(int):
    """The first item the child did: the last record it writes."""


def _read_back(records: pickle.Unpickler) -> tuple[int, list[Any]]:
    """What `_from_the_back` wrote: (the first item the child did, its results in order)."""
    results = []
    while not isinstance(record := records.load(), _Start):
        results.append(record)
    results.reverse()
    return int(record), results


@contextmanager
def ahead(work: Callable[[], R], worth_it: bool = True) -> Iterator[Callable[[], R]]:
    """`work()` started in a forked child (when worth it and safe, as for `in_halves`)
    while this process does something else; the function yielded returns its value,
    waiting for the child. A child that fails in any way is ignored and `work()` runs
    here when asked for, so an error is raised here, at the same point, as without a
    child. Leaving the block without asking stops the child."""
    if not worth_it or not can_fork():
        yield work
        return
    with tempfile.TemporaryFile() as spill:
        pid = os.fork()
        if pid == 0:  # the child: the value, to the file, then out without any cleanup
            code = 1
            try:
                pickle.dump(work(), spill, pickle.HIGHEST_PROTOCOL)
                spill.flush()
                code = 0
            finally:
                os._exit(code)  # never the parent's atexit handlers, buffers or finally blocks
        running = [pid]

        def result() -> R:
            if running:
                _, status = os.waitpid(running.pop(), 0)
                if status == 0:
                    spill.seek(0)
                    return pickle.load(spill)  # type: ignore[no-any-return]
            return work()  # the child failed (or was asked twice): here, to raise what it raised

        try:
            yield result
        finally:
            if running:
                os.kill(running[0], signal.SIGKILL)
                os.waitpid(running[0], 0)
