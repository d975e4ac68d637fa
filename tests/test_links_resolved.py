"""Each entry's links resolved where it was rendered (render/entries.py `surely_published`,
`Catalog.links_resolved`): the cross-checks skip an entry only when every path its links
name is published, so the errors are those of checking every link, in the same order,
whether the entry was rendered here or in the child of the halves."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from content_builder import build as pipeline
from content_builder import halves
from content_builder.cache import CACHE_ENV
from content_builder.errors import SiteDataError
from content_builder.loader import Site
from content_builder.render import entries
from tests.conftest import build_errors, force_halves

LINKED = "{base_url}/api/v1/faq/q77-phantom.json"  # no FAQ q77-phantom: the link dangles
PHANTOM = "/api/v1/faq/q77-phantom.json"


@pytest.fixture(autouse=True)
def no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry rendered by this build (none from the session's build cache)."""
    monkeypatch.setenv(CACHE_ENV, "off")


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork path of the render on a small site (two items are enough)."""
    force_halves(monkeypatch, entries)


def _dangle(site: Path, *names: str) -> None:
    """A dangling link in the answer of each FAQ file named."""
    for name in names:
        path = site / "faq" / name
        text = path.read_text()
        assert "answer: |\n  " in text
        path.write_text(text.replace("answer: |\n  ", f"answer: |\n  See {LINKED}. ", 1))


def _errors_checking_every_link(
    site: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The errors of the build's checks of every link: no entry known to resolve."""
    real = pipeline.build_catalog

    def nothing_known(*args: Any, **kwargs: Any) -> pipeline.Catalog:
        return replace(real(*args, **kwargs), links_resolved=())

    with monkeypatch.context() as plain:
        plain.setattr(pipeline, "build_catalog", nothing_known)
        return build_errors(site, out)


def _catalog_of(site: Path, monkeypatch: pytest.MonkeyPatch) -> pipeline.Catalog:
    """The catalog the build checked (it fails or not, as it would)."""
    seen: list[pipeline.Catalog] = []
    real = pipeline._check

    def check(site: Site, catalog: pipeline.Catalog, *rest: Any) -> None:
        seen.append(catalog)
        real(site, catalog, *rest)

    monkeypatch.setattr(pipeline, "_check", check)
    with contextlib.suppress(SiteDataError):  # the checks fail or not: the catalog is seen
        pipeline.build(site, site.parent / "dist")
    return seen[0]


def test_a_clean_site_has_every_entry_resolved(
    site_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = _catalog_of(site_copy, monkeypatch)
    assert len(catalog.links_resolved) == len(catalog.entries) > 0
    assert all(catalog.links_resolved), "the checks would scan every link again"


def test_only_the_entry_with_a_dangling_link_is_left_to_the_checks(
    site_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dangle(site_copy, "q01-difference.yaml")
    catalog = _catalog_of(site_copy, monkeypatch)
    unresolved = [
        e.id for e, ok in zip(catalog.entries, catalog.links_resolved, strict=True) if not ok
    ]
    assert unresolved == ["q01-difference"]


@pytest.mark.parametrize("forked", [False, True], ids=["here", "in-halves"])
def test_dangling_links_give_the_errors_of_checking_every_link(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: bool
) -> None:
    # Two entries, so that with the fork one is rendered in each process.
    _dangle(site_copy, "q01-difference.yaml", "q02-endpoints.yaml")
    if forked:
        monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
        monkeypatch.setattr(entries, "in_halves", functools.partial(halves.in_halves, minimum=2))
    got = build_errors(site_copy, tmp_path / "dist")
    assert got == _errors_checking_every_link(site_copy, tmp_path / "dist", monkeypatch)
    assert sum(PHANTOM in error or "q77-phantom" in error for error in got) >= 2


@pytest.mark.usefixtures("forking")
def test_an_entry_is_skipped_only_if_the_paths_it_was_resolved_in_are_published(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the paths assumed published wrong (here: one more than the build publishes),
    the entry linking to it must still be checked, and the build fail as it does."""
    _dangle(site_copy, "q01-difference.yaml")
    expected = _errors_checking_every_link(site_copy, tmp_path / "dist", monkeypatch)
    real = entries.surely_published
    monkeypatch.setattr(entries, "surely_published", lambda site: real(site) | {PHANTOM})
    assert build_errors(site_copy, tmp_path / "dist") == expected


def test_a_build_that_renders_few_entries_leaves_them_to_the_checks(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One entry edited after a cached build: the checks resolve its links for less than
    the set of the site's paths would cost."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    pipeline.build(site_copy, tmp_path / "dist")
    _dangle(site_copy, "q01-difference.yaml")
    catalog = _catalog_of(site_copy, monkeypatch)
    assert catalog.rendered_now == 1 and catalog.links_resolved == ()
    # And the build fails as it does (nothing it cached since changes that).
    assert any("q77-phantom" in error for error in build_errors(site_copy, tmp_path / "dist"))
