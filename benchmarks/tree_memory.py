"""Peak memory of a process and all its descendants: the sum of their Pss, sampled.

A build that forks (the builds before issue 22 did) shares its pages with its children
copy-on-write, so adding the processes' RSS counts the shared pages twice, and the
parent's own peak misses the children's private pages. Pss
(proportional set size, /proc/<pid>/smaps_rollup) charges each page to its sharers in
equal parts: the tree's Pss sum is the physical memory the build holds, counted once.

The sampler is a separate process (`python -m benchmarks.tree_memory PID INTERVAL`),
not a thread in the build: the builds before issue 22 refused to fork beside a second
thread, so a sampling thread would have changed what it measured. It is a child of the
build it samples, so it leaves itself out. It sleeps on its stdin between samples; end
of file (the build closed the pipe, or died) takes one last sample and prints the result
as one JSON line.

Linux only (/proc). Elsewhere `TreeMemory.start` returns None and the build's figures
are reported without the tree's peak (run.py then judges the peak-memory row on nothing
and says so: not met).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: Seconds between samples. A build's memory grows over seconds (N = 10,000: 10 s, a
#: 1 GB heap); 25 ms sees each phase's peak to within what it allocates in 25 ms.
INTERVAL = 0.025


def available() -> bool:
    return Path("/proc/self/smaps_rollup").is_file()


def pss_kb(pid: int) -> int:
    """The Pss of `pid`, in kB; 0 when it ended (or has no address space: a zombie)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class ProcessTable:
    """pid -> parent pid of every process, read from /proc/<pid>/stat once per pid.

    /proc/<pid>/task/<tid>/children would list the children directly, but kernels
    built without CONFIG_PROC_CHILDREN (this machine's) lack it; reading every
    process's stat on each sample costs ~2 ms, so a pid's parent is read once
    and kept (a pid reused within one build, after 4 million others, is not worth
    the cost of noticing)."""

    def __init__(self) -> None:
        self._parent: dict[int, int] = {}

    def descendants(self, root: int) -> list[int]:
        alive = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        for pid in alive:
            if pid not in self._parent:
                self._parent[pid] = _parent_of(pid)
        children: dict[int, list[int]] = {}
        for pid in alive:
            children.setdefault(self._parent[pid], []).append(pid)
        found, pending = [], [root]
        while pending:
            for child in children.get(pending.pop(), []):
                found.append(child)
                pending.append(child)
        return found


def _parent_of(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return -1
    return int(stat.rsplit(b")", 1)[1].split()[1])  # the command name may hold spaces


def rss_kb(pid: int) -> int:
    """The resident set of `pid`, in kB (statm: read in constant time); 0 when ended."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_bytes().split()[1]) * _PAGE_KB
    except (OSError, ValueError, IndexError):
        return 0


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4
#: Reading Pss walks the page tables (~25 ms per GB resident here): at most this share
#: of the sampler's wall time goes to it, the rest of the build's second core to the build.
WALK_SHARE = 0.1


def sample(root: int, interval: float, stop_fd: int) -> dict[str, Any]:
    """Sample `root`'s tree until `stop_fd` reads end of file; the peak and its moment.

    While `root` runs alone its Rss is taken (constant time; its Pss plus the pages of
    shared libraries it shares with other processes: an upper bound by a few MB). While
    it has children, Rss would count their copy-on-write pages twice: the Pss of each is
    read (a page-table walk), whenever the Rss sum could beat the peak so far and the
    walks stayed within WALK_SHARE of the time."""
    table, me = ProcessTable(), os.getpid()
    started = time.perf_counter()
    peak = samples = walks = most_processes = 0
    peak_at = walking = 0.0
    next_walk = 0.0
    last = False
    while True:
        now = time.perf_counter()
        pids = [root, *(pid for pid in table.descendants(root) if pid != me)]
        most_processes = max(most_processes, len(pids))
        samples += 1
        if len(pids) == 1:
            value = rss_kb(root)
        elif sum(rss_kb(pid) for pid in pids) > peak and (now >= next_walk or last):
            value = sum(pss_kb(pid) for pid in pids)
            took = time.perf_counter() - now
            walks, walking = walks + 1, walking + took
            next_walk = now + took / WALK_SHARE
        else:
            value = 0
        if value > peak:
            peak, peak_at = value, now - started
        if last:
            break
        ready, _, _ = select.select([stop_fd], [], [], interval)
        last = bool(ready) and not os.read(stop_fd, 4096)
    return {
        "peak_pss_kb": peak,
        "peak_at_seconds": peak_at,
        "samples": samples,
        "pss_walks": walks,
        "walk_seconds": walking,
        "most_processes": most_processes,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time(),  # the sampler's own, its start included
    }


class TreeMemory:
    """The sampler process of this process's tree: `start()` before the work, `stop()`
    after it (after this process read its own rusage: the sampler is a child too)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @classmethod
    def start(cls, interval: float = INTERVAL) -> TreeMemory | None:
        if not available():
            return None
        process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.tree_memory", str(os.getpid()), str(interval)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        # Wait until it runs (its interpreter started: ~30 ms), so that the work does
        # not begin unwatched.
        if process.stdout.readline().strip() != b"sampling":
            process.kill()
            process.wait()
            raise RuntimeError("the memory sampler did not start")
        return cls(process)

    def stop(self) -> dict[str, Any]:
        stdout, _ = self._process.communicate()  # closes its stdin: the last sample
        if self._process.returncode != 0:
            raise RuntimeError(f"the memory sampler failed with {self._process.returncode}")
        return json.loads(stdout.strip().splitlines()[-1])


#: Set to "on" in the environment of the build run that samples (build_bench
#: `measure_tree_memory`): the timed runs are not sampled, the sampler costs the build
#: ~7 % of its wall time at N = 1,000 on two shared cores (docs/decisions.md).
SWITCH = "BENCH_MEMORY_SAMPLER"


def start_if_asked() -> TreeMemory | None:
    return TreeMemory.start() if os.environ.get(SWITCH) == "on" else None


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 2:
        print("usage: python -m benchmarks.tree_memory PID INTERVAL_SECONDS", file=sys.stderr)
        return 2
    root, interval = args
    print("sampling", flush=True)
    print(json.dumps(sample(int(root), float(interval), sys.stdin.fileno())), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
