"""render_catalog with the search index's keywords chosen meanwhile by a spare process
(content_builder.halves `Spare`, forked before the site is loaded): the same files, and
errors in the order of a plain loop."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from content_builder import build as pipeline
from content_builder import cache as build_cache
from content_builder import halves
from content_builder.render import endpoints, indexes
from tests.conftest import SPEC_SITE, TEST_BASE_URL, counted_forks


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
    monkeypatch.setattr(pipeline, "MINIMUM_ITEMS", 1)
    # Every entry rendered by this build (a child only pays when the terms are new).
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")


def _bodies() -> dict[str, bytes]:
    return {a.path: a.body for a in pipeline.plan(SPEC_SITE, TEST_BASE_URL).artifacts}


def test_the_files_are_those_of_a_plain_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")  # every entry rendered by the build
    plain = _bodies()  # 12 entries: no child
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
    monkeypatch.setattr(pipeline, "MINIMUM_ITEMS", 1)
    forks = counted_forks(monkeypatch)
    assert _bodies() == plain
    assert forks, "the search index was rendered in a child"
    assert list(plain) == list(_bodies()), "in the same order"


def _failing(monkeypatch: pytest.MonkeyPatch, *keys: str) -> None:
    for key in keys:

        def body(context: object, key: str = key) -> bytes:
            raise ValueError(f"{key} fails")

        monkeypatch.setitem(endpoints.RENDERERS, key, endpoints.Renderer(body))


@pytest.mark.usefixtures("forking")
def test_the_search_index_error_comes_before_a_later_aggregates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _failing(monkeypatch, "search_index", "discovery")  # discovery comes later in the table
    with pytest.raises(ValueError, match=r"^search_index fails$") as raised:
        pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    assert raised.value.__suppress_context__


@pytest.mark.usefixtures("forking")
def test_an_earlier_aggregates_error_comes_before_the_search_indexes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _failing(monkeypatch, "content_index", "search_index")
    with pytest.raises(ValueError, match=r"^content_index fails$"):
        pipeline.plan(SPEC_SITE, TEST_BASE_URL)


@pytest.mark.usefixtures("forking")
def test_a_later_aggregates_error_is_raised_when_the_search_index_renders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _failing(monkeypatch, "discovery")
    with pytest.raises(ValueError, match=r"^discovery fails$"):
        pipeline.plan(SPEC_SITE, TEST_BASE_URL)


def _given(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The work each spare is given, from now on."""
    given: list[object] = []
    real_give = halves.Spare.give

    def give(self: halves.Spare, work: object, *args: object) -> object:
        given.append(work)
        return real_give(self, work, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(halves.Spare, "give", give)
    return given


@pytest.mark.usefixtures("forking")
def test_the_choice_made_in_the_spare_is_kept_beside_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword choice the search index puts beside the build cache, for the next
    build to start from, is kept although another process made it."""
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    given = _given(monkeypatch)
    site = pipeline.plan(SPEC_SITE, TEST_BASE_URL).site
    assert given == [indexes.fresh_keyword_choice], "the keywords were chosen in the spare"
    assert isinstance(site.cache.get_latest(indexes._CHOICE), indexes.KeywordChoice)
    given.clear()
    pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    assert not given, "a build from the cache chooses its keywords here"


@pytest.mark.usefixtures("forking")
def test_the_spare_holds_none_of_the_site(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked before the site is loaded: its memory is what the build had then."""
    forks = counted_forks(monkeypatch)
    loaded: list[int] = []
    real_load = pipeline.load_site

    def load_site(*args: object, **kwargs: object) -> object:
        loaded.append(len(forks))
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "load_site", load_site)
    _bodies()
    assert loaded == [1], "the spare was forked before the site was loaded"


def test_a_small_site_forks_no_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    assert _bodies(), "12 entries, below MINIMUM_ITEMS: all of it here"
