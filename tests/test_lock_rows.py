"""The lock a build dates by holds no object per entry for the garbage collector to walk
(issue 22): at 10,000 documents and 10,000 FAQ entries, one LockEntry and one Tracked
object per entry were 40,000 long-lived containers, which cost a full collection in the
`date` step of a build after one edit. Likewise the documents hashed for the lock are not
kept when a pool of workers renders them. And the lock's bytes and the source hashes,
made another way for it, are what json.dumps and the text replacement give.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_contract.hashing import canonical_json
from content_builder import cache as build_cache
from content_builder.loader import BASE_URL_TOKEN, LOCK_FILE, load_site
from content_builder.lock import History, LockEntry, LockFile, lock_body, read_lock, resolve
from content_builder.render.documents import DocumentData, source_hash, tracked
from tests.sites import Shape, make_site

SHAPE = Shape(documents=150, faqs=150)
ENTRIES = SHAPE.documents + SHAPE.faqs
#: A handful of containers for the whole value (the mapping, its dict, the columns):
#: far fewer than one per entry.
FEW = 20


def _held(make: Callable[[], Any]) -> int:
    """How many objects the collector tracks that what `make()` returns holds alone:
    those freed when it is dropped (a collection first untracks the tuples of text)."""
    value = make()
    gc.collect()
    before = len(gc.get_objects())
    del value
    gc.collect()
    return before - len(gc.get_objects())


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


def test_the_documents_hashed_for_the_lock_are_kept_only_if_this_process_renders_them(
    site_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    site = load_site(site_dir)

    def hashed(renders_here: Callable[[int], bool]) -> DocumentData:
        data = DocumentData(site, renders_here)
        tracked(site, data)
        return data

    assert _held(lambda: hashed(lambda count: count == ENTRIES)) > SHAPE.documents
    assert _held(lambda: hashed(lambda count: False)) < FEW


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
