"""Preview cost: the Pulumi program under mocks at each N, and the publisher's planning time.

The program is run the way the tests run it (tests/pulumi_harness.py:
`pulumi.runtime.set_mocks`, then `infra.program.define`), in preview mode, in a fresh
interpreter per N. The program builds the site itself (`build --frozen`), so the
time is reported whole and split: the build, and everything else (declaring the
resources, serializing the manifest into the SiteContent input, the mock engine), and
of that, the modules the program imports on first use (`ImportTimer`).

Planning is what `pulumi preview` and `pulumi up` run for SiteContent: the provider's
`diff` (plan_publish under the hood) and `plan_publish` itself, on the manifest of a
large build, for a first publish, no change, one edited document and one changed route.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.build_bench import peak_rss_kb

REPO = Path(__file__).resolve().parents[1]
REGION = "eu-west-1"


class ImportTimer:
    """CPU time spent importing modules, outermost imports only, outside the build.

    The program imports pulumi_aws's submodules lazily, at its first use of each (about
    a hundred modules, ~0.16 s here, constant in N): inside the timed window, unlike
    `import infra.program`. Reported beside the program's time, not subtracted from it,
    so the figure `run.py` judges keeps its meaning."""

    def __init__(self) -> None:
        import importlib._bootstrap as bootstrap

        self.cpu_seconds = 0.0
        self.paused = False
        self._depth = 0
        self._bootstrap = bootstrap
        self._original = bootstrap._find_and_load  # what every `import` of a new module runs

        def find_and_load(name: str, import_: Any) -> Any:
            if self._depth or self.paused:
                return self._original(name, import_)
            self._depth += 1
            begin = time.process_time()
            try:
                return self._original(name, import_)
            finally:
                self.cpu_seconds += time.process_time() - begin
                self._depth -= 1

        bootstrap._find_and_load = find_and_load


def worker(site: Path, dist: Path) -> dict[str, Any]:
    start_imports = time.perf_counter()
    import content_builder.build as pipeline
    import infra.program as program
    from infra.config import SiteConfig
    from tests.pulumi_harness import run_program, site_content

    imports_seconds = time.perf_counter() - start_imports
    spent: dict[str, float] = {"build": 0.0, "build_cpu": 0.0, "rendered": 0}
    build_files = program.build_files
    build_catalog = pipeline.build_catalog

    def counted_catalog(*args: Any, **kwargs: Any) -> Any:
        # How many entries the build rendered (parsed, tokenized...) instead of taking
        # them from the build cache: what "reuses the build" means.
        catalog = build_catalog(*args, **kwargs)
        spent["rendered"] += catalog.rendered_now
        return catalog

    pipeline.build_catalog = counted_catalog  # type: ignore[assignment]

    def timed_build(*args: Any, **kwargs: Any) -> Any:
        begin, begin_cpu = time.perf_counter(), time.process_time()
        imports.paused = True  # the build's own imports are the build's
        try:
            return build_files(*args, **kwargs)
        finally:
            imports.paused = False
            spent["build"] += time.perf_counter() - begin
            spent["build_cpu"] += time.process_time() - begin_cpu

    program.build_files = timed_build
    imports = ImportTimer()
    config = SiteConfig(region=REGION, site_dir=site, dist_dir=dist, tags={"bench": "1"})
    start, start_cpu = time.perf_counter(), time.process_time()
    run = run_program(config, preview=True)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    from infra.site_content import input_entries

    content = site_content(run)
    files = content.inputs["files"]  # one JSON string (infra/site_content.py)
    return {
        "seconds": seconds,
        "build_seconds": spent["build"],
        # CPU time of the process (every thread): steadier than wall time on a shared
        # machine, where another developer's build stretches the wall clock.
        "cpu_seconds": cpu_seconds,
        "build_cpu_seconds": spent["build_cpu"],
        "entries_rendered": spent["rendered"],
        "imports_seconds": imports_seconds,
        "program_imports_cpu_seconds": imports.cpu_seconds,
        "resources": len(run.mocks.resources),
        "manifest_entries": len(input_entries(files)),
        "manifest_input_bytes": len(files.encode()),
        "peak_rss_kb": peak_rss_kb(),
    }


@dataclass(frozen=True)
class PreviewResult:
    n: int
    seconds: float
    build_seconds: float
    resources: int
    manifest_entries: int
    manifest_input_bytes: int
    peak_rss_mb: float
    cpu_seconds: float = 0.0
    build_cpu_seconds: float = 0.0
    #: Of program_cpu_seconds: modules the program imports on first use (ImportTimer).
    program_imports_cpu_seconds: float = 0.0
    #: Entries the build rendered rather than took from the build cache.
    entries_rendered: int = 0
    #: Every run, the first one's figures above: each run's wall and CPU seconds with and
    #: without the build, imports and entries rendered. The first run builds with the cache
    #: as it finds it, the others with the cache the first one filled.
    runs: tuple[dict[str, Any], ...] = ()

    def _median(self, key: Callable[[dict[str, Any]], float], first: float) -> float:
        return statistics.median(map(key, self.runs)) if self.runs else first

    @property
    def program_seconds(self) -> float:
        """Everything but the build: resources, the manifest input, the mock engine
        (the median of the runs: one run of a third of a second is noise's plaything)."""
        return self._median(lambda r: r["seconds"] - r["build_seconds"],
                            self.seconds - self.build_seconds)  # fmt: skip

    @property
    def program_cpu_seconds(self) -> float:
        return self._median(lambda r: r["cpu_seconds"] - r["build_cpu_seconds"],
                            self.cpu_seconds - self.build_cpu_seconds)  # fmt: skip

    @property
    def program_work_cpu_seconds(self) -> float:
        """The program's CPU time without its one-time imports: what grows with N."""
        return self._median(
            lambda r: r["cpu_seconds"] - r["build_cpu_seconds"] - r["program_imports_cpu_seconds"],
            self.cpu_seconds - self.build_cpu_seconds - self.program_imports_cpu_seconds,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "program_seconds": self.program_seconds,
            "program_cpu_seconds": self.program_cpu_seconds,
            "program_work_cpu_seconds": self.program_work_cpu_seconds,
        }


def measure(site: Path, n: int, work: Path, repeats: int = 3) -> PreviewResult:
    """`repeats` runs of the program on `site`, each in a fresh interpreter, into the
    same output folder and build cache: the first builds, the later ones find the
    sources unchanged (what "reuses the build" is about)."""
    dist = work / f"preview-dist-{n}"
    runs = []
    for _ in range(repeats):
        completed = subprocess.run(
            [sys.executable, "-m", "benchmarks.preview_bench", str(site), str(dist)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"preview benchmark failed:\n{completed.stderr[-3000:]}")
        runs.append(json.loads(completed.stdout.strip().splitlines()[-1]))
    data = runs[0]
    return PreviewResult(
        n=n,
        seconds=data["seconds"],
        build_seconds=data["build_seconds"],
        resources=data["resources"],
        manifest_entries=data["manifest_entries"],
        manifest_input_bytes=data["manifest_input_bytes"],
        peak_rss_mb=data["peak_rss_kb"] / 1024,
        cpu_seconds=data["cpu_seconds"],
        build_cpu_seconds=data["build_cpu_seconds"],
        program_imports_cpu_seconds=data["program_imports_cpu_seconds"],
        entries_rendered=data["entries_rendered"],
        runs=tuple(runs),
    )


# --- planning ----------------------------------------------------------------------------


def _median_seconds(action: Callable[[], Any], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def plan_timings(files: dict[str, dict[str, Any]], repeats: int = 5) -> dict[str, Any]:
    """Median seconds of planning a publish of `files` (a build's manifest files)."""
    from infra import publisher
    from infra.site_content import SiteContentProvider, encode_input

    edited = copy.deepcopy(files)
    document = next(p for p in sorted(edited) if p.startswith("/api/v1/content/") and
                    not p.endswith(("/index.json", "/search-index.json")))  # fmt: skip
    for path in (document, "/api/v1/content/index.json", "/llms-full.txt"):
        edited[path]["sha256"] = "0" * 64
    route = copy.deepcopy(files)
    for path, entry in route.items():
        if path.startswith("/api/v1/faq/") and path.endswith(".json"):  # not the mirrors
            entry["cache_control"] = "public, max-age=7200"
    props = {"bucket": "b", "region": REGION, "distribution_id": "D", "source_dir": "dist"}

    def encoded(files: dict[str, dict[str, Any]] | None) -> Any:
        """The provider's `files` input: one JSON string (infra/site_content.py)."""
        return encode_input(files) if files else ""

    provider = SiteContentProvider()
    cases = {
        "first publish": (None, files),
        "no change": (files, copy.deepcopy(files)),
        "one document edited": (files, edited),
        "one route's Cache-Control": (files, route),
    }
    timings: dict[str, Any] = {"entries": len(files)}
    for name, (old, new) in cases.items():
        plan = publisher.plan_publish(old, new)
        old_input, new_input = encoded(old), encoded(new)
        timings[name] = {
            "plan_publish": _median_seconds(lambda o=old, n=new: publisher.plan_publish(o, n),
                                            repeats),
            "invalidation_paths": _median_seconds(
                lambda p=plan: publisher.invalidation_paths(p.stale_paths), repeats
            ),
            "provider_diff": _median_seconds(
                lambda o=old_input, n=new_input: provider.diff(
                    "id", {**props, "files": o}, {**props, "files": n}
                ),
                repeats,
            ),
            "uploads": len(plan.upload_paths),
        }  # fmt: skip
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the Pulumi program under mocks, as JSON")
    parser.add_argument("site", type=Path)
    parser.add_argument("dist", type=Path)
    args = parser.parse_args(argv)
    print(json.dumps(worker(args.site, args.dist)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
