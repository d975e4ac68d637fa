"""The lock a build dates by holds no object per entry for the garbage collector to walk
(issue 22): at 10,000 documents and 10,000 FAQ entries, one LockEntry and one Tracked
object per entry were 40,000 long-lived containers, which cost a full collection in the
`date` step of a build after one edit. And the lock's bytes and the source hashes, made
another way for it, are what json.dumps and the text replacement give.
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_contract.hashing import canonical_json
from content_builder import cache as build_cache
from content_builder import lock as lock_module
from content_builder.loader import LOCK_FILE, load_site
from content_builder.lock import (
    History,
    Lock,
    LockChange,
    LockEntry,
    LockFile,
    _spliced_body,
    lock_body,
    read_lock,
    resolve,
)
from content_builder.render.documents import source_hash, tracked
from content_builder.tokens import BASE_URL_TOKEN
from tests.conftest import run_cli
from tests.sites import Shape, make_site

SHAPE = Shape(documents=150, faqs=150)
ENTRIES = SHAPE.documents + SHAPE.faqs
#: A handful of containers for the whole value (the mapping, its dict, the columns):
#: far fewer than one per entry.
FEW = 20


def _settled() -> int:
    """The count of tracked objects once collections untrack no more: nested tuples of
    text are untracked one level per collection (the build cache's records are such)."""
    count = -1
    for _ in range(10):
        gc.collect()
        count, before = len(gc.get_objects()), count
        if count == before:
            break
    return count


def _held(make: Callable[[], Any]) -> int:
    """How many objects the collector tracks that what `make()` returns holds alone:
    those freed when it is dropped."""
    value = make()
    before = _settled()
    del value
    return before - _settled()


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("lock-rows") / "site_data", SHAPE)


def test_the_lock_and_the_tracked_entries_hold_no_object_per_entry(
    site_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")  # every source hash made here
    site = load_site(site_dir)
    path = site_dir / LOCK_FILE
    assert len(read_lock(path, LOCK_FILE)) == ENTRIES
    assert _held(lambda: read_lock(path, LOCK_FILE)) < FEW
    assert _held(lambda: tracked(site)) < FEW
    assert _held(lambda: resolve(read_lock(path, LOCK_FILE), tracked(site))) < FEW


def test_the_lock_recalled_from_the_build_cache_holds_no_object_per_entry(
    site_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    site = load_site(site_dir)
    first = LockFile(site_dir / LOCK_FILE, LOCK_FILE, site.cache)
    first.remember(first.lock(), first.history(), None, first.history())
    site.cache.save()
    recalled = load_site(site_dir).cache
    assert LockFile(site_dir / LOCK_FILE, LOCK_FILE, recalled)._hit is not None
    assert _held(lambda: LockFile(site_dir / LOCK_FILE, LOCK_FILE, recalled)) < FEW


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(
    entries=st.dictionaries(_TEXT, st.tuples(_TEXT, _TEXT, _TEXT), max_size=6),
    generation=st.integers(0, 10**6),
    removed=st.lists(st.tuples(st.integers(0, 99), st.lists(_TEXT, max_size=3)), max_size=3),
)
def test_lock_body_is_what_json_dumps_writes(
    entries: dict[str, tuple[str, str, str]],
    generation: int,
    removed: list[tuple[int, list[str]]],
) -> None:
    """Any text (non-ASCII, quotes, control characters): written as json.dumps writes it."""
    history = History(generation, tuple((g, tuple(ids)) for g, ids in dict(removed).items()))
    lock = {entry_id: LockEntry(*row) for entry_id, row in entries.items()}
    data = {
        "format": 1,
        "generation": generation,
        "removed": {str(g): list(ids) for g, ids in history.removed},
        "entries": {
            entry_id: dict(zip(("source_hash", "content_version", "updated_at"), row, strict=True))
            for entry_id, row in sorted(entries.items())
        },
    }
    assert lock_body(lock, history) == (json.dumps(data, indent=2) + "\n").encode("utf-8")


@given(
    data=st.dictionaries(_TEXT, _TEXT, max_size=4),
    base_url=st.sampled_from(["https://a.example", "http://127.0.0.1:8000", "https://é.example"]),
)
def test_the_source_hash_factors_the_base_url_out_as_the_text_replacement_does(
    data: dict[str, str], base_url: str
) -> None:
    data = {key: f"{value}{base_url}/x{value}{base_url}" for key, value in data.items()}
    text = canonical_json(data).decode("utf-8").replace(base_url, BASE_URL_TOKEN)
    expected = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert source_hash(SimpleNamespace(base_url=base_url), data) == expected  # type: ignore[arg-type]


@given(
    old=st.dictionaries(_TEXT, st.tuples(_TEXT, _TEXT, _TEXT), min_size=1, max_size=8),
    edits=st.lists(st.tuples(st.integers(0, 7), st.tuples(_TEXT, _TEXT, _TEXT)), max_size=4),
    generation=st.integers(0, 99),
)
def test_a_lock_spliced_from_the_bytes_read_is_the_lock_written_whole(
    old: dict[str, tuple[str, str, str]],
    edits: list[tuple[int, tuple[str, str, str]]],
    generation: int,
) -> None:
    """The lock after an edit, made from the file read (lock_body's own bytes) with the
    changed entries alone written anew, is byte for byte the lock written whole."""
    ids = sorted(old)
    read = Lock({entry_id: old[entry_id] for entry_id in ids})  # as the cache gives it
    rows = dict(read.rows)
    for at, row in edits:
        rows[ids[at % len(ids)]] = row
    changes = [
        LockChange(entry_id, None, "content changed")
        for entry_id in ids
        if rows[entry_id] != old[entry_id]
    ]
    before, after = History(generation), History(generation + 1)
    raw = lock_body(read, before)
    spliced = _spliced_body(raw, read, before, Lock(rows), after, changes)
    assert spliced == lock_body(Lock(rows), after)
    added = Lock({**rows, "\x00added": ("a", "b", "c")})
    new_entry = LockChange("\x00added", None, "new entry")
    assert _spliced_body(raw, read, before, added, after, [new_entry]) is None


def test_the_lock_after_an_edit_is_spliced_and_equals_a_cache_off_build(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a build wrote the lock (lock_body's own bytes), the next edit's lock is written
    from the bytes read, not whole, and is the lock a build without the cache writes."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1790000000")
    twin = tmp_path / "twin" / "site_data"
    shutil.copytree(site_copy, twin)
    whole: list[int] = []
    real = lock_module.lock_body

    def counted(lock: Any, history: Any = None) -> bytes:
        whole.append(len(lock))
        return real(lock, history)

    faq = Path("faq") / "q01-difference.yaml"
    for site, cache in ((site_copy, str(tmp_path / "cache")), (twin, "off")):
        monkeypatch.setenv(build_cache.CACHE_ENV, cache)
        for old, new in (("sitemap", "site map"), ("site map", "site-map")):
            (site / faq).write_text((site / faq).read_text().replace(old, new))
            whole.clear()
            with monkeypatch.context() as patch:
                patch.setattr(lock_module, "lock_body", counted)
                result = run_cli("build", "--site", site, "--out", site.parent / "out")
            assert result.code == 0, result.err
        # The fixture's lock predates the change feed's fields: the first edit writes
        # it whole; the second reads a lock a build wrote.
        assert (whole == []) is (cache != "off"), whole
    assert (site_copy / LOCK_FILE).read_bytes() == (twin / LOCK_FILE).read_bytes()
