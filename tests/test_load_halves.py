"""Site files read, hashed, parsed, substituted and link-checked in two halves
(loader.py `_cached_entries`): the same site and the same problems, in the same order,
as a plain loop, whichever half a file fell in; the build cache asked and told the same."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest

from content_builder import cache as build_cache
from content_builder import halves, loader
from content_builder.errors import SiteDataError


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The halves forked on a small site (two files are enough); the children's pids."""
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
    monkeypatch.setattr(loader, "in_halves", functools.partial(halves.in_halves, minimum=2))
    children: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            children.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return children


def _bad(site: Path) -> None:
    """A problem of each kind the halves find, in files of both halves."""
    edits = {
        "faq/q01-difference.yaml": ("answer: |\n  ", "answer: |\n  See http://localhost:8000/x. "),
        "faq/q02-endpoints.yaml": ("answer:", "answer: [unclosed\nx:"),  # invalid YAML
        "faq/q03-protection.yaml": ("answer:", "colour: blue\nanswer:"),  # unknown field
        "faq/q04-protocols.yaml": ("answer: |\n  ", "answer: |\n  Use {base-url}/api. "),
        "content/compatibility.yaml": ("title:", "tittle: x\ntitle:"),
        "content/how-it-works.yaml": ("title:", "title: 2025-01-01\nx_title:"),
    }
    for name, (old, new) in edits.items():
        path = site / name
        text = path.read_text()
        assert old in text, name
        path.write_text(text.replace(old, new, 1))


def _problems(site: Path) -> list[str]:
    with pytest.raises(SiteDataError) as raised:
        loader.load_site(site)
    return [str(problem) for problem in raised.value.problems]


def _summary(site: loader.Site) -> list[tuple[Any, ...]]:
    return [
        (entry.id, entry.file, entry.cache_key, entry.source)
        for entry in (*site.documents, *site.faqs)
    ]


def test_the_problems_are_those_of_a_plain_loop_in_order(
    site_copy: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    _bad(site_copy)
    plain = _problems(site_copy)
    assert len(plain) >= 6, plain
    children = request.getfixturevalue("forks")
    assert _problems(site_copy) == plain
    assert len(children) == 2, "the content and the FAQ files were read in halves"


def test_the_site_is_that_of_a_plain_loop(
    site_copy: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    plain = _summary(loader.load_site(site_copy))
    children = request.getfixturevalue("forks")
    assert _summary(loader.load_site(site_copy)) == plain
    assert children


def test_the_cache_is_asked_and_told_as_by_a_plain_loop(
    site_copy: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    # Files changed long enough ago to be trusted by their stat next time (RACY_NS).
    monkeypatch.setattr(loader, "RACY_NS", -(10**18))
    monkeypatch.setattr(build_cache, "_MEMO", {})
    first = loader.load_site(site_copy)
    first.cache.save()
    # Every file touched: its stat is new, its bytes (its key) are known.
    for path in (*site_copy.glob("content/*.yaml"), *site_copy.glob("faq/*.yaml")):
        path.write_bytes(path.read_bytes())

    def load() -> tuple[loader.Site, set[str], dict[str, Any]]:
        monkeypatch.setattr(build_cache, "_MEMO", {})
        site = loader.load_site(site_copy)
        return site, set(site.cache.used), dict(site.cache.added)

    plain_site, plain_used, plain_added = load()
    children = request.getfixturevalue("forks")
    site, used, added = load()
    assert children
    assert [(e.id, e.file, e.cache_key) for e in (*site.documents, *site.faqs)] == [
        (e.id, e.file, e.cache_key) for e in (*plain_site.documents, *plain_site.faqs)
    ]
    assert all(entry._lazy._models is None for entry in (*site.documents, *site.faqs)), (
        "every entry known by its key: none parsed"
    )
    assert used == plain_used and any(key.startswith("stat\0") for key in added)
    assert list(added.items()) == list(plain_added.items()), "the same records, in the same order"
