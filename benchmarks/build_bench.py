"""Build scaling: wall time and peak memory of `build` at each N, against a floor.

Every measurement runs in its own interpreter (`python -m benchmarks.build_bench ...`),
so imports, caches and the memory high-water mark of one run cannot leak into
another. Peak memory is the child's own `ru_maxrss` (RUSAGE_SELF, read by the child),
reported with the RSS it had after its imports, before the build started. The build
forks, so the peak judged is another's: one more build, sampled, whose figure is the
Pss of the build and its children summed (`measure_tree_memory`, benchmarks/tree_memory.py).

The floor writes the same bytes the build wrote: the worker loads every file of the
build's output (JSON files as objects, text files as strings, untimed), then times a
bare loop of `json.dumps` (the writer's settings) + write into a fresh folder, and
checks afterwards that every file came out byte for byte identical.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pydantic_core

from agent_contract.artifacts import dumps_indented
from benchmarks import tree_memory

REPO = Path(__file__).resolve().parents[1]

#: Functions that build.py and the renderer table (render/endpoints.py) look up in their
#: own namespaces: wrapping them there times the pipeline's phases without touching the
#: pipeline. None of them calls another.
PHASES = (
    ("load_site", "load + validate YAML"),
    ("read_lock", "lock"),
    ("tracked", "lock"),
    ("resolve", "lock"),
    # Each entry's files and aggregate pieces, its search terms and the links in them
    # (render/entries.py), or the build cache's copy.
    ("build_catalog", "render entries"),
    ("content_index", "render index"),
    ("search_index", "render search index"),
    ("llms_full_txt", "render llms"),
    ("llms_txt", "render llms"),
    ("mcp_manifest", "render mcp/openapi/discovery"),
    ("openapi_document", "render mcp/openapi/discovery"),
    ("discovery_document", "render mcp/openapi/discovery"),
    ("check_authored_links", "check links"),
    ("check_artifacts", "check links"),
    ("write_output", "write"),
)


def _cpu_seconds() -> float:
    """User + system CPU of this process and of its children that ended."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_kb() -> int:
    """This process's peak resident set size, in kB.

    VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over `exec` from the
    parent that forked the child, so a child would report the driver's RSS as its own.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux


def _tree_bytes(folder: Path) -> tuple[int, int]:
    files = [path for path in folder.rglob("*") if path.is_file()]
    return len(files), sum(path.stat().st_size for path in files)


# --- workers (run in a child interpreter) ------------------------------------------------


def worker_build(site: Path, out: Path) -> dict[str, Any]:
    from content_builder import build as pipeline
    from content_builder.render import endpoints as renderers

    baseline = peak_rss_kb()
    spent: dict[str, float] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start

        return wrapper

    for name, _ in PHASES:
        for module in (pipeline, renderers):
            if hasattr(module, name):
                setattr(module, name, timed(name, getattr(module, name)))
    sampler = tree_memory.start_if_asked()
    cpu_before = _cpu_seconds()
    start = time.perf_counter()
    result, _report = pipeline.build(site, out, frozen=True)
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu_before
    # Read before the sampler (a child too) ends and is counted among the children.
    child_peak_rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    tree = sampler.stop() if sampler is not None else {}
    phases: dict[str, float] = {}
    for name, group in PHASES:
        phases[group] = phases.get(group, 0.0) + spent.get(name, 0.0)
    phases["other"] = seconds - sum(phases.values())
    files, size = _tree_bytes(out)
    search_index = (out / "api/v1/content/search-index.json").read_bytes()
    return {
        "seconds": seconds,
        "phases": phases,
        "peak_rss_kb": peak_rss_kb(),
        # Children's CPU and peak counted too (a process pool, if the build ever uses one).
        "cpu_seconds": cpu,
        "child_peak_rss_kb": child_peak_rss_kb,
        # The judged peak: Pss of this process and its descendants, summed, sampled
        # (benchmarks/tree_memory.py); 0 where /proc is missing.
        "tree_peak_pss_kb": tree.get("peak_pss_kb", 0),
        "tree_memory": tree,
        "baseline_rss_kb": baseline,
        "files": files,
        "bytes": size,
        "search_index_bytes": len(search_index),
        # gzip -9: the most a CDN's gzip makes of it (CloudFront compresses files of 1,000
        # to 10,000,000 bytes only); after the timing and the peak above.
        "search_index_gzip_bytes": len(gzip.compress(search_index, 9)),
        "entries": len(result.site.documents) + len(result.site.faqs),
    }


def _floor_objects(dist: Path) -> list[tuple[Path, Any, bool]]:
    """(relative path, object, compact?) for every file of a build output; text files as
    str. A JSON file is compact when it holds no line break but the final one."""
    items: list[tuple[Path, Any, bool]] = []
    for path in sorted(p for p in dist.rglob("*") if p.is_file()):
        relative = path.relative_to(dist)
        raw = path.read_bytes()
        if path.suffix == ".json":
            items.append((relative, json.loads(raw), b"\n" not in raw.rstrip(b"\n")))
        else:
            items.append((relative, raw.decode(), False))
    return items


def _dumps(relative: Path, value: Any, compact: bool) -> bytes:
    """The fastest serializer available to the build (pydantic-core, as the build uses;
    the same bytes as `json.dumps(..., ensure_ascii=False)` with indent=2 or compact
    separators, checked below), not the standard library's pure-Python indenting encoder."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if relative.name == "manifest.json":  # the writer keeps it ASCII, as this does
        return dumps_indented(value)
    if compact:
        return pydantic_core.to_json(value) + b"\n"
    return pydantic_core.to_json(value, indent=2) + b"\n"


def worker_floor(dist: Path, out: Path) -> dict[str, Any]:
    items = _floor_objects(dist)
    baseline = peak_rss_kb()
    start = time.perf_counter()
    for folder in sorted({out / relative.parent for relative, _, _ in items}):
        folder.mkdir(parents=True, exist_ok=True)
    for relative, value, compact in items:
        (out / relative).write_bytes(_dumps(relative, value, compact))
    seconds = time.perf_counter() - start
    mismatched = [
        str(relative)
        for relative, _, _ in items
        if hashlib.sha256((out / relative).read_bytes()).digest()
        != hashlib.sha256((dist / relative).read_bytes()).digest()
    ]
    if mismatched:
        raise SystemExit(f"floor wrote different bytes than the build: {mismatched[:5]}")
    files, size = _tree_bytes(out)
    return {
        "seconds": seconds,
        "peak_rss_kb": peak_rss_kb(),
        "baseline_rss_kb": baseline,
        "files": files,
        "bytes": size,
    }


# --- driver (parent process) ---------------------------------------------------------------


def _settle(*folders: Path) -> None:
    """Remove earlier outputs and flush dirty pages, so that one run's disk writes are not
    paid by the next one."""
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    os.sync()


@contextlib.contextmanager
def edited_faq(site: Path, edit: int) -> Iterator[tuple[Path, str]]:
    """The `edit`-th edit of the site: one sentence added to one FAQ answer, another file and
    another sentence each time, so that no edit finds its result in the build cache (the
    same edit twice would be a rebuild with nothing changed). The FAQ file and the lock
    are put back afterwards, whatever happens (a later build finds them in the cache)."""
    faqs = sorted((site / "faq").glob("*.yaml"))
    faq = faqs[(len(faqs) // 2 + edit) % len(faqs)]  # another for each of len(faqs) edits
    sentence = f"Edited sentence number {edit}."
    lock = site / "content.lock.json"
    original, original_lock = faq.read_bytes(), lock.read_bytes()
    text = original.decode("utf-8")
    assert "answer: |\n  " in text, faq
    try:
        faq.write_text(text.replace("answer: |\n  ", f"answer: |\n  {sentence} ", 1))
        yield faq, sentence
    finally:
        faq.write_bytes(original)
        lock.write_bytes(original_lock)


def worker_incremental(site: Path, out: Path, cache: Path, edit: int) -> dict[str, Any]:
    """Issue 11 target 4: one FAQ sentence edited after a build (`edited_faq`), then
    `python -m content_builder build` run as a user runs it (interpreter start and imports
    included) with the build cache of the earlier builds. The edited sentence must be in
    the published file."""
    with edited_faq(site, edit) as (faq, sentence):
        start = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "content_builder", "build", "--site", str(site),
             "--out", str(out)],
            cwd=REPO, capture_output=True, text=True, check=False,
            env={**os.environ, "AGENT_ACCESS_CACHE_DIR": str(cache)},
        )  # fmt: skip
        seconds = time.perf_counter() - start
        if completed.returncode != 0:
            raise SystemExit(f"the build after an edit failed:\n{completed.stderr[-3000:]}")
        published = [
            path.name
            for path in (out / "api/v1/faq").glob("*.json")
            if sentence in path.read_text(encoding="utf-8")
        ]
        if len(published) != 1:
            raise SystemExit(f"the edit to {faq.name} is not in the output: {published}")
    return {"seconds": seconds, "faq": faq.name}


def _child(*args: str, cache: str = "off") -> dict[str, Any]:
    # The cold build and the floor run with the build cache off: a cached build is
    # measured on its own (`incremental`), never mixed into the cold figures.
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.build_bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "AGENT_ACCESS_CACHE_DIR": cache},
    )
    if completed.returncode != 0:
        raise RuntimeError(f"benchmark child {args[0]} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class BuildResult:
    n: int
    entries: int
    files: int
    bytes: int
    repeats: int
    build_seconds: float  # median of `repeats` runs
    build_runs: list[float]
    floor_seconds: float
    floor_runs: list[float]
    peak_rss_mb: float
    baseline_rss_mb: float
    phases: dict[str, float]  # of the median run
    search_index_bytes: int = 0
    search_index_gzip_bytes: int = 0
    cpu_seconds: float = 0.0  # median, this process and its forked child
    child_peak_rss_mb: float = 0.0
    #: The peak-memory target's figure: the whole tree's Pss (tree_memory), max of runs.
    tree_peak_pss_mb: float = 0.0

    @property
    def ratio(self) -> float:
        return self.build_seconds / self.floor_seconds

    @property
    def ms_per_entry(self) -> float:
        return 1000 * self.build_seconds / self.entries

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "ms_per_entry": self.ms_per_entry}


def measure(site: Path, n: int, work: Path, repeats: int) -> BuildResult:
    """Build `site` `repeats` times, each time into a fresh folder in a fresh interpreter,
    and time the floor as often on the same output."""
    builds, floors = [], []
    for attempt in range(repeats):
        out, floor_out = work / f"build-{n}-{attempt}", work / f"floor-{n}-{attempt}"
        _settle(out, floor_out)
        builds.append(_child("build", str(site), str(out)))
        _settle(floor_out)
        floors.append(_child("floor", str(out), str(floor_out)))
        _settle(out, floor_out)
    tree_peak_kb = measure_tree_memory(site, n, work)
    median = sorted(builds, key=lambda run: run["seconds"])[(len(builds) - 1) // 2]
    floor_bytes = {floor["bytes"] for floor in floors}
    if floor_bytes != {median["bytes"]}:
        raise RuntimeError(f"floor wrote {floor_bytes} bytes, the build {median['bytes']}")
    return BuildResult(
        n=n,
        entries=median["entries"],
        files=median["files"],
        bytes=median["bytes"],
        repeats=repeats,
        build_seconds=statistics.median(run["seconds"] for run in builds),
        build_runs=[run["seconds"] for run in builds],
        floor_seconds=statistics.median(run["seconds"] for run in floors),
        floor_runs=[run["seconds"] for run in floors],
        peak_rss_mb=max(run["peak_rss_kb"] for run in builds) / 1024,
        baseline_rss_mb=min(run["baseline_rss_kb"] for run in builds) / 1024,
        phases=median["phases"],
        search_index_bytes=median.get("search_index_bytes", 0),
        search_index_gzip_bytes=median.get("search_index_gzip_bytes", 0),
        cpu_seconds=statistics.median(run.get("cpu_seconds", 0.0) for run in builds),
        child_peak_rss_mb=max(run.get("child_peak_rss_kb", 0) for run in builds) / 1024,
        tree_peak_pss_mb=tree_peak_kb / 1024,
    )


def measure_tree_memory(site: Path, n: int, work: Path) -> int:
    """The peak Pss (kB) of one more cold build and its forked children, sampled
    (benchmarks/tree_memory.py), in a run of its own: the sampler's CPU stays out of the
    timed runs. 0 where /proc/<pid>/smaps_rollup is missing."""
    out = work / f"build-{n}-memory"
    _settle(out)
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.build_bench", "build", str(site), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "AGENT_ACCESS_CACHE_DIR": "off", tree_memory.SWITCH: "on"},
    )
    _settle(out)
    if completed.returncode != 0:
        raise RuntimeError(f"the sampled build failed:\n{completed.stderr[-3000:]}")
    return int(json.loads(completed.stdout.strip().splitlines()[-1])["tree_peak_pss_kb"])


@dataclass(frozen=True)
class IncrementalResult:
    n: int
    cold_seconds: float  # the build that filled the cache (cache writes included)
    edit_seconds: float  # median: one FAQ sentence edited, `build` again
    edit_runs: list[float]  # in order: the first edit follows the cold build
    edited: list[str]  # the FAQ file each edit changed, each another one

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure_incremental(site: Path, n: int, work: Path, repeats: int = 3) -> IncrementalResult:
    cache, out = work / f"cache-{n}", work / f"incremental-{n}"
    _settle(cache, out)
    first = _child("build", str(site), str(out), cache=str(cache))
    runs = [
        _child("incremental", str(site), str(out), str(cache), str(edit), cache=str(cache))
        for edit in range(repeats)
    ]
    _settle(cache, out)
    return IncrementalResult(
        n=n,
        cold_seconds=first["seconds"],
        edit_seconds=statistics.median(run["seconds"] for run in runs),
        edit_runs=[run["seconds"] for run in runs],
        edited=[run["faq"] for run in runs],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one build or floor measurement, as JSON")
    parser.add_argument("what", choices=("build", "floor", "incremental"))
    parser.add_argument("source", type=Path, help="site_data (build) or a build output (floor)")
    parser.add_argument("out", type=Path)
    parser.add_argument("cache", type=Path, nargs="?", help="the build cache (incremental)")
    parser.add_argument("edit", type=int, nargs="?", default=0, help="which edit (incremental)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if args.what == "incremental":
        print(json.dumps(worker_incremental(args.source, args.out, args.cache, args.edit)))
        return 0
    worker = worker_build if args.what == "build" else worker_floor
    print(json.dumps(worker(args.source, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
