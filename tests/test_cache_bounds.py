"""The build cache is bounded and shared safely (issue 22): least recently used files go
first past AGENT_ACCESS_CACHE_MAX_MB, and builds that save at once never damage it."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from content_builder import cache as build_cache
from tests.conftest import run_cli


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(folder))
    return folder


def _build(site: Path, out: Path) -> None:
    result = run_cli("build", "--site", site, "--out", out)
    assert result.code == 0, result.err


def _site_file(cache_dir: Path, site: Path) -> Path:
    import hashlib

    prefix = hashlib.sha256(str(site.resolve()).encode()).hexdigest()[:12]
    [file] = cache_dir.glob(f"build-{prefix}-*.pickle")
    return file


def test_past_the_bound_the_least_recently_used_site_goes_first(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = []
    for name in ("a", "b", "c"):
        copy = tmp_path / name / "site_data"
        shutil.copytree(site_copy, copy)
        sites.append(copy)
        _build(copy, tmp_path / name / "out")
        time.sleep(0.02)  # distinct mtimes on coarse clocks
    records = _site_file(cache_dir, sites[0])
    side = records.with_name(records.name + ".latest")  # counted with it by the bound
    one = records.stat().st_size + (side.stat().st_size if side.exists() else 0)
    assert one > 10_000
    _build(sites[0], tmp_path / "a" / "out")  # a is used again: now b is the oldest
    # Room for two sites' files (each with its side file), not three.
    monkeypatch.setenv(build_cache.CACHE_MAX_ENV, f"{2.5 * one / 1_000_000:.6f}")
    _build(sites[2], tmp_path / "c" / "out")
    left = {path.name for path in cache_dir.glob("build-*.pickle")}
    assert _site_file(cache_dir, sites[0]).name in left
    assert _site_file(cache_dir, sites[2]).name in left
    with pytest.raises(ValueError):
        _site_file(cache_dir, sites[1])  # removed: the least recently used


def test_prune_keeps_the_newest_within_the_bound(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    files = []
    for number in range(4):
        path = folder / f"build-{number:012x}-{number:012x}.pickle"
        path.write_bytes(b"x" * 1000)
        os.utime(path, ns=(number * 10**9, number * 10**9))
        files.append(path)
    (folder / f"{files[0].name}.latest").write_bytes(b"values")
    build_cache.prune(folder, 2500)
    assert [path.exists() for path in files] == [False, False, True, True]
    assert not (folder / f"{files[0].name}.latest").exists(), "its side file goes with it"
    build_cache.prune(folder, 0, keep=files[3])
    assert [path.exists() for path in files] == [False, False, False, True], "never `keep`"


def test_the_default_bound_and_a_bad_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(build_cache.CACHE_MAX_ENV, raising=False)
    assert build_cache.max_bytes() == build_cache.DEFAULT_MAX_MB * 1_000_000
    monkeypatch.setenv(build_cache.CACHE_MAX_ENV, "lots")
    assert build_cache.max_bytes() == build_cache.DEFAULT_MAX_MB * 1_000_000
    monkeypatch.setenv(build_cache.CACHE_MAX_ENV, "10")
    assert build_cache.max_bytes() == 10_000_000
    monkeypatch.setenv(build_cache.CACHE_MAX_ENV, "0.5")
    assert build_cache.max_bytes() == 500_000


def _append_many(site: str, cache_dir: str, who: str, rounds: int, opened: Any) -> None:
    os.environ[build_cache.CACHE_ENV] = cache_dir
    cache = build_cache.EntryCache.open(Path(site), b"settings")
    # Every writer reads the file before any appends: one that read a frame another was
    # still appending would find the file not whole and rewrite it with its own records
    # (a cache's right, and not what this test is about).
    opened.wait()
    for number in range(rounds):
        # Frames written in several pieces, which unlocked writers interleave.
        cache.put(f"{who}-{number}", "body", [os.urandom(4096) for _ in range(16)])
        cache.save()


@pytest.mark.skipif(build_cache.fcntl is None, reason="flock is POSIX only")
def test_builds_that_save_at_once_leave_a_whole_cache(tmp_path: Path, cache_dir: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    first = build_cache.EntryCache.open(site, b"settings")  # a file to append to
    first.put("start", "body", b"")
    first.save()
    context = multiprocessing.get_context("spawn")
    opened = context.Barrier(3)
    workers = [
        context.Process(target=_append_many, args=(str(site), str(cache_dir), who, 300, opened))
        for who in ("one", "two", "three")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = build_cache.EntryCache.open(site, b"settings")
    [file] = cache_dir.glob("build-*.pickle")
    header = cache.header
    records, whole, _ = build_cache._read_records(file, header)
    assert whole, "every frame whole: no two writers interleaved"
    assert {key.split("-")[0] for key in records} == {"start", "one", "two", "three"}
    assert len(records) == 1 + 3 * 300, "every frame of every writer kept"
