"""content_builder.halves: the same results, in the same order, as doing all the work here;
a child that fails changes nothing but the time."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

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


@pytest.mark.usefixtures("forking")
def test_the_results_are_those_of_a_plain_loop_in_order() -> None:
    items = list(range(101))
    results = halves.in_halves(items, _square_with_pid, minimum=10)
    assert [value for value, _ in results] == [item * item for item in items]
    workers = {pid for _, pid in results}
    assert os.getpid() in workers and len(workers) == 2, "one half ran in a child"
    assert {pid for index, (_, pid) in enumerate(results) if index % 2} == workers - {os.getpid()}


@pytest.mark.usefixtures("forking")
def test_the_child_can_take_the_first_item_and_every_other_one() -> None:
    items = list(range(101))
    results = halves.in_halves(items, _square_with_pid, minimum=10, child_takes_first=True)
    assert [value for value, _ in results] == [item * item for item in items]
    assert {pid for _, pid in results[1::2]} == {os.getpid()}
    assert os.getpid() not in {pid for _, pid in results[0::2]}


@pytest.mark.usefixtures("forking")
def test_what_the_child_took_is_given_away_here() -> None:
    given: list[int] = []
    halves.in_halves(list(range(20)), _square_with_pid, minimum=10, given_away=given.append)
    assert given == list(range(1, 20, 2))


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


def _fails_where(parent: int) -> int:
    where = "the parent" if os.getpid() == parent else "a child"
    raise ValueError(f"fails in {where}")


def _when_allowed(go: str) -> tuple[int, int]:
    while not os.path.exists(go):  # the spare works until the test lets it finish
        threading.Event().wait(0.01)
    return _pid_and_value(5)


def _sleep(seconds: float) -> None:
    threading.Event().wait(seconds)


@pytest.mark.usefixtures("forking")
def test_work_given_to_a_spare_runs_there_and_its_value_comes_back() -> None:
    with halves.spare_process() as spare:
        assert spare is not None
        pid, value = spare.give(_pid_and_value, 42)()
    assert value == 42 and pid != os.getpid()


@pytest.mark.usefixtures("forking")
def test_a_spare_is_forked_before_what_it_is_given_exists() -> None:
    """It holds what it is given, not what this process made after forking it."""
    with halves.spare_process() as spare:
        assert spare is not None
        made_after = ["made after the fork"]
        pid, value = spare.give(_pid_and_value, len(made_after))()
    assert (pid, value) != (os.getpid(), 1) and value == 1


@pytest.mark.usefixtures("forking")
def test_work_that_fails_in_the_spare_is_raised_here() -> None:
    with pytest.raises(ValueError, match="fails in the parent"), halves.spare_process() as spare:
        assert spare is not None
        spare.give(_fails_where, os.getpid())()


@pytest.mark.usefixtures("forking")
def test_work_that_cannot_be_pickled_runs_here() -> None:
    parent = os.getpid()
    with halves.spare_process() as spare:
        assert spare is not None
        assert spare.give(lambda: os.getpid())() == parent  # a lambda: not by name


@pytest.mark.usefixtures("forking")
def test_a_spare_does_one_piece_of_work() -> None:
    with halves.spare_process() as spare:
        assert spare is not None
        spare.give(_pid_and_value, 1)()
        with pytest.raises(RuntimeError, match="one piece of work"):
            spare.give(_pid_and_value, 2)


@pytest.mark.usefixtures("forking")
@pytest.mark.parametrize("given", [False, True])
def test_a_spare_idle_or_still_working_is_stopped_with_its_block(given: bool) -> None:
    with halves.spare_process() as spare:
        assert spare is not None
        if given:
            spare.give(_sleep, 60)  # work never asked for, that would linger
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # killed and reaped: no zombie, no orphan


@pytest.mark.usefixtures("forking")
def test_a_spare_says_whether_asking_would_wait_for_it(tmp_path: Path) -> None:
    go = tmp_path / "go"
    with halves.spare_process() as spare:
        assert spare is not None
        result = spare.give(_when_allowed, str(go))
        assert result.running(), "the spare still works"
        go.touch()
        for _ in range(1000):
            if not result.running():
                break
            threading.Event().wait(0.01)
        assert not result.running(), "the spare is done: asking does not wait"
        pid, value = result()
    assert value == 5 and pid != os.getpid(), "its value, from the spare"


def test_no_spare_when_not_worth_it_or_not_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", no_fork)
    with halves.spare_process(worth_it=False) as spare:
        assert spare is None
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # another thread: a fork could hold its locks
    other.start()
    try:
        with halves.spare_process() as spare:
            assert spare is None
    finally:
        stop.set()
        other.join()


# --- a parent killed without cleanup (SIGKILL, the OOM killer) ------------------------------

_KILLED_PARENT = """
import os, sys, time
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from content_builder import early, halves

os.cpu_count = lambda: 2  # the fork path on any machine
parent, pid_file, kind = os.getpid(), Path(sys.argv[1]), sys.argv[2]

def work(item=0):
    if os.getpid() != parent:  # the child says who it is, then outlives any test
        pid_file.write_text(str(os.getpid()))
    time.sleep(120)

if kind == "halves":
    halves.in_halves([0, 1, 2, 3], work, minimum=2)
elif kind == "spare":
    with halves.spare_process() as spare:
        spare.give(work)  # by name: __main__.work, in the fork as here
        time.sleep(120)
else:
    early.MINIMUM_FILES = 0
    early.write_files = lambda folder, files: work()
    assert early.EarlyFiles.start([], pid_file.parent / "out") is not None
    time.sleep(120)
"""


def _state(pid: int) -> tuple[str, str] | None:
    """(state, start time) from /proc/<pid>/stat (fields 3 and 22); None when gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return fields[0], fields[19]


def _gone(pid: int, started: str) -> bool:
    """No such process, a zombie waiting for whoever adopted it to reap it, or another
    process that reused the pid."""
    state = _state(pid)
    return state is None or state[0] in ("Z", "X") or state[1] != started


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("kind", ["halves", "spare", "early"])
def test_a_child_dies_with_a_parent_killed_without_cleanup(kind: str, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    child, started = 0, ""
    repo = str(Path(__file__).resolve().parents[1])
    parent = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT, str(pid_file), kind, repo])
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()):
            assert parent.poll() is None, f"the parent exited with {parent.returncode}"
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        state = _state(child)
        assert state is not None and state[0] not in ("Z", "X")
        started = state[1]
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while not _gone(child, started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child, started), f"the {kind} child outlived its killed parent"
    finally:
        parent.kill()
        parent.wait()
        # A child left behind (the test failed) is killed, never a process that took its pid.
        if started and not _gone(child, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_the_split_is_every_other_item() -> None:
    assert halves._split(7, False) == ([0, 2, 4, 6], [1, 3, 5])
    assert halves._split(7, True) == ([1, 3, 5], [0, 2, 4, 6])


@pytest.mark.usefixtures("forking")
def test_the_first_error_in_order_is_raised_whichever_process_meets_it() -> None:
    parent = os.getpid()

    def work(item: int) -> int:
        if item in (3, 4):  # 3 is the child's, 4 this process's
            where = "here" if os.getpid() == parent else "in a child"
            raise ValueError(f"item {item} fails {where}")
        return item

    with pytest.raises(ValueError, match=r"^item 3 fails here$") as raised:
        halves.in_halves(list(range(20)), work, minimum=10)
    # As the plain loop raises it: not "during handling of" the later item's error.
    assert raised.value.__context__ is None
    with pytest.raises(ValueError, match=r"^item 3 fails here$"):
        halves.in_halves(list(range(20)), work, minimum=10, child_takes_first=True)


@pytest.mark.usefixtures("forking")
def test_a_refused_fork_means_no_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    monkeypatch.setattr(os, "fork", refused)
    with halves.spare_process() as spare:
        assert spare is None, "the work runs here, the build goes on"
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before, "no pipe or file left open"


class _Unpicklable:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __reduce__(self) -> tuple[object, ...]:
        raise self.error


def _identity(value: object) -> int:
    return os.getpid()


@pytest.mark.usefixtures("forking")
def test_work_whose_arguments_fail_to_pickle_runs_here_and_leaves_no_zombie() -> None:
    with halves.spare_process() as spare:
        assert spare is not None
        result = spare.give(_identity, _Unpicklable(ValueError("no pickle for this")))
        assert result() == os.getpid(), "run here"
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # the spare reaped


@pytest.mark.usefixtures("forking")
def test_an_interrupt_while_the_work_is_sent_leaves_no_spare_behind() -> None:
    with pytest.raises(KeyboardInterrupt), halves.spare_process() as spare:
        assert spare is not None
        spare.give(_identity, _Unpicklable(KeyboardInterrupt()))
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # killed and reaped: no zombie, no orphan


@pytest.mark.usefixtures("forking")
def test_an_idle_spare_is_stopped_even_while_another_process_holds_its_pipe() -> None:
    """A child forked after the spare (a half, the early files) holds the pipe's write
    end too, so the spare would not see its end: `close` kills it rather than waits."""
    spare = halves.Spare.start()
    assert spare is not None
    held = os.dup(spare._work_pipe)  # type: ignore[arg-type]  # as a forked child would
    closing = threading.Thread(target=spare.close, daemon=True)
    closing.start()
    closing.join(10)
    stuck = closing.is_alive()
    os.close(held)  # a spare left alive now sees the end and exits: the test ends either way
    closing.join(10)
    assert not stuck, "close waited for the pipe's end instead of stopping the spare"
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
