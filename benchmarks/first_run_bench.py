"""Issue 11 target 1: the first run, from a fresh clone, as a new contributor meets it.

Every step starts from `git clone` of the repository's committed HEAD into a fresh folder
under the machine's temporary folder (`$TMPDIR` or /tmp; the result names its file
system), so nothing of this checkout's `.venv`, build cache or output is reused;
uncommitted or untracked changes are not measured (the result says so):

- *serve*: `make serve PORT=0` with an empty pip cache (`PIP_CACHE_DIR` set to a new,
  empty folder), from the start of `make` until the discovery URL it prints (`discovery:
  <url>`, on the port it bound) answers 200; then the size of the `.venv` it installed;
- *CI*: in a second fresh clone, `bash .ci/run`, what CI runs, with an empty pip cache
  too: the workflows' runners start without one (.github/workflows: setup-python with no
  `cache:`), so everything is downloaded, the `dev` extra's Pulumi and boto3 included;
- *test, warm*: `make test` again in that clone, its environment now installed, three
  times (`warm_runs`): the median is the figure, the runs are reported.

Each step runs in its own process group, its build cache in the clone's folder, without
the calling `make`'s variables or colours. A step that fails, or outlives `timeout`,
raises RuntimeError with the tail of its log; its process group is killed and the clones
are removed, whatever happens.

    python -m benchmarks.first_run_bench [--repo .] [--timeout 600]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
#: pytest's last line: "993 passed in 67.12s (0:01:07)", "3 passed, 1 warning in 0.5s".
_PYTEST_SUMMARY = re.compile(rb"^=*\s*(\d+ passed.*? in [\d.]+s)", re.MULTILINE)


@dataclass(frozen=True)
class FirstRunResult:
    commit: str  # the clones' HEAD
    uncommitted_changes: bool  # the working tree differed from `commit`: not measured
    filesystem: str  # of the folder the clones were made in ("ext4", "tmpfs", ...)
    serve_seconds: float  # `make serve` on a fresh clone, empty pip cache, until discovery answers
    serve_venv_mb: float
    ci_seconds: float  # `bash .ci/run` on a fresh clone, empty pip cache
    ci_summary: str  # pytest's summary line of that run
    test_warm_seconds: float  # `make test` again, in the same clone: the median run
    test_warm_summary: str  # of the median run
    test_warm_runs: list[float]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tail(log: Path) -> str:
    return log.read_bytes()[-3000:].decode("utf-8", "replace") if log.exists() else ""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _clone(repo: Path, folder: Path) -> Path:
    checkout = folder / "checkout"
    completed = subprocess.run(
        ["git", "clone", "--quiet", str(repo), str(checkout)], capture_output=True, text=True
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"git clone {repo} failed: {completed.stderr.strip()}")
    return checkout


def filesystem(path: Path) -> str:
    """The type of the file system `path` is on, from /proc/mounts ("unknown" without)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    resolved, best, kind = str(path.resolve()), "", "unknown"
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def _folder_mb(root: Path) -> float:
    size = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
    return size / 1e6


#: What would leak this process into a clone's run: its virtualenv, an inherited build
#: cache, the calling `make`'s variables (`make bench` runs this), colours in pytest's
#: summary line.
_LEAKS = frozenset(
    {"VIRTUAL_ENV", "PYTHONPATH", "AGENT_ACCESS_CACHE_DIR", "MAKEFLAGS", "MAKELEVEL", "MFLAGS",
     "MAKEOVERRIDES", "FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE"}
)  # fmt: skip


def _environment(checkout: Path, **extra: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if name not in _LEAKS}
    # The clone's build cache beside it, removed with it (the default, ~/.cache, would
    # keep one file per clone path forever).
    cache = str(checkout.parent / "build-cache")
    return {**environment, "AGENT_ACCESS_CACHE_DIR": cache, "PY_COLORS": "0", **extra}


def _start(command: list[str], checkout: Path, log: Path, environment: dict[str, str]) -> Any:
    with log.open("wb") as sink:
        return subprocess.Popen(
            command, cwd=checkout, stdin=subprocess.DEVNULL, stdout=sink,
            stderr=subprocess.STDOUT, start_new_session=True, env=environment,
        )  # fmt: skip


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Its whole process group (make, pytest's workers, the server), even once the
    leader has exited."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sent)
        try:
            process.wait(10)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # what ignored SIGTERM after the leader left
    process.wait()


_PRINTED_URL = re.compile(rb"^discovery: (http://\S+)$", re.MULTILINE)


def time_serve(checkout: Path, pip_cache: Path, timeout: float) -> float:
    """Seconds from starting `make serve` until the discovery URL it prints (`discovery:
    <url>`, once it has built) answers 200 to a GET. PORT=0: the server binds a free
    port itself and prints it, so no other process can take it in between."""
    log = checkout.parent / "serve.log"
    environment = _environment(checkout, PIP_CACHE_DIR=str(pip_cache), PYTHONUNBUFFERED="1")
    started = time.perf_counter()
    process = _start(["make", "serve", "PORT=0"], checkout, log, environment)
    try:
        while time.perf_counter() - started < timeout:
            if process.poll() is not None:
                raise RuntimeError(
                    f"`make serve` exited with {process.returncode} before its discovery URL "
                    f"answered\n--- log (tail) ---\n{_tail(log)}"
                )
            found = _PRINTED_URL.search(log.read_bytes())
            if found:
                url = found.group(1).decode()
                if not url.startswith(f"http://{HOST}:"):
                    raise RuntimeError(f"`make serve` printed {url}, not a URL on {HOST}")
                try:
                    with urllib.request.urlopen(url, timeout=2) as response:
                        if response.status == 200:
                            return time.perf_counter() - started
                except (OSError, urllib.error.URLError):
                    pass
            time.sleep(0.1)
        raise RuntimeError(
            f"`make serve` did not print a discovery URL that answers within {timeout:.0f} s\n"
            f"--- log (tail) ---\n{_tail(log)}"
        )
    finally:
        _stop(process)


def time_command(
    command: list[str], checkout: Path, log_name: str, timeout: float, **environment: str
) -> tuple[float, str]:
    """Seconds `command` took in `checkout`, and pytest's summary line from its output."""
    log = checkout.parent / log_name
    started = time.perf_counter()
    process = _start(command, checkout, log, _environment(checkout, **environment))
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"`{' '.join(command)}` took more than {timeout:.0f} s\n"
            f"--- log (tail) ---\n{_tail(log)}"
        ) from None
    finally:
        _stop(process)
    seconds = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(
            f"`{' '.join(command)}` failed with {code}\n--- log (tail) ---\n{_tail(log)}"
        )
    summaries = _PYTEST_SUMMARY.findall(log.read_bytes())
    if not summaries:
        raise RuntimeError(f"`{' '.join(command)}` printed no pytest summary\n{_tail(log)}")
    return seconds, summaries[-1].decode()


def measure(
    repo: Path = REPO, timeout: float = 600.0, scratch: Path | None = None, warm_runs: int = 3
) -> FirstRunResult:
    """The three first-run figures for `repo`'s HEAD; every clone removed afterwards."""
    dirty = bool(_git(repo, "status", "--porcelain"))
    root = Path(tempfile.mkdtemp(prefix="first-run-bench-", dir=scratch))
    try:
        serve_folder, ci_folder = root / "serve", root / "ci"
        serve_folder.mkdir()
        ci_folder.mkdir()
        pip_cache = serve_folder / "empty-pip-cache"
        pip_cache.mkdir()
        checkout = _clone(repo, serve_folder)
        commit = _git(checkout, "rev-parse", "HEAD")
        serve_seconds = time_serve(checkout, pip_cache, timeout)
        venv_mb = _folder_mb(checkout / ".venv")
        checkout = _clone(repo, ci_folder)
        ci_pip_cache = ci_folder / "empty-pip-cache"
        ci_pip_cache.mkdir()
        ci_seconds, ci_summary = time_command(
            ["bash", ".ci/run"], checkout, "ci.log", timeout, PIP_CACHE_DIR=str(ci_pip_cache)
        )
        warm = [
            time_command(["make", "test"], checkout, f"test-warm-{run}.log", timeout)
            for run in range(warm_runs)
        ]
        warm_seconds, warm_summary = sorted(warm)[(len(warm) - 1) // 2]
        kind = filesystem(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return FirstRunResult(
        commit=commit,
        uncommitted_changes=dirty,
        filesystem=kind,
        serve_seconds=serve_seconds,
        serve_venv_mb=venv_mb,
        ci_seconds=ci_seconds,
        ci_summary=ci_summary,
        test_warm_seconds=warm_seconds,
        test_warm_summary=warm_summary,
        test_warm_runs=[seconds for seconds, _ in warm],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fresh clone: make serve, CI, make test warm")
    parser.add_argument("--repo", type=Path, default=REPO, help="a git checkout (its HEAD)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per step")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.repo, args.timeout).as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
