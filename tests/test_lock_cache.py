"""The parsed lock in the build cache (content_builder.lock.LockFile): a build after an
edit does not parse content.lock.json again, yet reads exactly the lock a parse gives,
and a damaged, foreign or stale remembered lock never changes a build or its errors.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from content_builder import cache as build_cache
from content_builder import lock as lock_module
from content_builder.loaded import display_path
from content_builder.lock import (
    PARSED_LOCKS,
    History,
    LockEntry,
    LockFile,
    read_history,
    read_lock,
)
from tests.conftest import CliResult, run_cli, tree_digest

LOCK = "content.lock.json"


def _build(site: Path, out: Path) -> dict[str, str]:
    result = run_cli("build", "--site", site, "--out", out)
    assert result.code == 0, result.err
    return tree_digest(out)


def _edit(site: Path, old: str = "sitemap", new: str = "site map") -> None:
    path = site / "faq" / "q01-difference.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _add(site: Path) -> None:
    text = (site / "faq" / "q02-endpoints.yaml").read_text()
    (site / "faq" / "q99-added.yaml").write_text(text.replace("q02-endpoints", "q99-added"))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(folder))
    # An edit dates its entry with the clock: warm and cold builds must see the same time.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1790000000")
    return folder


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lock texts parsed (lock._parse_text) from now on, the in-process memo off (each
    `python -m content_builder build` is a new process)."""
    seen: list[str] = []
    real = lock_module._parse_text

    def counting(text: str, display: str, which: str) -> Any:
        seen.append(text)
        return real(text, display, which)

    monkeypatch.setattr(lock_module, "_parse_text", counting)
    return seen


def test_a_build_after_an_edit_does_not_parse_the_lock_again(
    site_copy: Path, tmp_path: Path, cache_dir: Path, parses: list[str]
) -> None:
    out = tmp_path / "out"
    _build(site_copy, out)  # the lock as committed: parsed once, then remembered
    assert len(parses) == 1
    committed = (site_copy / LOCK).read_bytes()
    _edit(site_copy)
    _build(site_copy, out)  # reads the lock the first build remembered
    read_by_the_next = (site_copy / LOCK).read_bytes()
    assert read_by_the_next != committed, "the edit bumped a version"
    _edit(site_copy, "site map", "site-map")
    _build(site_copy, out)  # reads the lock the second build wrote
    # The lock this build read, put back (the benchmark's edits, a `git checkout`).
    (site_copy / LOCK).write_bytes(read_by_the_next)
    _edit(site_copy, "site-map", "sitemap")
    _build(site_copy, out)
    assert len(parses) == 1, "no build after the first parsed the lock"


def test_the_remembered_lock_is_the_parsed_lock_in_order(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an added and then a removed entry (the history's `removed`) and an edit, the
    remembered form of the lock written is what parsing that file gives, order included."""
    out = tmp_path / "out"
    _add(site_copy)
    _build(site_copy, out)
    (site_copy / "faq" / "q99-added.yaml").unlink()
    _build(site_copy, out)
    _edit(site_copy)
    _build(site_copy, out)
    settings_cache = _open_cache()
    remembered = LockFile(site_copy / LOCK, "x", settings_cache)
    assert remembered.digest in remembered.recalled, "the lock written was remembered"
    assert remembered._hit is not None, "and is read back"
    parsed = read_lock(site_copy / LOCK, "x")
    history = read_history(site_copy / LOCK, "x")
    assert history.removed, "the removal is in the history"
    assert list(remembered.lock().items()) == list(parsed.items())
    assert remembered.history() == history


def _open_cache() -> build_cache.EntryCache:
    """The cache file the builds used (the only one in the folder), as they opened it."""
    folder = build_cache.cache_dir()
    assert folder is not None
    files = list(folder.glob("build-*.pickle"))
    assert len(files) == 1
    cache = build_cache.EntryCache.disabled()
    cache.file = files[0]
    cache.header = files[0].read_bytes().split(b"\n", 2)[1] + b"\n"
    return cache


def _digest(site: Path) -> str:
    return hashlib.sha256((site / LOCK).read_bytes()).hexdigest()


def _twin(site: Path, tmp_path: Path) -> Path:
    twin = tmp_path / "cold" / "site_data"
    shutil.copytree(site, twin)
    return twin


def _cold(twin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliResult:
    with monkeypatch.context() as patch:
        patch.setenv(build_cache.CACHE_ENV, "off")
        return run_cli("build", "--site", twin, "--out", tmp_path / "cold" / "out")


@pytest.mark.parametrize(
    "damage",
    [
        (("q01-difference",), (1,), ("1.0.0",), ("2025-01-01T00:00:00Z",), 0, ()),
        (("a", "a"), ("x", "y"), ("1.0.0", "1.0.0"), ("s", "s"), 0, ()),
        (("a",), ("x", "y"), ("1.0.0",), ("s",), 0, ()),
        (("a",), ("x",), ("1.0.0",), ("s",), "0", ()),
        (("a",), ("x",), ("1.0.0",), ("s",), 0, ((1, (2,)),)),
        ("too", "short"),
        "text",
        None,
    ],
)
def test_a_damaged_remembered_lock_is_parsed_instead(
    site_copy: Path,
    tmp_path: Path,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    parses: list[str],
    damage: Any,
) -> None:
    """A value the cache holds for these exact bytes that is not a lock's parsed form is
    ignored: the file is parsed and the build is the one the cache-off build makes."""
    out = tmp_path / "out"
    _build(site_copy, out)
    _edit(site_copy)
    twin = _twin(site_copy, tmp_path)
    key = _digest(site_copy)
    real = build_cache.EntryCache.get_latest

    def damaged(self: build_cache.EntryCache, name: str) -> Any:
        return {key: damage} if name == PARSED_LOCKS else real(self, name)

    with monkeypatch.context() as patch:
        patch.setattr(build_cache.EntryCache, "get_latest", damaged)
        parses.clear()
        warm = _build(site_copy, out)
    assert len(parses) == 1, "the damaged value was not used: the file was parsed"
    cold = _cold(twin, tmp_path, monkeypatch)
    assert cold.code == 0, cold.err
    assert warm == tree_digest(tmp_path / "cold" / "out")
    assert (site_copy / LOCK).read_bytes() == (twin / LOCK).read_bytes()


@pytest.mark.parametrize(
    ("field", "value"),
    [("content_version", "one"), ("updated_at", "2026-02-30T10:00:00Z"), ("source_hash", "x")],
)
def test_a_lock_changed_on_disk_after_it_was_remembered_is_parsed_and_refused_alike(
    site_copy: Path,
    tmp_path: Path,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    value: str,
) -> None:
    """The remembered lock is that of the bytes the last build read and wrote: a lock then
    broken by hand is parsed, and refused with the words a build without the cache says."""
    out = tmp_path / "out"
    _build(site_copy, out)
    _edit(site_copy)
    _build(site_copy, out)  # remembers the lock it read and the one it wrote
    data = json.loads((site_copy / LOCK).read_text())
    data["entries"]["q01-difference"][field] = value
    (site_copy / LOCK).write_text(json.dumps(data, indent=2) + "\n")
    twin = _twin(site_copy, tmp_path)
    warm = run_cli("build", "--site", site_copy, "--out", out)
    cold = _cold(twin, tmp_path, monkeypatch)
    assert warm.code == cold.code == 1
    assert f"entries.q01-difference.{field}" in warm.err
    # Messages name files as the user typed them, relative to the working directory
    # (loaded.display_path): compare them with each site's folder written that way.
    assert warm.err.replace(display_path(site_copy), "SITE") == cold.err.replace(
        display_path(twin), "SITE"
    )


def test_a_written_lock_a_read_would_refuse_is_not_remembered(
    tmp_path: Path, cache_dir: Path
) -> None:
    """Entries taken over from the lock read were checked when it was parsed; a changed one
    that a parse would refuse keeps the whole written lock out of the cache, so that the
    next build parses it and says what is wrong."""
    stamp = "2026-01-01T00:00:00Z"
    good = LockEntry("sha256:" + "a" * 64, "1.0.0", stamp)
    (tmp_path / LOCK).write_text("{}")
    cache = build_cache.EntryCache.open(tmp_path, b"settings")
    for bad, remembered in (
        (LockEntry("sha256:" + "b" * 64, "1.0.1", stamp), True),
        (LockEntry("sha256:" + "b" * 64, "1.0", stamp), False),
        (LockEntry("sha256:" + "b" * 64, "1.0.1", "2026-02-30T00:00:00Z"), False),
        (LockEntry("sha256:b", "1.0.1", stamp), False),
    ):
        lock_file = LockFile(tmp_path / LOCK, "x", cache)
        lock_file.remember({"a": good}, History(), {"a": good, "b": bad}, History(1))
        written = lock_module.lock_body({"a": good, "b": bad}, History(1))
        kept = dict(cache._latest_put).get(PARSED_LOCKS, {})
        assert (hashlib.sha256(written).hexdigest() in kept) is remembered, bad


@pytest.mark.usefixtures("cache_dir")
def test_a_lock_replaced_while_a_build_reads_it_is_parsed_as_it_was_hashed(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes a build hashes are the bytes it parses and remembers: a lock replaced in
    between (a `git checkout`, another build's `os.replace`) must not have its parse
    remembered under the first bytes' digest, where a later build would find it."""
    from content_builder.loader import load_site

    _build(site_copy, tmp_path / "out")
    path = site_copy / LOCK
    original = path.read_bytes()
    # A cache that does not know this lock yet: it is parsed, not recalled.
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "another-cache"))
    lock_file = LockFile(path, LOCK, load_site(site_copy).cache)
    assert lock_file.cache is not None and lock_file._hit is None
    data = json.loads(original)
    data["entries"]["q01-difference"]["content_version"] = "7.0.0"
    path.write_text(json.dumps(data, indent=2) + "\n")  # replaced after the hash
    read = lock_file.lock()
    assert read["q01-difference"].content_version != "7.0.0"
    saved = tmp_path / "saved.json"
    saved.write_bytes(original)
    assert read == read_lock(saved, LOCK)
    assert lock_file.history() == read_history(saved, LOCK)
