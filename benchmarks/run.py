"""`make bench`: every benchmark, one report, and the results section of benchmarks/README.md.

    python -m benchmarks.run [--sizes 100,1000,10000] [--publish-n 1000] [--no-readme]

Steps: generate the synthetic sites, build scaling against the floor, the Pulumi
program under mocks and the publisher's planning, then the publish scenarios on moto
(publisher vs `aws s3 sync`). Prints every figure, checks the issue's targets, writes
the raw numbers to <work>/results.json and rewrites the marked section of the README.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_contract import paths
from benchmarks import (
    build_bench,
    edge_bench,
    first_run_bench,
    mcp_sizes,
    preview_bench,
    publish_bench,
    search_bench,
    shard_bench,
    sitegen,
    tree_memory,
    watch_bench,
)
from content_builder.build import plan

README = Path(__file__).resolve().parent / "README.md"
BEGIN = "<!-- results:begin (written by `make bench`; edits here are overwritten) -->"
END = "<!-- results:end -->"
REPEATS = {100: 5}  # larger N: 3 runs (a median of two is their mean)
#: Issue 11 target 3: the build within 4x the honest floor (pydantic-core serialization +
#: write of the same bytes).
RATIO_TARGET = 4.0
#: Issue 11: a build at N = 10,000 under 13 s here; CloudFront compresses files up to
#: 10,000,000 bytes only, so the search index must stay under that to reach agents gzipped.
BUILD_10K_SECONDS = 13.0
COMPRESSIBLE_BYTES = 10_000_000
FLATNESS_TARGET = 1.5
#: Issue 11: peak memory not above the original build's 1.1 GB; after one edit at
#: N = 10,000, `build` (with the build cache) under 3 s.
PEAK_MB_TARGET = 1126
EDIT_SECONDS = 3.0
EDGE_RPS = 3000
#: Issue 11 target 4: `serve --watch` serves one edit under EDIT_SECONDS and idles under
#: this share of one core.
WATCH_IDLE_PERCENT = 2.0
EDGE_P99_MS = 10.0
#: Issue 11 target 1: on a fresh clone `make serve` answers within a minute (empty pip
#: cache), `make test` from a warm environment under 90 s, fresh-clone CI under 5 minutes.
FIRST_SERVE_SECONDS = 60.0
TEST_WARM_SECONDS = 90.0
CI_SECONDS = 300.0
#: Issue 11 target 5: `client.search()` per query after the first download; the recall
#: floors of the sample site's questions, each set (the held-out one included).
SEARCH_QUERY_SECONDS = 0.3
RECALL_AT_1, RECALL_AT_3 = 0.70, 0.90


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        kilobytes = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kilobytes / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    aws = publish_bench.aws_executable()
    aws_version = (
        subprocess.run([str(aws), "--version"], capture_output=True, text=True).stdout.strip()
        if aws
        else "not installed"
    )
    from importlib import metadata

    import moto
    import pydantic
    import yaml

    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "uname": " ".join(platform.uname()),
        "cpu": f"{cpu}, {os.cpu_count()} CPUs",
        "memory": memory,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "libraries": f"pydantic {pydantic.VERSION}, PyYAML {yaml.__version__} "
        f"(libyaml: {'yes' if yaml.__with_libyaml__ else 'no'}), moto {moto.__version__}, "
        f"pulumi {metadata.version('pulumi')}",
        "awscli": aws_version,
    }


# --- formatting ----------------------------------------------------------------------------


def _mb(size: float) -> str:
    return f"{size / 1e6:.1f}" if size >= 1e5 else f"{size / 1e6:.3f}"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def _paths(paths: list[str]) -> str:
    if not paths:
        return "0"
    if len(paths) <= 2:
        return f"{len(paths)} (" + ", ".join(f"`{p}`" for p in paths) + ")"
    wildcards = ", ".join(f"`{p}`" for p in paths if p.endswith("*"))
    return f"{len(paths)} ({wildcards})" if wildcards else f"{len(paths)}"


def shown(value: float, digits: int = 2) -> float:
    """A figure as a row prints it (`digits` decimals), and judges it: a verdict on the
    unrounded value could contradict the figure beside it (4.04 printed as "4.0", "no")."""
    return round(value, digits)


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for every target of the issue, each judged on the figure
    it prints (`shown`)."""
    rows: list[tuple[str, str, bool]] = []
    first = results.get("first_run")
    if first:
        rows += _first_run_targets(first)
    builds = {b["n"]: b for b in results["build"]}
    largest = builds[max(builds)]
    ratio = shown(largest["ratio"])
    rows.append((
        f"build/floor <= {RATIO_TARGET} at N = {largest['n']:,}",
        f"{ratio:.2f} ({largest['build_seconds']:.2f} s against {largest['floor_seconds']:.2f} s)",
        ratio <= RATIO_TARGET,
    ))  # fmt: skip
    if 10000 in builds:
        seconds = shown(builds[10000]["build_seconds"])
        cpu = builds[10000].get("cpu_seconds", 0.0)
        rows.append((
            f"build at N = 10,000 under {BUILD_10K_SECONDS:.0f} s",
            f"{seconds:.2f} s ({cpu:.1f} s of CPU on two cores: a forked child parses and "
            "renders half the new entries)",
            seconds < BUILD_10K_SECONDS,
        ))  # fmt: skip
    if largest.get("search_index_bytes"):
        size = largest["search_index_bytes"]
        rows.append((
            f"search-index.json under {COMPRESSIBLE_BYTES:,} bytes at N = {largest['n']:,}",
            f"{size:,} bytes ({size / largest['entries']:.0f} per entry)",
            size < COMPRESSIBLE_BYTES,
        ))  # fmt: skip
    rows += _search_targets(results)
    if 1000 in builds and len(builds) > 1:
        low, high = builds[1000], largest
        spread = shown(high["ms_per_entry"] / low["ms_per_entry"])
        rows.append((
            f"time per entry flat within {FLATNESS_TARGET}x from N = 1,000 to {high['n']:,}",
            f"{low['ms_per_entry']:.2f} -> {high['ms_per_entry']:.2f} ms ({spread:.2f}x); "
            f"CPU {_cpu_ms_per_entry(low):.2f} -> {_cpu_ms_per_entry(high):.2f} ms",
            shown(1 / FLATNESS_TARGET) <= spread <= FLATNESS_TARGET,
        ))  # fmt: skip
    rows.append(_peak_memory_row(largest))
    incremental = results.get("incremental")
    if incremental:
        edit = shown(incremental["edit_seconds"])
        runs = incremental["edit_runs"]
        rows.append((
            f"`build` after one edit at N = {incremental['n']:,} under {EDIT_SECONDS:.0f} s "
            "(build cache; `python -m content_builder build`, start-up included; another "
            "FAQ each run)",
            f"{edit:.2f} s, median of {len(runs)} edits (runs "
            + ", ".join(f"{seconds:.2f}" for seconds in runs)
            + f"; the first follows the cold build of {incremental['cold_seconds']:.1f} s)",
            edit < EDIT_SECONDS,
        ))  # fmt: skip
    watch = results.get("watch")
    if watch:
        served = shown(watch["edit_seconds"])
        rows.append((
            f"`serve --watch` serves one edit at N = {watch['n']:,} under {EDIT_SECONDS:.0f} s",
            f"{served:.2f} s (runs "
            + ", ".join(f"{seconds:.2f}" for seconds in watch["edit_runs"])
            + f"; first answer {watch['first_answer_seconds']:.1f} s, "
            f"peak {watch['peak_rss_mb']:,.0f} MB)",
            served < EDIT_SECONDS,
        ))  # fmt: skip
        rows.append(_watch_idle_row(watch))
    edge = results.get("edge")
    if edge:
        rows.append(_edge_row(edge))
    publish = results.get("publish")
    if publish:
        for name, met in publish["targets"].items():
            rows.append((f"publisher {name}", "yes" if met else "no", met))
    again = results.get("preview_again")
    if again:
        rows.append((
            f"`pulumi preview` on unchanged sources reuses the build (N = {again['n']:,}: the "
            "program's second run, same build cache, renders no entry again)",
            f"{again['entries_rendered']:,} entries rendered (the first run: "
            f"{again['first_entries_rendered']:,} here, all in one process: Pulumi's threads "
            "rule out the fork); build "
            f"{again['build_seconds']:.1f} s (the first run's: "
            f"{again['first_build_seconds']:.1f} s)",
            again["entries_rendered"] == 0,
        ))  # fmt: skip
    previews = results.get("preview") or []
    if len(previews) > 1:
        low, high = previews[0], previews[-1]
        spread = high["program_seconds"] / max(low["program_seconds"], 1e-9)
        # CPU time is the criterion: on a shared machine wall time mostly measures the
        # load (benchmarks/README.md); both are shown.
        cpu_low = low.get("program_cpu_seconds", low["program_seconds"])
        cpu_high = high.get("program_cpu_seconds", high["program_seconds"])
        cpu_spread = shown(cpu_high / max(cpu_low, 1e-9))
        rows.append((
            f"preview nearly flat within {FLATNESS_TARGET}x (program without the build, CPU, "
            f"median of the runs, N = {low['n']:,} -> {high['n']:,})",
            f"CPU {cpu_low:.2f} -> {cpu_high:.2f} s ({cpu_spread:.2f}x); wall "
            f"{low['program_seconds']:.2f} -> {high['program_seconds']:.2f} s ({spread:.2f}x)",
            cpu_spread <= FLATNESS_TARGET,
        ))  # fmt: skip
    return rows


def _cpu_ms_per_entry(build: dict[str, Any]) -> float:
    return 1000 * build.get("cpu_seconds", 0.0) / max(build["entries"], 1)


def _peak_memory_row(largest: dict[str, Any]) -> tuple[str, str, bool]:
    """Judged on the Pss of the build and its forked children, summed (each shared page
    counted once, in shares; benchmarks/tree_memory.py), not on one process's peak RSS:
    the build's own misses its child's private pages, adding the two RSS counts the
    copy-on-write pages twice. Not measured (no /proc): not met."""
    tree = largest.get("tree_peak_pss_mb", 0.0)
    others = (
        f"its own peak RSS {largest['peak_rss_mb']:,.0f} MB, the forked child's ru_maxrss "
        f"{largest.get('child_peak_rss_mb', 0):,.0f} MB"
    )
    return (
        f"peak memory at N = {largest['n']:,} not above {PEAK_MB_TARGET:,} MB (the original)",
        f"{tree:,.0f} MB: the build and its forked children, Pss summed (read whenever their "
        f"Rss, sampled every {1000 * tree_memory.INTERVAL:.0f} ms, could beat the peak, in at "
        f"most {tree_memory.WALK_SHARE:.0%} of the time: a lower bound; {others})"
        if tree
        else f"not measured: no /proc/<pid>/smaps_rollup here ({others})",
        0 < round(tree) <= PEAK_MB_TARGET,  # judged on the figure printed
    )


def _watch_idle_row(watch: dict[str, Any]) -> tuple[str, str, bool]:
    """Judged on the idle window plus the watcher's safety scan amortized over its period
    (agent_edge/serve.py SAFETY_SCAN_SECONDS), which no window of a few seconds holds."""
    honest = watch.get("idle_with_scans_percent", 0.0)
    scan, period = watch.get("scan_cpu_seconds", 0.0), watch.get("safety_scan_seconds", 60.0)
    measured = bool(watch.get("scan_runs"))
    return (
        f"`serve --watch` idles under {WATCH_IDLE_PERCENT:.0f} % of a core "
        f"(N = {watch['n']:,}; its safety scan every {period:.0f} s included)",
        f"{honest:.2f} % = {watch['idle_cpu_percent']:.2f} % over "
        f"{watch['idle_seconds']:.0f} s + one scan ({1000 * scan:.0f} ms of CPU, median of "
        f"{len(watch.get('scan_runs', []))}) per {period:.0f} s"
        if measured
        else "safety scan not measured",
        measured and round(honest, 2) < WATCH_IDLE_PERCENT,
    )


#: A reference server answering in more than this at the median is stalled (a client's
#: delayed ACK holds a Nagle-delayed body ~40 ms): the comparison would be vacuous.
EDGE_REFERENCE_STALL_MS = 20.0


def _edge_row(edge: dict[str, Any]) -> tuple[str, str, bool]:
    ours, plain = edge["edge"], edge["http_server"]
    # Judged on the figures printed (req/s whole, milliseconds to 2 decimals).
    stalled = round(plain["p50_ms"], 2) >= EDGE_REFERENCE_STALL_MS
    return (
        f"local edge >= {EDGE_RPS:,} req/s, p99 < {EDGE_P99_MS:.0f} ms, keep-alive, ahead "
        "of `python -m http.server --protocol HTTP/1.1` (same files, same run; the client "
        "acknowledges at once, TCP_QUICKACK, so neither waits on its delayed ACK)",
        f"{ours['requests_per_second']:,.0f} req/s, p99 {ours['p99_ms']:.2f} ms vs "
        f"{plain['requests_per_second']:,.0f} req/s, p50 {plain['p50_ms']:.2f} ms, p99 "
        f"{plain['p99_ms']:.1f} ms"
        + ("" if edge.get("quick_ack") else "; client without TCP_QUICKACK")
        + (f"; http.server stalled (p50 >= {EDGE_REFERENCE_STALL_MS:.0f} ms): no comparison"
           if stalled else ""),
        round(ours["requests_per_second"]) >= EDGE_RPS
        and round(ours["p99_ms"], 2) < EDGE_P99_MS
        and round(ours["requests_per_second"]) > round(plain["requests_per_second"])
        and not stalled,
    )  # fmt: skip


def _search_targets(results: dict[str, Any]) -> list[tuple[str, str, bool]]:
    rows = []
    client = results.get("search_client")
    if client:
        answered = client["not_modified"] == len(client["query_runs"])
        # Each query is an FAQ question: its entry must come back in the first
        # search_bench.TOP, or the time measured a search that does not find.
        found = [client.get("first_found", False), *client.get("found", [])]
        right = len(found) == len(client["query_runs"]) + 1 and all(found)
        rows.append((
            f"`client.search()` under {SEARCH_QUERY_SECONDS} s per query at N = "
            f"{client['n']:,} after the first download (cached per ETag), each query's "
            f"FAQ entry in its top {search_bench.TOP}",
            f"{1000 * client['query_seconds']:.0f} ms, median of {len(client['query_runs'])} "
            f"queries, {client['not_modified']} of them revalidated with a 304 (the first "
            f"search, download and parse included: {client['first_search_seconds']:.2f} s); "
            f"{sum(found)} of {len(found)} searches (the first included) found their entry "
            f"in the top {search_bench.TOP}",
            round(1000 * client["query_seconds"]) < 1000 * SEARCH_QUERY_SECONDS
            and answered
            and right,
        ))  # fmt: skip
    rows += _shard_targets(results.get("shards"))
    rows += _mcp_size_targets(results.get("mcp_sizes"))
    quality = results.get("search_quality")
    if quality is not None:
        naive = [r for r in quality["recalls"] if r["client"] == "naive"]
        measured = "; ".join(
            f"{r['question_set']} ({r['questions']}): r@1 {r['recall_at_1']:.2f}, "
            f"r@3 {r['recall_at_3']:.2f}" for r in naive
        )  # fmt: skip
        held_out = any(r["question_set"] == "held_out" for r in naive)
        rows.append((
            f"sample site's search recall, spec's naive client: r@1 >= {RECALL_AT_1:.2f}, "
            f"r@3 >= {RECALL_AT_3:.2f} in each question set, held-out included",
            (measured or "no questions measured") + ("" if held_out else "; no held-out set"),
            held_out and all(r["recall_at_1"] >= RECALL_AT_1 and r["recall_at_3"] >= RECALL_AT_3
                             for r in naive),
        ))  # fmt: skip
    return rows


def _mcp_size_targets(found: dict[str, Any] | None) -> list[tuple[str, str, bool]]:
    """Issue 25: every MCP answer and tools/list under mcp_sizes.BOUND characters."""
    if not found:
        return []
    largest = max(found["sizes"], key=found["sizes"].get)
    return [(
        f"MCP: every answer and tools/list under {mcp_sizes.BOUND:,} characters at "
        f"N = {found['n']:,} ({found['entries']:,} entries)",
        f"largest {found['sizes'][largest]:,} ({largest}); tools/list "
        f"{found['sizes'].get('tools/list', 0):,}",
        found["sizes"][largest] < mcp_sizes.BOUND,
    )]  # fmt: skip


def _shard_targets(shards: dict[str, Any] | None) -> list[tuple[str, str, bool]]:
    """Issue 25's targets on the largest site with the sample inside."""
    if not shards or not shards["sites"]:
        return []
    largest = max(shards["sites"], key=lambda row: row["n"])
    alone = shards["sample"]["recall"]
    per_query = largest["query_bytes"]
    worst = per_query["gzip_max"] / 1000
    drops = {
        name: shown(alone[name]["recall_at_3"] - largest["recall"][name]["recall_at_3"], 3)
        for name in alone
        if name in largest["recall"]
    }
    return [
        (
            f"sharded search: bytes an agent transfers per query under "
            f"{shard_bench.BYTES_TARGET // 1000} KB at N = {largest['n']:,} (gzipped, every "
            "question of the sample, a page of 10 hits)",
            f"median {per_query['gzip_median'] / 1000:.0f} KB, largest {worst:.0f} KB "
            f"(raw: {per_query['raw_median'] / 1000:.0f} and {per_query['raw_max'] / 1000:.0f} KB)",
            per_query["gzip_max"] < shard_bench.BYTES_TARGET,
        ),
        (
            f"sharded search: recall@3 with the sample inside N = {largest['n']:,} at most "
            f"{shard_bench.RECALL_DROP} below the sample alone, each question set",
            "; ".join(
                f"{name}: {largest['recall'][name]['recall_at_3']:.3f} against "
                f"{alone[name]['recall_at_3']:.3f} (drop {drop:.3f})"
                for name, drop in drops.items()
            ),
            bool(drops) and all(drop <= shard_bench.RECALL_DROP for drop in drops.values()),
        ),
    ]


_FIRST_RUN_TARGETS = (
    f"fresh clone: `make serve` answers its discovery URL under {FIRST_SERVE_SECONDS:.0f} s "
    "(empty pip cache)",
    f"fresh clone: CI (`bash .ci/run`, empty pip cache) under {CI_SECONDS / 60:.0f} minutes",
    f"`make test` from a warm environment under {TEST_WARM_SECONDS:.0f} s",
)


def _first_run_targets(first: dict[str, Any]) -> list[tuple[str, str, bool]]:
    if "error" in first:  # a failed step (no PyPI, a red test): measured, and not met
        reason = "failed: " + first["error"].strip().splitlines()[0][:200]
        return [(name, reason, False) for name in _FIRST_RUN_TARGETS]
    where = f"commit {first['commit'][:10]}, clones on {first['filesystem']}" + (
        ", uncommitted or untracked changes not measured" if first["uncommitted_changes"] else ""
    )
    minutes, seconds = divmod(round(first["ci_seconds"]), 60)
    serve, ci, warm = _FIRST_RUN_TARGETS
    serve_seconds = shown(first["serve_seconds"], 1)
    warm_seconds = shown(first["test_warm_seconds"], 1)
    runs = first.get("test_warm_runs") or [first["test_warm_seconds"]]
    return [
        (
            serve,
            f"{serve_seconds:.1f} s ({first['serve_venv_mb']:,.0f} MB `.venv`; {where})",
            serve_seconds < FIRST_SERVE_SECONDS,
        ),
        (
            ci,
            f"{minutes} min {seconds} s ({first['ci_summary']})",
            minutes * 60 + seconds < CI_SECONDS,
        ),
        (
            warm,
            f"{warm_seconds:.1f} s, median of {len(runs)} (runs "
            + ", ".join(f"{run:.1f}" for run in runs)
            + f"; {first['test_warm_summary']})",
            warm_seconds < TEST_WARM_SECONDS,
        ),
    ]


def render(results: dict[str, Any]) -> list[str]:
    """The results section (markdown), also printed by `make bench`."""
    info = results["machine"]
    lines = [
        f"Measured {info['date']} on `{info['uname']}`; CPU {info['cpu']}; memory "
        f"{info['memory']}; {info['python']}; {info['libraries']}; aws CLI: {info['awscli']}; "
        f"sites and builds written to {info.get('scratch', '?')}.",
        f"Total run time of `make bench`: {results['seconds'] / 60:.1f} min.",
        "",
        "**Targets**",
        "",
    ]
    lines += _table(
        ["target", "measured", "met"],
        [[name, measured, "yes" if met else "**no**"] for name, measured, met in targets(results)],
    )
    lines += ["", "**Synthetic sites** (`benchmarks/sitegen.py`)", ""]
    lines += _table(
        ["N", "documents + FAQ entries", "YAML MB", "generation s"],
        [[f"{g['n']:,}", f"{g['entries']:,}", _mb(g["yaml_bytes"]), f"{g['seconds']:.1f}"]
         for g in results["sites"]],
    )  # fmt: skip
    lines += ["", "**Build scaling** (median of the runs; each run in a fresh interpreter)", ""]
    lines += _table(
        ["N", "files", "output MB", "runs", "build s", "floor s", "build/floor",
         "ms per entry", "peak RSS MB (after imports)"],
        [[f"{b['n']:,}", f"{b['files']:,}", _mb(b["bytes"]), b["repeats"],
          f"{b['build_seconds']:.2f}", f"{b['floor_seconds']:.2f}", f"{b['ratio']:.1f}",
          f"{b['ms_per_entry']:.2f}", f"{b['peak_rss_mb']:.0f} ({b['baseline_rss_mb']:.0f})"]
         for b in results["build"]],
    )  # fmt: skip
    phases = list(results["build"][0]["phases"])
    lines += ["", "Where the build's time goes (seconds, the median run):", ""]
    lines += _table(
        ["N", *phases],
        [[f"{b['n']:,}", *(f"{b['phases'][p]:.2f}" for p in phases)] for b in results["build"]],
    )
    largest = results["build"][-1]
    name, seconds = max(largest["phases"].items(), key=lambda item: item[1])
    lines += [
        "",
        f"At N = {largest['n']:,} the largest phase is {name}: {seconds:.1f} s, "
        f"{100 * seconds / largest['build_seconds']:.0f}% of the build (the build is "
        f"{largest['ratio']:.1f}x the floor).",
    ]
    lines += ["", "**Search index** (search-index.json of the median build; gzip -9)", ""]
    lines += _table(
        ["N", "bytes", "bytes per entry", "gzipped bytes", "gzipped per entry"],
        [[f"{b['n']:,}", f"{b['search_index_bytes']:,}",
          f"{b['search_index_bytes'] / b['entries']:,.0f}",
          f"{b.get('search_index_gzip_bytes', 0):,}",
          f"{b.get('search_index_gzip_bytes', 0) / b['entries']:,.0f}"]
         for b in results["build"]],
    )  # fmt: skip
    quality = results.get("search_quality")
    if quality:
        lines += ["", "Sample site's search recall (`site_data/search-questions.yaml`):", ""]
        lines += _table(
            ["question set", "questions", "client", "recall@1", "recall@3"],
            [[r["question_set"], r["questions"], r["client"], f"{r['recall_at_1']:.3f}",
              f"{r['recall_at_3']:.3f}"] for r in quality["recalls"]],
        )  # fmt: skip
    publish = results.get("publish")
    if publish:
        lines += [
            "",
            f"**Publish** (N = {publish['n']:,}: {publish['files']:,} files; moto server on "
            "127.0.0.1; every scenario starts with a fresh rebuild)",
            "",
        ]
        rows = []
        for row in publish["rows"]:
            rows.append([
                publish_bench.SCENARIO_TITLES[row["scenario"]], f"`{row['tool']}`",
                f"{row['put_requests']:,}", f"{row['objects_written']:,}",
                _mb(row["bytes_uploaded"]), f"{row['other_requests']:,}",
                _paths(row["invalidation_paths"]), f"{row['files_invalidated']:,}",
                _stale(row["stale"]), f"{row['seconds']:.1f}",
            ])  # fmt: skip
        lines += _table(
            ["scenario", "contender", "PUT requests", "objects written", "MB uploaded",
             "other requests", "invalidation paths", "files invalidated",
             "stale objects after", "seconds"],
            rows,
        )  # fmt: skip
    edge = results.get("edge")
    if edge:
        lines += [
            "",
            f"**Local edge** (one keep-alive `http.client` connection, GET `{edge['path']}`, "
            f"{edge['body_bytes']:,} bytes; servers alternating, median round)",
            "",
        ]
        lines += _table(
            ["server", "req/s", "p50 ms", "p99 ms", "rounds req/s"],
            [["`content_builder serve`", f"{edge['edge']['requests_per_second']:,.0f}",
              f"{edge['edge']['p50_ms']:.2f}", f"{edge['edge']['p99_ms']:.2f}",
              ", ".join(f"{r:,.0f}" for r in edge["edge_runs"])],
             ["`python -m http.server --protocol HTTP/1.1`",
              f"{edge['http_server']['requests_per_second']:,.0f}",
              f"{edge['http_server']['p50_ms']:.2f}", f"{edge['http_server']['p99_ms']:.2f}",
              ", ".join(f"{r:,.0f}" for r in edge["http_server_runs"])]],
        )  # fmt: skip
    watch = results.get("watch")
    if watch:
        lines += [
            "",
            f"**`serve --watch`** (N = {watch['n']:,}; a child server, HTTP from outside, "
            f"`benchmarks/watch_bench.py`): first answer {watch['first_answer_seconds']:.1f} s "
            f"(cold, empty build cache); idle {watch['idle_cpu_percent']:.2f} % of a core over "
            f"{watch['idle_seconds']:.0f} s; one FAQ edit to both its files served: "
            + ", ".join(f"{e['seconds']:.2f} s (`{e['faq_id']}`, server CPU "
                        f"{e['server_cpu_seconds']:.1f} s, then busy "
                        f"{e['busy_after_seconds']:.1f} s)"
                        for e in watch["edits"])
            + f"; peak RSS {watch['peak_rss_mb']:,.0f} MB.",
        ]  # fmt: skip
    shards = results.get("shards")
    if shards:
        lines += [
            "",
            "**Sharded search index** (issue 25; `benchmarks/shard_bench.py`: each site holds "
            "the sample's 12 entries and questions; a page of 10 hits per question, gzip -6)",
            "",
        ]
        lines += _table(
            ["site (entries)", "bytes per query, median raw / gzip", "largest raw / gzip",
             "files per query (median, max)", "recall@3 questions / held_out",
             "one-entry edit: files / bytes (search files / bytes)", "shard files, MB",
             "term map bytes", "build s (in memory)"],
            [_shard_row(row) for row in [shards["sample"], *shards["sites"]]],
        )  # fmt: skip
    previews = results.get("preview") or []
    if previews:
        lines += ["", "**Preview**: the Pulumi program under mocks (preview mode)", ""]
        lines += _table(
            ["N", "manifest entries", "program s", "of which build s", "program without build s",
             "SiteContent input KB", "peak RSS MB"],
            [[f"{p['n']:,}", f"{p['manifest_entries']:,}", f"{p['seconds']:.2f}",
              f"{p['build_seconds']:.2f}", f"{p['program_seconds']:.2f}",
              f"{p['manifest_input_bytes'] / 1000:,.0f}", f"{p['peak_rss_mb']:.0f}"]
             for p in previews],
        )  # fmt: skip
    plan = results.get("plan")
    if plan:
        lines += [
            "",
            f"**Planning** a publish of the N = {plan['n']:,} manifest ({plan['entries']:,} "
            "entries; median of 5, milliseconds)",
            "",
        ]
        lines += _table(
            ["change", "files to upload", "plan_publish ms", "SiteContent diff ms",
             "invalidation_paths ms"],
            [[name, f"{case['uploads']:,}", f"{1000 * case['plan_publish']:.1f}",
              f"{1000 * case['provider_diff']:.1f}", f"{1000 * case['invalidation_paths']:.2f}"]
             for name, case in plan.items() if isinstance(case, dict)],
        )  # fmt: skip
    return lines


def _shard_row(row: dict[str, Any]) -> list[str]:
    q = row["query_bytes"]
    edit = row.get("edit")
    edited = (
        f"{edit['files']} / {edit['bytes'] / 1000:,.0f} KB ({edit['search_files']} / "
        f"{edit['search_bytes'] / 1000:,.0f} KB)"
        if edit
        else "-"
    )
    name = "sample" if not row.get("n") else f"N = {row['n']:,}"
    return [
        f"{name} ({row['entries']:,})",
        f"{q['raw_median'] / 1000:,.1f} / {q['gzip_median'] / 1000:,.1f} KB",
        f"{q['raw_max'] / 1000:,.1f} / {q['gzip_max'] / 1000:,.1f} KB",
        f"{q['files_median']:g}, {q['files_max']}",
        f"{row['recall']['questions']['recall_at_3']:.3f} / "
        f"{row['recall']['held_out']['recall_at_3']:.3f}",
        edited,
        f"{row['shard_files']:,}, {row['shard_bytes'] / 1e6:.1f}",
        f"{row['term_map_bytes']:,}",
        f"{row['build_seconds']:.2f}",
    ]


def _stale(stale: dict[str, int]) -> str:
    parts = [f"{count} {kind}" for kind, count in stale.items() if count]
    return ", ".join(parts) if parts else "0"


def update_readme(text: str, section: list[str]) -> str:
    """Replace what lies between the markers; everything else stays as written."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + "\n".join(section) + "\n" + text[end:]


# --- the run -------------------------------------------------------------------------------


def _say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": machine(), "sites": [], "build": [], "preview": []}
    results["machine"]["scratch"] = (
        "tmpfs (/dev/shm)" if str(work).startswith("/dev/shm") else f"disk ({work})"
    )
    sites: dict[int, Path] = {}
    for n in args.sizes:
        _say(f"generating a site with N = {n:,}")
        start = time.perf_counter()
        site = sitegen.generate(work / f"site-{n}", n)
        seconds = time.perf_counter() - start
        yaml_bytes = sum(path.stat().st_size for path in site.root.rglob("*.yaml"))
        results["sites"].append(
            {"n": n, "entries": site.entries, "yaml_bytes": yaml_bytes, "seconds": seconds}
        )
        sites[n] = site.root
    for n in args.sizes:
        repeats = args.repeats or REPEATS.get(n, 3)
        _say(f"build scaling, N = {n:,} ({repeats} runs, each with its floor)")
        result = build_bench.measure(sites[n], n, work / "build", repeats)
        results["build"].append(result.as_dict())
        _say(f"  build {result.build_seconds:.2f} s, floor {result.floor_seconds:.2f} s, "
             f"ratio {result.ratio:.1f}, {result.ms_per_entry:.2f} ms per entry, "
             f"peak RSS {result.peak_rss_mb:.0f} MB")  # fmt: skip
    largest_n = max(args.sizes)
    _say(f"incremental: one FAQ edited after a build, N = {largest_n:,}")
    incremental = build_bench.measure_incremental(sites[largest_n], largest_n, work / "build")
    results["incremental"] = incremental.as_dict()
    _say(f"  {incremental.edit_seconds:.2f} s (runs {incremental.edit_runs})")
    _say(f"serve --watch: first answer, idle CPU, 3 FAQ edits served, N = {largest_n:,}")
    watch = watch_bench.measure(sites[largest_n], largest_n, work / "watch",
                                idle_seconds=args.watch_idle_seconds)  # fmt: skip
    results["watch"] = watch.as_dict()
    _say(f"  first answer {watch.first_answer_seconds:.1f} s, idle "
         f"{watch.idle_cpu_percent:.2f} % of a core, edit served {watch.edit_seconds:.2f} s "
         f"(runs {watch.edit_runs}), peak RSS {watch.peak_rss_mb:.0f} MB")  # fmt: skip
    _say(f"client.search() against `serve`, N = {largest_n:,}; sample site's search recall")
    client = search_bench.measure_client(sites[largest_n], largest_n, work / "search")
    results["search_client"] = client.as_dict()
    results["search_quality"] = search_bench.measure_quality()
    _say(f"  first search {client.first_search_seconds:.2f} s, then "
         f"{1000 * client.query_seconds:.0f} ms per query (runs {client.query_runs})")  # fmt: skip
    _say("sharded search index: bytes per query, recall, a one-entry edit (issue 25)")
    results["shards"] = shard_bench.measure_sizes(args.sizes, work / "shards")
    for row in results["shards"]["sites"]:
        recall = row["recall"]["questions"]["recall_at_3"]
        _say(f"  N = {row['n']:,}: {row['query_bytes']['gzip_median'] / 1000:.0f} KB gzipped "
             f"per query (median), r@3 {recall:.3f}")  # fmt: skip
    _say(f"MCP answers (characters of each, issue 25), N = {largest_n:,}")
    files = {a.path: a.body for a in plan(sites[largest_n], mcp_sizes.BASE_URL).artifacts}
    sizes = mcp_sizes.measure(files)
    entries = len(json.loads(files[paths.CONTENT_INDEX])["documents"])
    results["mcp_sizes"] = {"n": largest_n, "entries": entries, "sizes": sizes}
    del files
    _say(f"  largest {max(sizes.values()):,} characters")
    for n in args.sizes:
        _say(f"Pulumi program under mocks, N = {n:,}")
        preview = preview_bench.measure(sites[n], n, work / "preview")
        results["preview"].append(preview.as_dict())
        _say(f"  {preview.seconds:.2f} s, of which build {preview.build_seconds:.2f} s; "
             f"the program's CPU in {len(preview.runs)} runs: "
             + ", ".join(f"{r['cpu_seconds'] - r['build_cpu_seconds']:.2f}"
                         for r in preview.runs))  # fmt: skip
    # The largest N's second run found the sources as the first left them.
    first, again = results["preview"][-1]["runs"][:2]
    results["preview_again"] = {
        "n": largest_n,
        "build_seconds": again["build_seconds"],
        "first_build_seconds": first["build_seconds"],
        "entries_rendered": again["entries_rendered"],
        "first_entries_rendered": first["entries_rendered"],
        "seconds": again["seconds"],
    }
    _say("local edge vs python -m http.server --protocol HTTP/1.1, keep-alive, same files")
    edge = edge_bench.measure(work / "edge", args.edge_requests, args.edge_rounds,
                              args.edge_seconds)  # fmt: skip
    results["edge"] = edge.as_dict()
    _say(f"  edge {edge.edge.requests_per_second:.0f} req/s, http.server "
         f"{edge.http_server.requests_per_second:.0f} req/s")  # fmt: skip
    largest = max(args.sizes)
    manifest = json.loads((work / "preview" / f"preview-dist-{largest}" / "manifest.json")
                          .read_text())  # fmt: skip
    _say(f"planning a publish of the N = {largest:,} manifest")
    results["plan"] = {"n": largest, **preview_bench.plan_timings(manifest["files"])}
    shutil.rmtree(work / "preview", ignore_errors=True)
    shutil.rmtree(work / "build", ignore_errors=True)
    if args.publish_n:
        n = args.publish_n
        scenarios = (
            "publisher only"
            if args.publisher_only
            else "publisher, aws s3 sync, aws s3 sync --size-only"
        )
        _say(f"publish scenarios, N = {n:,} ({scenarios})")
        root = work / f"publish-site-{n}"
        sitegen.generate(root, n)
        publish = publish_bench.run(root, n, work / "publish", not args.publisher_only)
        results["publish"] = {**publish.as_dict(), "targets": publish_bench.check_targets(publish)}
    if args.first_run:
        _say("first run: fresh clones of HEAD; make serve (empty pip cache), CI, make test")
        # It runs last and needs PyPI: a failure is reported, not allowed to lose the
        # figures measured before it.
        try:
            first = first_run_bench.measure(timeout=args.first_run_timeout)
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            results["first_run"] = {"error": str(error)[-3000:]}
            _say(f"  failed: {error}")
        else:
            results["first_run"] = first.as_dict()
            _say(f"  make serve {first.serve_seconds:.1f} s, CI {first.ci_seconds:.0f} s, "
                 f"make test warm {first.test_warm_seconds:.0f} s")  # fmt: skip
    results["seconds"] = time.perf_counter() - started
    return results


def scratch() -> str | None:
    """Where sites and builds are written: memory (tmpfs) when the machine has it, so the
    numbers measure the pipeline, not the disk. (On the VM of the results below, the same
    floor write took 4.7 to 12.4 s on its virtual disk and 3.09 to 3.16 s on tmpfs.)"""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 4 * 1024**3:
        return str(shm)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000",
                        type=lambda text: sorted(int(n) for n in text.split(",")))  # fmt: skip
    parser.add_argument("--publish-n", type=int, default=1000, help="0 skips the publish run")
    parser.add_argument(
        "--repeats", type=int, default=0, help="runs per N (default 5 at N = 100, else 3)"
    )
    parser.add_argument("--publisher-only", action="store_true", help="without aws s3 sync")
    parser.add_argument("--edge-requests", type=int, default=3000, help="per server and round")
    parser.add_argument("--edge-rounds", type=int, default=3)
    parser.add_argument("--edge-seconds", type=float, default=3.0, help="cap per round")
    parser.add_argument("--watch-idle-seconds", type=float, default=5.0,
                        help="idle time of `serve --watch` whose CPU is measured")  # fmt: skip
    parser.add_argument("--work", type=Path, default=None,
                        help="default: a temporary folder, in /dev/shm when possible")  # fmt: skip
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the README")
    parser.add_argument("--no-first-run", dest="first_run", action="store_false",
                        help="skip the fresh-clone runs (make serve, CI, make test warm; "
                        "they install from PyPI)")  # fmt: skip
    parser.add_argument("--first-run-timeout", type=float, default=600.0, help="per step")
    args = parser.parse_args(argv)
    keep = args.work is not None
    args.work = args.work or Path(tempfile.mkdtemp(prefix="agent-access-bench-", dir=scratch()))
    # Builds in children (preview, publish) cache into the work folder, not ~/.cache.
    os.environ.setdefault("AGENT_ACCESS_CACHE_DIR", str(args.work / "build-cache"))
    try:
        results = run(args)
    finally:
        if not keep:
            shutil.rmtree(args.work, ignore_errors=True)
    section = render(results)
    print("\n" + "\n".join(section) + "\n")
    if keep:
        (args.work / "results.json").write_text(json.dumps(results, indent=2))
    unmet = [name for name, _, met in targets(results) if not met]
    if not args.no_readme:
        README.write_text(update_readme(README.read_text(encoding="utf-8"), section), "utf-8")
        print(f"wrote the results section of {README}")
    if unmet:
        print(f"targets not met ({len(unmet)}): " + "; ".join(unmet)
              + " -- benchmarks/README.md explains each gap")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
