"""Issue 11 target 1: the first run, from a fresh clone, as a new contributor meets it.

Every step starts from `git clone` of the repository's committed HEAD into a fresh folder
on the machine's temporary disk (where a checkout lives, not tmpfs), so nothing of this
checkout's `.venv`, build cache or output is reused; uncommitted changes are not measured
(the result says so):

- *serve*: `make serve PORT=<free port>` with an empty pip cache (`PIP_CACHE_DIR` set to
  a new, empty folder), from the start of `make` until GET /.well-known/service.json
  answers 200; then the size of the `.venv` it installed;
- *CI*: in a second fresh clone, `bash .ci/run`, what CI runs, with the machine's pip
  cache as it is (CI keeps one too);
- *test, warm*: `make test` once more in that clone, its environment now installed.

A step that fails, or a server that never answers within `timeout`, raises RuntimeError
with the tail of its log; the clones are removed and `make serve`'s process group is
killed, whatever happens.

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

from benchmarks.watch_bench import free_port

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
#: pytest's last line: "993 passed in 67.12s (0:01:07)", "3 passed, 1 warning in 0.5s".
_PYTEST_SUMMARY = re.compile(rb"^=*\s*(\d+ passed.*? in [\d.]+s)", re.MULTILINE)


@dataclass(frozen=True)
class FirstRunResult:
    commit: str
    uncommitted_changes: bool  # the working tree differed from `commit`: not measured
    serve_seconds: float  # `make serve` on a fresh clone, empty pip cache, until discovery answers
    serve_venv_mb: float
    ci_seconds: float  # `bash .ci/run` on a fresh clone
    ci_summary: str  # pytest's summary line of that run
    test_warm_seconds: float  # `make test` again, in the same clone
    test_warm_summary: str

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
    subprocess.run(["git", "clone", "--quiet", str(repo), str(checkout)], check=True)
    return checkout


def _folder_mb(root: Path) -> float:
    size = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
    return size / 1e6


def _environment(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak this checkout into the clone:
    its virtualenv and an inherited build-cache folder."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"VIRTUAL_ENV", "AGENT_ACCESS_CACHE_DIR", "PYTHONPATH"}
    }
    return {**environment, **extra}


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def time_serve(checkout: Path, pip_cache: Path, timeout: float) -> float:
    """Seconds from starting `make serve` until the discovery URL it prints (`discovery:
    <url>`, once it has built) answers 200 to a GET."""
    port = free_port()
    log = checkout.parent / "serve.log"
    printed = re.compile(rb"^discovery: (http://\S+)$", re.MULTILINE)
    environment = _environment(PIP_CACHE_DIR=str(pip_cache), PYTHONUNBUFFERED="1")
    started = time.perf_counter()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            ["make", "serve", f"PORT={port}"], cwd=checkout, stdin=subprocess.DEVNULL,
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True, env=environment,
        )  # fmt: skip
    try:
        while time.perf_counter() - started < timeout:
            if process.poll() is not None:
                raise RuntimeError(
                    f"`make serve` exited with {process.returncode} before its discovery URL "
                    f"answered\n--- log (tail) ---\n{_tail(log)}"
                )
            found = printed.search(log.read_bytes())
            if found:
                url = found.group(1).decode()
                if not url.startswith(f"http://{HOST}:{port}/"):
                    raise RuntimeError(f"`make serve` printed {url}, not a URL on port {port}")
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
    command: list[str], checkout: Path, log_name: str, timeout: float
) -> tuple[float, str]:
    """Seconds `command` took in `checkout`, and pytest's summary line from its output."""
    log = checkout.parent / log_name
    started = time.perf_counter()
    with log.open("wb") as sink:
        try:
            completed = subprocess.run(
                command, cwd=checkout, stdin=subprocess.DEVNULL, stdout=sink,
                stderr=subprocess.STDOUT, env=_environment(), timeout=timeout,
            )  # fmt: skip
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(
                f"`{' '.join(command)}` took more than {timeout:.0f} s\n"
                f"--- log (tail) ---\n{_tail(log)}"
            ) from error
    seconds = time.perf_counter() - started
    output = log.read_bytes()
    if completed.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(command)}` failed with {completed.returncode}\n"
            f"--- log (tail) ---\n{_tail(log)}"
        )
    summaries = _PYTEST_SUMMARY.findall(output)
    if not summaries:
        raise RuntimeError(f"`{' '.join(command)}` printed no pytest summary\n{_tail(log)}")
    return seconds, summaries[-1].decode()


def measure(
    repo: Path = REPO, timeout: float = 600.0, scratch: Path | None = None
) -> FirstRunResult:
    """The three first-run figures for `repo`'s HEAD; every clone removed afterwards."""
    commit = _git(repo, "rev-parse", "HEAD")
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no"))
    root = Path(tempfile.mkdtemp(prefix="first-run-bench-", dir=scratch))
    try:
        serve_folder, ci_folder = root / "serve", root / "ci"
        serve_folder.mkdir()
        ci_folder.mkdir()
        pip_cache = serve_folder / "empty-pip-cache"
        pip_cache.mkdir()
        checkout = _clone(repo, serve_folder)
        serve_seconds = time_serve(checkout, pip_cache, timeout)
        venv_mb = _folder_mb(checkout / ".venv")
        checkout = _clone(repo, ci_folder)
        ci_seconds, ci_summary = time_command(["bash", ".ci/run"], checkout, "ci.log", timeout)
        warm_seconds, warm_summary = time_command(
            ["make", "test"], checkout, "test-warm.log", timeout
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return FirstRunResult(
        commit=commit,
        uncommitted_changes=dirty,
        serve_seconds=serve_seconds,
        serve_venv_mb=venv_mb,
        ci_seconds=ci_seconds,
        ci_summary=ci_summary,
        test_warm_seconds=warm_seconds,
        test_warm_summary=warm_summary,
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
