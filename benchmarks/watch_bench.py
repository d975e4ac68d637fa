"""Issue 11 target 4: `serve --watch` from the outside, as a site owner sees it.

`python -m content_builder serve --site SITE --port P --watch` runs as a child process
(its own session, its own build cache in a fresh folder) and this process only talks
HTTP to it and reads its /proc entries:

- *first answer*: seconds from starting the server until GET /llms.txt answers 200 (a
  cold build, the cache empty);
- *idle*: CPU (utime + stime of every thread, /proc/<pid>/stat) over `idle_seconds`
  once the server is quiet (`_quiet`), as a percentage of one core;
- *safety scan*: the watcher rescans site_data every SAFETY_SCAN_SECONDS (agent_edge/
  serve.py) even when nothing changed, which no idle window of a few seconds holds: one
  scan's CPU is measured on its own (`scan_costs`) and added to the idle figure,
  amortized over SAFETY_SCAN_SECONDS (`idle_with_scans_percent`, the judged figure);
- *edit to served*: one FAQ file at a time gets a sentence with a unique word put in
  front of its answer (written to a temporary file and renamed over the original, as
  editors save, so the watcher never reads a half-written file); from the rename, GET
  /api/v1/faq/<id>.json and its .md twin every `poll_seconds` until both carry the word.
  `edits` different FAQ entries, one after the other (each edit stays in place until the
  end, so no restore rebuild runs in the middle of the next one), each started on a
  quiet server; the server's CPU seconds over each edit, and how long it stays busy
  after serving it, are recorded too;
- *peak memory*: the server's VmHWM (/proc/<pid>/status) at the end.

An edit never served within `timeout` seconds, a non-200 answer for the edited entry, or
a server that dies raises RuntimeError with the tail of the server's log. Every edited
file and the lock are put back byte for byte, and the server's process group killed,
whatever happens.

    python -m benchmarks.watch_bench SITE [--edits 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_contract import paths
from agent_edge.serve import SAFETY_SCAN_SECONDS

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
LOCK_FILE = "content.lock.json"
_ANSWER = "answer: |\n  "
_ID = re.compile(r"^id: *(\S+) *$", re.MULTILINE)


@dataclass(frozen=True)
class Edit:
    faq_id: str
    word: str
    seconds: float  # from the rename to both files served with the word
    server_cpu_seconds: float  # the server's CPU over the same span
    busy_after_seconds: float  # from served until the server is quiet again (_quiet)


@dataclass(frozen=True)
class WatchResult:
    n: int
    first_answer_seconds: float
    idle_seconds: float
    idle_cpu_percent: float  # of one core
    edit_seconds: float  # median of the edits
    edit_runs: list[float]
    edit_cpu_seconds: float  # median server CPU per edit
    edits: list[Edit]
    peak_rss_mb: float
    #: One safety scan's CPU (median of SCANS), the idle window above never holding one:
    #: the watcher rescans site_data every SAFETY_SCAN_SECONDS even when nothing changed.
    scan_cpu_seconds: float = 0.0
    scan_runs: list[float] = field(default_factory=list)
    safety_scan_seconds: float = SAFETY_SCAN_SECONDS
    #: The judged idle figure: the window's share plus one scan per SAFETY_SCAN_SECONDS.
    idle_with_scans_percent: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the server's process, from /proc -----------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of `pid` (fields 14 and 15 of /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


def run_seconds(pid: int) -> float:
    """Time on a CPU of every live thread of `pid`, in nanosecond units
    (/proc/<pid>/task/*/schedstat): cpu_seconds counts 10 ms ticks, too coarse for one
    scan of a small site. Without schedstat, cpu_seconds."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that just ended
                total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return cpu_seconds(pid)
    return total / 1e9


#: Safety scans measured; the median is reported.
SCANS = 3
#: The watcher takes the events of one save together (agent_edge.changes, watchfiles'
#: debounce), then scans: wait at least this long before asking whether the server is
#: quiet again.
SCAN_SETTLE = 0.3


def scan_costs(pid: int, site: Path, idle_share: float, timeout: float) -> list[float]:
    """CPU seconds of the server for one scan of `site`, SCANS times.

    The safety scan runs once a minute; waiting for it would add minutes to `make bench`.
    It is the same work as the scan after a change event (a fingerprint of every file
    under site_data compared with the last one), so a dot-file is created and removed in
    site_data: the watcher wakes (watchfiles sees every name) and scans, the fingerprint
    leaves dot-files out, so it finds nothing changed and rebuilds nothing: an upper
    bound of the safety scan's cost. The idle
    CPU of the same span (`idle_share` of a core) is taken off."""
    trigger = site / ".watch-bench-scan"
    costs = []
    for _ in range(SCANS):
        _quiet(pid, timeout)
        before, started = run_seconds(pid), time.perf_counter()
        os.close(os.open(trigger, os.O_CREAT | os.O_WRONLY, 0o644))
        trigger.unlink()
        time.sleep(SCAN_SETTLE)
        _quiet(pid, timeout)
        spent = run_seconds(pid) - before
        costs.append(max(0.0, spent - idle_share * (time.perf_counter() - started)))
    return costs


#: The server counts as quiet once it used less than this share of a core over one
#: QUIET_WINDOW: after it served an edit it still frees the previous build's objects.
QUIET_SHARE = 0.05
QUIET_WINDOW = 0.5


def _quiet(pid: int, limit: float) -> float:
    """Wait until `pid` idles (QUIET_SHARE over QUIET_WINDOW); seconds waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        before = cpu_seconds(pid)
        time.sleep(QUIET_WINDOW)
        if cpu_seconds(pid) - before < QUIET_SHARE * QUIET_WINDOW:
            break
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def serve_command(site: Path, port: int, watch: bool = True) -> list[str]:
    command = [sys.executable, "-m", "content_builder", "serve", "--site", str(site),
               "--port", str(port), "--base-url", f"http://{HOST}:{port}"]  # fmt: skip
    return [*command, "--watch"] if watch else command


class Server:
    """The child server, its log, and one keep-alive connection to it."""

    def __init__(self, command: list[str], log: Path, cache: Path, port: int) -> None:
        self.log, self.port = log, port
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=sink,
                stderr=subprocess.STDOUT, start_new_session=True,
                # Unbuffered: the log's tail (a failed rebuild's message) is there when
                # a failure quotes it, even after the server is killed.
                env={**os.environ, "AGENT_ACCESS_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        self.connection: http.client.HTTPConnection | None = None

    def failure(self, message: str) -> RuntimeError:
        tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
        return RuntimeError(f"{message}\n--- server log (tail) ---\n{tail}")

    def alive(self) -> None:
        if self.process.poll() is not None:
            raise self.failure(f"the server exited with {self.process.returncode}")

    def get(self, path: str, timeout: float) -> tuple[int, bytes]:
        """One GET on the kept connection; a broken connection is opened again once."""
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
            try:
                self.connection.timeout = timeout
                self.connection.request("GET", path)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        if self.connection is not None:
            self.connection.close()
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def first_answer(server: Server, timeout: float) -> float:
    """Seconds until GET /llms.txt answers 200. The server listens before it has built
    (it binds first), so a connection may wait in the backlog: each attempt waits up to
    2 s, then the process is checked and the attempt repeated."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        server.alive()
        try:
            status, _ = server.get(paths.LLMS_TXT, timeout=2.0)
        except (OSError, http.client.HTTPException):
            time.sleep(0.05)
            continue
        if status == 200:
            return time.perf_counter() - started
        raise server.failure(f"GET {paths.LLMS_TXT} answered {status}")
    raise server.failure(f"the server did not answer within {timeout:.0f} s")


# --- the edit -----------------------------------------------------------------------------


def faq_files(site: Path) -> dict[str, Path]:
    """FAQ id -> its file, from each file's `id:` line."""
    found = {}
    for path in sorted((site / "faq").glob("*.yaml")):
        match = _ID.search(path.read_text(encoding="utf-8"))
        if match:
            found[match.group(1).strip("'\"")] = path
    return found


def pick_faqs(site: Path, count: int) -> list[str]:
    """`count` FAQ ids spread over the site (a quarter, a half, three quarters in)."""
    ids = sorted(faq_files(site))
    if len(ids) < count:
        raise ValueError(f"{site} has {len(ids)} FAQ entries, {count} edits asked")
    return [ids[(index + 1) * len(ids) // (count + 1)] for index in range(count)]


def _replace(path: Path, data: bytes) -> None:
    """Write `data` to a dot-file next to `path` (the watcher ignores dot-files), then
    rename it over `path`: one atomic change, as an editor's save."""
    temporary = path.with_name(f".{path.name}.watch-bench")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _wait_served(
    server: Server, faq_id: str, word: str, timeout: float, poll_seconds: float
) -> float:
    """Poll the entry's JSON and Markdown until both carry `word`; seconds from now."""
    targets = [paths.faq(faq_id), paths.faq_markdown(faq_id)]
    needle = word.encode()
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        served = 0
        for target in targets:
            try:
                status, body = server.get(target, timeout=max(1.0, timeout))
            except (OSError, http.client.HTTPException) as error:
                raise server.failure(f"GET {target} failed: {error!r}") from error
            if status != 200:
                raise server.failure(f"GET {target} answered {status} while waiting for {word!r}")
            served += needle in body
        if served == len(targets):
            return time.perf_counter() - started
        server.alive()
        time.sleep(poll_seconds)
    raise server.failure(
        f"the edit of FAQ {faq_id!r} (the word {word!r}) was never served: "
        f"{' and '.join(targets)} still lacked it after {timeout:.0f} s"
    )


def measure(
    site: Path,
    n: int,
    work: Path,
    edits: int = 3,
    idle_seconds: float = 5.0,
    timeout: float = 300.0,
    poll_seconds: float = 0.02,
    faq_ids: Sequence[str] | None = None,
    watch: bool = True,
) -> WatchResult:
    """Start `serve --watch` on `site`, measure, and leave `site` as it was.

    `faq_ids` chooses the edited entries (default: `edits` spread over the site);
    `watch=False` runs the server without --watch (one that never rebuilds: the
    harness must then fail, tests/test_benchmarks_smoke.py)."""
    files = faq_files(site)
    chosen = list(faq_ids) if faq_ids is not None else pick_faqs(site, edits)
    missing = [faq_id for faq_id in chosen if faq_id not in files]
    if missing:
        raise ValueError(f"no FAQ file in {site / 'faq'} has the id {', '.join(missing)}")
    originals = {files[faq_id]: files[faq_id].read_bytes() for faq_id in chosen}
    for path, data in originals.items():
        if _ANSWER not in data.decode("utf-8"):
            raise ValueError(f"{path}: no literal `answer: |` block to edit")
    lock = site / LOCK_FILE
    original_lock = lock.read_bytes() if lock.exists() else None

    work.mkdir(parents=True, exist_ok=True)
    cache = work / "watch-cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    port = free_port()
    server = Server(serve_command(site, port, watch), work / "watch-server.log", cache, port)
    done: list[Edit] = []
    try:
        first = first_answer(server, timeout)
        pid = server.process.pid
        _quiet(pid, timeout)  # the watcher's first scan
        before, started = cpu_seconds(pid), time.perf_counter()
        time.sleep(idle_seconds)
        idle_wall = time.perf_counter() - started
        idle_percent = 100 * (cpu_seconds(pid) - before) / idle_wall
        scans = scan_costs(pid, site, idle_percent / 100, timeout) if watch else []
        for index, faq_id in enumerate(chosen):
            path = files[faq_id]
            word = f"watchbench{index}x{os.getpid()}"
            text = originals[path].decode("utf-8")
            edited = text.replace(_ANSWER, f"{_ANSWER}Edited for the watch benchmark {word}. ", 1)
            cpu_before = cpu_seconds(pid)
            _replace(path, edited.encode("utf-8"))
            seconds = _wait_served(server, faq_id, word, timeout, poll_seconds)
            cpu = cpu_seconds(pid) - cpu_before
            # Each edit starts on a quiet server, not during the last one's clean-up.
            done.append(Edit(faq_id, word, seconds, cpu, _quiet(pid, timeout)))
        peak = peak_rss_mb(pid)
    finally:
        server.stop()
        for path, data in originals.items():
            _replace(path, data)
        if original_lock is not None:
            lock.write_bytes(original_lock)
        shutil.rmtree(cache, ignore_errors=True)
    return WatchResult(
        n=n,
        first_answer_seconds=first,
        idle_seconds=idle_wall,
        idle_cpu_percent=idle_percent,
        edit_seconds=statistics.median(edit.seconds for edit in done),
        edit_runs=[edit.seconds for edit in done],
        edit_cpu_seconds=statistics.median(edit.server_cpu_seconds for edit in done),
        edits=done,
        peak_rss_mb=peak,
        scan_cpu_seconds=statistics.median(scans) if scans else 0.0,
        scan_runs=scans,
        idle_with_scans_percent=idle_percent
        + (100 * statistics.median(scans) / SAFETY_SCAN_SECONDS if scans else 0.0),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="`serve --watch`: first answer, idle, edits")
    parser.add_argument("site", type=Path, help="a site_data folder (benchmarks.sitegen)")
    parser.add_argument("--n", type=int, default=0, help="its N, for the report")
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--work", type=Path, default=None, help="default: a temporary folder")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="watch-bench-"))
    result = measure(args.site, args.n, work, args.edits, args.idle_seconds, args.timeout)
    print(json.dumps(result.as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
