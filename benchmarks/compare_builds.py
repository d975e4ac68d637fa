"""Two builders side by side in one run: the previous main against this checkout (issue 22).

    python -m benchmarks.compare_builds OLD_CHECKOUT [--sizes sample,100,1000,10000]
                                        [--repeats 3] [--work DIR]

For each site (the sample site_data, and generated sites of N documents and N FAQ
entries, benchmarks/sitegen.py), each builder runs `python -m content_builder build` as
a user does (start-up included), alternating old and new so that a busy moment of the
machine falls on both: a cold build (empty output, empty build cache), then one edit
(one FAQ sentence added) built again, then another edit (another entry) built again.
Medians of `--repeats` rounds, with the CPU time (user + sys) of the build and its
workers beside the wall time (on a shared machine, wall time alone hides what a pool
costs). Peak memory is the Pss of the build process and all its
descendants, summed, sampled every 20 ms from outside (/proc/<pid>/smaps_rollup): what
the machine holds for the build, forks included. Prints one JSON object; `--markdown`
prints the table benchmarks/README.md keeps.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks import tree_memory

REPO = Path(__file__).resolve().parents[1]


def _tree_pss_kb(root: int, table: tree_memory.ProcessTable) -> int:
    return sum(map(tree_memory.pss_kb, [root, *table.descendants(root)]))


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def bytecode_env(checkout: Path) -> dict[str, str]:
    """The environment a builder runs in: with its bytecode written and read, as an
    installed package's is (pip compiles it), in a folder of its own (a checkout's source
    is not written into). Without it (PYTHONDONTWRITEBYTECODE, as this machine's
    sessions set), every run compiles every module, and the builder with more source
    pays more for what no user pays (docs/decisions.md, issue 22, session 25)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    folder = hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()[:12]
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "agent-access-bench" / folder)
    return env


def warm_up(checkout: Path, work: Path) -> None:
    """One build of the sample by `checkout`, output dropped: its bytecode written."""
    subprocess.run(
        [sys.executable, "-m", "content_builder", "build", "--site", str(_site("sample", work)),
         "--out", str(work / "warm-up")],
        cwd=checkout, env={**bytecode_env(checkout), "AGENT_ACCESS_CACHE_DIR": "off"},
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    shutil.rmtree(work / "warm-up", ignore_errors=True)


def timed_build(checkout: Path, site: Path, out: Path, cache: Path) -> tuple[float, int, float]:
    """Wall seconds, peak tree Pss (kB) and CPU seconds (user + sys, the build's
    processes that it waited for included) of one `build`, run from `checkout`."""
    cpu_before = _children_cpu()
    env = {**bytecode_env(checkout), "AGENT_ACCESS_CACHE_DIR": str(cache), "PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "content_builder", "build", "--site", str(site)]
    start = time.perf_counter()
    process = subprocess.Popen(
        [*command, "--out", str(out)],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peak = 0
    done = threading.Event()
    table = tree_memory.ProcessTable()  # children by parent pid, as make bench samples

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_pss_kb(process.pid, table))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = process.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"build failed in {checkout}:\n{err.decode()[-2000:]}")
    return seconds, peak, _children_cpu() - cpu_before


def _edit(site: Path, number: int) -> None:
    faqs = sorted((site / "faq").glob("*.yaml"))
    faq = faqs[number % len(faqs)]
    text = faq.read_text()
    marker = "answer: "
    at = text.index(marker) + len(marker)
    if text[at] in "|>":  # a block scalar: add a sentence on its first line
        line_end = text.index("\n", at)
        following = text.index("\n", line_end + 1)
        indent = len(text[line_end + 1 : following]) - len(text[line_end + 1 : following].lstrip())
        addition = " " * indent + f"Edited sentence number {number}.\n"
        text = text[: line_end + 1] + addition + text[line_end + 1 :]
    else:
        text = text[:at] + f"Edited sentence number {number}. " + text[at:]
    faq.write_text(text)


def _site(kind: str, work: Path) -> Path:
    folder = work / f"site-{kind}"
    if folder.exists():
        return folder
    if kind == "sample":
        shutil.copytree(REPO / "site_data", folder)
    else:
        subprocess.run(
            [sys.executable, "-m", "benchmarks.sitegen", str(folder), "--n", kind],
            cwd=REPO,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    # Settings newer than the old main (search.synonyms, session 23) are left out, so both
    # builders build one input: they change only the term map's few bytes.
    config = folder / "site.yaml"
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings.pop("search", None)
    config.write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True), "utf-8")
    return folder


_KINDS = ("cold", "edit", "edit_again")


def compare(old: Path, sizes: list[str], repeats: int, work: Path) -> dict[str, Any]:
    builders = {"old": old.resolve(), "new": REPO}
    results: dict[str, Any] = {}
    work.mkdir(parents=True, exist_ok=True)
    for checkout in builders.values():
        warm_up(checkout, work)
    for size in sizes:
        master = _site(size, work)
        # The lock brought up to date once (both builders write the same lock): a cold
        # build then dates nothing, and an edit dates one entry.
        subprocess.run(
            [sys.executable, "-m", "content_builder", "build", "--site", str(master),
             "--out", str(work / "first")],
            cwd=REPO, env={**os.environ, "AGENT_ACCESS_CACHE_DIR": "off"},
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        shutil.rmtree(work / "first")
        runs: dict[str, dict[str, list[float]]] = {
            name: {kind: [] for kind in (*_KINDS, *(f"{k}_cpu" for k in _KINDS), "peak_mb")}
            for name in builders
        }
        for round_number in range(repeats):
            order = list(builders) if round_number % 2 == 0 else list(reversed(builders))
            for name in order:
                site = work / f"run-{size}-{name}" / "site_data"
                shutil.rmtree(site.parent, ignore_errors=True)
                shutil.copytree(master, site)
                out, cache = site.parent / "dist", site.parent / "cache"
                os.sync()
                for kind in _KINDS:
                    if kind == "edit":
                        _edit(site, round_number)
                    elif kind == "edit_again":
                        _edit(site, round_number + 3)  # another entry: the steady state
                    seconds, peak, cpu = timed_build(builders[name], site, out, cache)
                    runs[name][kind].append(seconds)
                    runs[name][f"{kind}_cpu"].append(cpu)
                    if kind == "cold":
                        runs[name]["peak_mb"].append(peak / 1024)
                shutil.rmtree(site.parent, ignore_errors=True)
        results[size] = {
            name: {
                "cold_s": statistics.median(found["cold"]),
                "edit_s": statistics.median(found["edit"]),
                "edit_again_s": statistics.median(found["edit_again"]),
                **{f"{kind}_cpu_s": statistics.median(found[f"{kind}_cpu"]) for kind in _KINDS},
                "peak_mb": max(found["peak_mb"]),
                "runs": found,
            }
            for name, found in runs.items()
        }
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "old": str(old),
        "repeats": repeats,
        "sizes": results,
    }


#: Issue 22's targets against the previous main: (size, kind, the largest ratio new/old
#: that meets it). The sample and the 100-page site "at least as fast"; 10,000 entries
#: "within 1.3x", cold and one edit (both edits shown).
TARGETS = (
    ("sample", "cold_s", 1.0),
    ("sample", "edit_s", 1.0),
    ("100", "cold_s", 1.0),
    ("100", "edit_s", 1.0),
    ("10000", "cold_s", 1.3),
    ("10000", "edit_s", 1.3),
    ("10000", "edit_again_s", 1.3),
)
_KIND_NAMES = {"cold_s": "cold", "edit_s": "first edit", "edit_again_s": "next edit"}


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for each of issue 22's targets among the sizes measured, and
    peak memory not above the old main's at each."""
    rows = []
    for size, kind, most in TARGETS:
        found = result["sizes"].get(size)
        if found is None:
            continue
        label = "sample" if size == "sample" else f"N = {int(size):,}"
        ratio = found["new"][kind] / found["old"][kind]
        limit = "at least as fast" if most == 1.0 else f"within {most}x"
        rows.append((f"{label} {_KIND_NAMES[kind]}: {limit}", f"{ratio:.2f}x", ratio <= most))
    for size, found in result["sizes"].items():
        label = "sample" if size == "sample" else f"N = {int(size):,}"
        old, new = found["old"]["peak_mb"], found["new"]["peak_mb"]
        rows.append((f"{label} peak memory: not above", f"{old:.0f} -> {new:.0f} MB", new <= old))
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Measured {result['date']} on {result['machine']}, medians of {result['repeats']} "
        "alternated rounds (`python -m benchmarks.compare_builds`).",
        "",
        "| site | cold old -> new | first edit old -> new | next edit old -> new "
        "| peak memory old -> new (Pss, all processes) |",
        "|---|---|---|---|---|",
    ]
    for size, found in result["sizes"].items():
        old, new = found["old"], found["new"]
        label = "sample (site_data)" if size == "sample" else f"N = {int(size):,}"
        lines.append(
            f"| {label} | {old['cold_s']:.2f} -> {new['cold_s']:.2f} s "
            f"({new['cold_s'] / old['cold_s']:.2f}x) | {old['edit_s']:.2f} -> "
            f"{new['edit_s']:.2f} s ({new['edit_s'] / old['edit_s']:.2f}x) | "
            f"{old['edit_again_s']:.2f} -> {new['edit_again_s']:.2f} s "
            f"({new['edit_again_s'] / old['edit_again_s']:.2f}x) | "
            f"{old['peak_mb']:.0f} -> {new['peak_mb']:.0f} MB |"
        )
    lines += ["", "CPU seconds (user + sys, all processes), old -> new:", ""]
    lines += ["| site | cold | first edit | next edit |", "|---|---|---|---|"]
    for size, found in result["sizes"].items():
        old, new = found["old"], found["new"]
        label = "sample (site_data)" if size == "sample" else f"N = {int(size):,}"
        cells = [f"{old[f'{k}_cpu_s']:.2f} -> {new[f'{k}_cpu_s']:.2f} s" for k in _KINDS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Issue 22's targets (met: the ratio of the medians above):", ""]
    lines += ["| target | measured | met |", "|---|---|---|"]
    lines += [
        f"| {name} | {measured} | {'yes' if met else '**no**'} |"
        for name, measured, met in targets(result)
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="a checkout of the previous main")
    parser.add_argument("--sizes", default="sample,100,1000,10000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/compare-builds"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--readme", action="store_true", help="also rewrite the section in benchmarks/README.md"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    result = compare(args.old, args.sizes.split(","), args.repeats, args.work)
    print(markdown(result) if args.markdown else json.dumps(result, indent=1))
    if args.readme:
        write_readme(REPO / "benchmarks" / "README.md", markdown(result))
    return 0


BEGIN = "<!-- compare:begin (written by `make bench-compare`; edits here are overwritten) -->"
END = "<!-- compare:end -->"


def write_readme(readme: Path, table: str) -> None:
    """Put `table` between the markers (appended with them the first time)."""
    text = readme.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{table}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
