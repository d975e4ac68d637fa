"""What the checks read of the files rendered before the search index, read while a child
renders it (validate.py `read_ahead`, build.py `render_catalog`): used only for the very
body it was read from, and the errors are those of reading every file in the checks."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from agent_contract import paths
from agent_contract.artifacts import Artifact
from content_builder import build as pipeline
from content_builder import cache as build_cache
from content_builder import halves, validate
from content_builder.errors import SiteDataError
from content_builder.render import endpoints
from tests.conftest import SPEC_SITE, TEST_BASE_URL, build_errors

NOWHERE = "api/v1/content/nowhere.json"
DANGLING = f"{TEST_BASE_URL}/{NOWHERE}"


@pytest.fixture(autouse=True)
def no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check made, none proven by an earlier build of the session's cache."""
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")


def _swapped(artifacts: list[Artifact], path: str, body: bytes) -> list[Artifact]:
    return [replace(a, body=body) if a.path == path else a for a in artifacts]


def _problems(site: object, artifacts: list[Artifact], **kwargs: object) -> list[str]:
    with pytest.raises(SiteDataError) as raised:
        validate.check_artifacts(site, artifacts, **kwargs)  # type: ignore[arg-type]
    return [str(problem) for problem in raised.value.problems]


def test_links_read_ahead_of_another_body_are_not_used() -> None:
    plan = pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    ahead = validate.read_ahead(plan.site, plan.artifacts, known=frozenset())
    assert paths.LLMS_TXT in ahead.links
    # The same path with other bytes (a file rendered again): its links are read again.
    body = plan.artifacts[0].body.replace(b"}", f', "see": "{DANGLING}"}}'.encode(), 1)
    changed = _swapped(plan.artifacts, paths.LLMS_TXT, b"See " + DANGLING.encode() + b"\n")
    changed = _swapped(changed, plan.artifacts[0].path, body)
    expected = _problems(plan.site, changed)
    assert sum(DANGLING in problem for problem in expected) == 2, expected
    assert _problems(plan.site, changed, ahead=ahead) == expected


def test_json_read_ahead_of_another_body_is_not_used() -> None:
    plan = pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    ahead = validate.read_ahead(plan.site, plan.artifacts, known=frozenset())
    assert paths.CONTENT_INDEX in ahead.parsed
    index = next(a for a in plan.artifacts if a.path == paths.CONTENT_INDEX)
    fewer = index.body.replace(b'"id"', b'"was_id"', 1)
    changed = _swapped(plan.artifacts, paths.CONTENT_INDEX, fewer)
    with pytest.raises(KeyError):  # an entry without an id: as check_artifacts reads it
        validate.check_artifacts(plan.site, changed, ahead=ahead)


def test_a_file_that_cannot_be_read_ahead_is_left_to_the_checks() -> None:
    plan = pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    broken = _swapped(plan.artifacts, paths.OPENAPI, b"{not json")
    ahead = validate.read_ahead(plan.site, broken, known=frozenset())
    assert paths.OPENAPI not in ahead.parsed and paths.OPENAPI not in ahead.links
    with pytest.raises(ValueError, match="Expecting property name"):
        validate.check_artifacts(plan.site, broken, ahead=ahead)


def _dangling_robots(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer whose file links nowhere: only the checks of built files see it."""
    robots = endpoints.RENDERERS["robots"]
    monkeypatch.setitem(
        endpoints.RENDERERS,
        "robots",
        endpoints.Renderer(
            lambda c: robots.body(c) + f"# {c.site.base_url}/{NOWHERE}\n".encode(), robots.source
        ),
    )


def test_a_build_reading_ahead_fails_as_one_that_does_not(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dangling_robots(monkeypatch)
    plain = build_errors(site_copy, tmp_path / "dist")  # 12 entries: no child, no read ahead
    assert any(NOWHERE in problem and "robots.txt" in problem for problem in plain), plain
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
    monkeypatch.setattr(pipeline, "MINIMUM_ITEMS", 1)
    read: list[validate.ReadAhead] = []
    real = pipeline.read_ahead

    def spy(*args: object) -> validate.ReadAhead:
        read.append(real(*args))  # type: ignore[arg-type]
        return read[-1]

    monkeypatch.setattr(pipeline, "read_ahead", spy)
    assert build_errors(site_copy, tmp_path / "dist") == plain
    assert read and "/robots.txt" in read[0].links, "the files were read ahead"
    assert not any(p.startswith(("/api/v1/faq/", "/api/v1/content/d")) for p in read[0].links)


def test_coverage_found_ahead_for_other_paths_or_bytes_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    published = frozenset(a.path for a in plan.artifacts)
    extra = "/api/v1/content/extra.json"
    ahead = validate.read_ahead(plan.site, plan.artifacts, frozenset(), published | {extra})
    assert ahead.coverage is not None and any(extra in str(p) for p in ahead.coverage[3])
    validate.check_artifacts(plan.site, plan.artifacts, ahead=ahead)  # found for other paths
    # The same paths, another OpenAPI description (one operation fewer): found again.
    openapi = next(a for a in plan.artifacts if a.path == paths.OPENAPI)
    ahead = validate.read_ahead(plan.site, plan.artifacts, frozenset(), published)
    fewer = openapi.body.replace(b'"/api/v1/faq/{faq_id}.json"', b'"/api/v1/faq/x.json"', 1)
    assert fewer != openapi.body
    problems = _problems(plan.site, _swapped(plan.artifacts, paths.OPENAPI, fewer), ahead=ahead)
    assert any("no operation covers /api/v1/faq/" in problem for problem in problems), problems


def test_coverage_found_ahead_for_the_same_paths_and_bytes_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = pipeline.plan(SPEC_SITE, TEST_BASE_URL)
    published = frozenset(a.path for a in plan.artifacts)
    ahead = validate.read_ahead(plan.site, plan.artifacts, frozenset(), published)
    assert ahead.coverage is not None and ahead.coverage[3] == []

    def not_again(*args: object) -> list[object]:
        raise AssertionError("coverage found again")

    monkeypatch.setattr(validate, "_openapi_coverage", not_again)
    monkeypatch.setattr(validate, "_discovery_coverage", not_again)
    validate.check_artifacts(plan.site, plan.artifacts, ahead=ahead)
