"""content_builder.halves: the same results, in the same order, as doing all the work here;
a child that fails changes nothing but the time."""

from __future__ import annotations

import os
import pickle
import tempfile
import threading
import time

import pytest

from content_builder import halves


def _square_with_pid(item: int) -> tuple[int, int]:
    return item * item, os.getpid()


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork path, whatever threads other tests left behind in this process (the
    work here takes no lock another thread could hold)."""
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)


def _slow_square_with_pid(item: int) -> tuple[int, int]:
    time.sleep(0.001)  # long enough for the child to start before this process is done
    return _square_with_pid(item)


def _pids(results: list[tuple[int, int]]) -> list[int]:
    return [pid for _, pid in results]


@pytest.mark.usefixtures("forking")
def test_the_results_are_those_of_a_plain_loop_in_order() -> None:
    items = list(range(101))
    results = halves.in_halves(items, _slow_square_with_pid, minimum=10)
    assert [value for value, _ in results] == [item * item for item in items]
    pids = _pids(results)
    assert pids[0] == os.getpid() and pids[-1] != os.getpid(), "the front here, the back there"
    met = pids.index(pids[-1])
    assert set(pids[:met]) == {os.getpid()} and set(pids[met:]) == {pids[-1]}, "they met once"


@pytest.mark.usefixtures("forking")
def test_the_split_follows_what_each_process_takes_to_work() -> None:
    """A child slowed down (a shared core): this process takes more than half."""
    parent = os.getpid()

    def slow_in_the_child(item: int) -> tuple[int, int]:
        time.sleep(0.001 if os.getpid() == parent else 0.004)
        return _square_with_pid(item)

    results = halves.in_halves(list(range(200)), slow_in_the_child, minimum=10)
    assert [value for value, _ in results] == [item * item for item in range(200)]
    here = _pids(results).count(parent)
    assert 150 <= here < 200, f"{here} of 200 items here"


@pytest.mark.usefixtures("forking")
def test_only_what_the_child_took_is_given_away_here() -> None:
    given: list[int] = []
    parent = os.getpid()

    results = halves.in_halves(
        list(range(100)), _slow_square_with_pid, minimum=10, given_away=given.append
    )
    theirs = [index for index, pid in enumerate(_pids(results)) if pid != parent]
    assert given, "given away as the child took them"
    assert len(given) == len(set(given)) and set(given) <= set(theirs)


def test_items_between_the_two_ends_are_done_here_once() -> None:
    items = list(range(10))
    done = [(item, "here") for item in items]

    def work(item: int) -> tuple[int, str]:
        return item, "here"

    theirs = [(item, "child") for item in items]
    # Met exactly; overlapping by one (taken from here); one left between; the child failed.
    assert halves._joined(items, work, done[:6], 6, theirs[6:]) == done[:6] + theirs[6:]
    assert halves._joined(items, work, done[:6], 5, theirs[5:]) == done[:6] + theirs[6:]
    assert halves._joined(items, work, done[:6], 7, theirs[7:]) == done[:7] + theirs[7:]
    assert halves._joined(items, work, done[:6], 10, []) == done


def test_the_child_stops_where_this_process_has_reached() -> None:
    reach = halves._shared_reach(10)
    reach[halves.FRONT] = 6  # this process has taken items 0 to 5
    with tempfile.TemporaryFile() as spill:
        halves._from_the_back(list(range(10)), lambda item: -item, reach, pickle.Pickler(spill))
        spill.seek(0)
        assert halves._read_back(pickle.Unpickler(spill)) == (6, [-6, -7, -8, -9])
    assert reach[halves.BACK] == 5, "it said where it stopped"


@pytest.mark.usefixtures("forking")
def test_an_error_in_the_childs_half_is_raised_here_as_without_a_child() -> None:
    parent = os.getpid()

    def work(item: int) -> int:
        if item == 7:
            raise ValueError(
                f"item 7 fails (in {'the parent' if os.getpid() == parent else 'a child'})"
            )
        return item

    with pytest.raises(ValueError, match=r"item 7 fails \(in the parent\)"):
        halves.in_halves(list(range(20)), work, minimum=10)


def test_few_items_or_other_threads_mean_no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", no_fork)
    assert halves.in_halves([1, 2, 3], lambda item: item + 1, minimum=10) == [2, 3, 4]
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # another thread: a fork could hold its locks
    other.start()
    try:
        assert not halves.can_fork()
        assert halves.in_halves(list(range(50)), lambda item: -item, minimum=10)[-1] == -49
    finally:
        stop.set()
        other.join()


def _pid_and_value(value: int) -> tuple[int, int]:
    return os.getpid(), value


@pytest.mark.usefixtures("forking")
def test_work_ahead_runs_in_a_child_and_its_value_comes_back() -> None:
    with halves.ahead(lambda: _pid_and_value(42)) as result:
        pid, value = result()
    assert value == 42 and pid != os.getpid()


@pytest.mark.usefixtures("forking")
def test_work_ahead_that_fails_in_the_child_is_raised_here() -> None:
    parent = os.getpid()

    def work() -> int:
        where = "the parent" if os.getpid() == parent else "a child"
        raise ValueError(f"fails in {where}")

    with pytest.raises(ValueError, match="fails in the parent"), halves.ahead(work) as result:
        result()


@pytest.mark.usefixtures("forking")
def test_work_ahead_not_asked_for_is_stopped() -> None:
    with halves.ahead(lambda: threading.Event().wait(60)):  # a child that would linger
        pass
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # killed and reaped: no zombie, no orphan


def test_work_ahead_not_worth_it_runs_here_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", no_fork)
    with halves.ahead(lambda: _pid_and_value(7), worth_it=False) as result:
        assert result() == (os.getpid(), 7)


@pytest.mark.usefixtures("forking")
def test_the_first_error_in_order_is_raised_whichever_process_meets_it() -> None:
    parent = os.getpid()

    def work(item: int) -> int:
        if item in (3, 4, 17):
            where = "here" if os.getpid() == parent else "in a child"
            raise ValueError(f"item {item} fails {where}")
        return item

    with pytest.raises(ValueError, match=r"^item 3 fails here$"):
        halves.in_halves(list(range(20)), work, minimum=10)
    with pytest.raises(ValueError, match=r"^item 17 fails here$"):  # the child's end
        halves.in_halves([*range(5, 20), 17, 18, 19], work, minimum=10)


@pytest.mark.usefixtures("forking")
def test_a_child_that_dies_leaves_its_end_to_this_process() -> None:
    parent = os.getpid()

    def dies_in_the_child(item: int) -> tuple[int, int]:
        if os.getpid() != parent:
            os._exit(3)  # killed mid-way: no result file
        return _slow_square_with_pid(item)

    results = halves.in_halves(list(range(40)), dies_in_the_child, minimum=10)
    assert results == [(item * item, parent) for item in range(40)]


@pytest.mark.usefixtures("forking")
def test_the_shared_reach_is_never_read_half_written() -> None:
    """Each number is read as one of the values written (struct.pack_into zeroed it
    first: the parent read 0, stopped at once and waited for the child's whole end)."""
    reach = halves._shared_reach(1 << 40)
    pid = os.fork()
    if pid == 0:  # a writer of numbers counting down, never 0
        code = 1
        try:
            value = 1 << 40
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:
                reach[halves.BACK] = value
                value -= 1
            code = 0
        finally:
            os._exit(code)
    seen = set()
    try:
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            seen.add(reach[halves.BACK] == 0)
    finally:
        os.waitpid(pid, 0)
    assert seen == {False}
