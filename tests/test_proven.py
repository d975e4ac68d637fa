"""What the last passing build proved (content_builder/cache.py `Proven`) spares the next build
only checks whose answer cannot have changed: a proof never hides a problem."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent_contract.artifacts import Artifact
from content_builder import build as pipeline
from content_builder import cache as build_cache
from content_builder import cache as proven
from content_builder.errors import SiteDataError
from content_builder.render import endpoints
from content_builder.render.catalog import EntryLinks
from tests.conftest import run_cli

LINKED_FAQ = "faq/q02-endpoints.yaml"  # linked from content/agent-experience.yaml


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(folder))
    return folder


def _outcome(site: Path, out: Path) -> tuple[int, str]:
    result = run_cli("build", "--site", site, "--out", out)
    return result.code, result.err


def _remove_linked_faq(site: Path) -> None:
    (site / LINKED_FAQ).rename(site / "removed.yaml.txt")


def _restore_linked_faq(site: Path) -> None:
    (site / "removed.yaml.txt").rename(site / LINKED_FAQ)


def _dangling_link(site: Path) -> None:
    path = site / "faq" / "q01-difference.yaml"
    text = path.read_text()
    path.write_text(
        text.replace("answer: |\n  ", "answer: |\n  See {base_url}/api/v1/faq/q77.json. ", 1)
    )


def _mend_link(site: Path) -> None:
    path = site / "faq" / "q01-difference.yaml"
    path.write_text(path.read_text().replace("See {base_url}/api/v1/faq/q77.json. ", ""))


def _dangling_link_in_a_target(site: Path) -> None:
    """A new dangling link in a file that unchanged entries link to."""
    path = site / LINKED_FAQ
    text = path.read_text()
    path.write_text(
        text.replace("answer: |\n  ", "answer: |\n  See {base_url}/api/v1/nope.json. ", 1)
    )


STEPS: list[tuple[str, Callable[[Path], None], bool]] = [
    ("a linked FAQ removed", _remove_linked_faq, False),
    ("and restored", _restore_linked_faq, True),
    ("a dangling link written", _dangling_link, False),
    ("and mended", _mend_link, True),
    ("a dangling link in a linked file", _dangling_link_in_a_target, False),
]


def test_every_step_fails_or_passes_as_it_does_without_the_cache(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _outcome(site_copy, tmp_path / "warm")[0] == 0
    for name, step, passes in STEPS:
        step(site_copy)
        warm = _outcome(site_copy, tmp_path / "warm")
        with monkeypatch.context() as patch:
            patch.setenv(build_cache.CACHE_ENV, "off")
            cold = _outcome(site_copy, tmp_path / "cold")
        assert warm == cold, name
        assert (warm[0] == 0) is passes, (name, warm[1])


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The arguments each build passes to check_artifacts: what these tests follow is
    what the checks are left to prove, by what the last build proved."""
    seen: list[dict[str, Any]] = []
    real = pipeline.check_artifacts

    def spy(
        site: Any, artifacts: Any, known: Any, coverage_proven: bool = False, **rest: Any
    ) -> None:
        seen.append({"known": known, "coverage_proven": coverage_proven})
        real(site, artifacts, known, coverage_proven=coverage_proven, **rest)

    monkeypatch.setattr(pipeline, "check_artifacts", spy)
    return seen


def test_a_rebuild_checks_only_what_changed(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _spied(monkeypatch)
    out = tmp_path / "out"
    pipeline.build(site_copy, out)
    first = seen[-1]
    assert not first["coverage_proven"]
    entry_files = [
        path for path in first["known"] if path.startswith(("/api/v1/faq/q", "/api/v1/content/d"))
    ]
    assert any(first["known"][path] for path in entry_files), "the first build checks links"

    pipeline.build(site_copy, out)  # nothing changed: everything proven
    second = seen[-1]
    assert second["coverage_proven"]
    assert not any(second["known"].values()), {k: v for k, v in second["known"].items() if v}

    path = site_copy / "faq" / "q01-difference.yaml"
    path.write_text(path.read_text().replace("answer: |\n  ", "answer: |\n  Edited. ", 1))
    pipeline.build(site_copy, out)
    third = seen[-1]
    checked = {path for path, found in third["known"].items() if found}
    # The edited entry's own files and the aggregates holding its pieces, nothing else.
    assert checked, "the edited entry's links are checked"
    assert all(
        not path.startswith(("/api/v1/faq/", "/api/v1/content/"))
        or "q01-difference" in path
        or path.endswith(("index.json", "search-index.json"))
        for path in checked
    ), checked


def test_an_added_entry_is_checked_alone(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path added takes nothing away: what resolved still does (coverage is checked again)."""
    seen = _spied(monkeypatch)
    pipeline.build(site_copy, tmp_path / "out")
    text = (site_copy / "faq" / "q02-endpoints.yaml").read_text()
    (site_copy / "faq" / "q99-added.yaml").write_text(text.replace("q02-endpoints", "q99-added"))
    pipeline.build(site_copy, tmp_path / "out")
    added = seen[-1]
    assert not added["coverage_proven"]
    checked = {path for path, found in added["known"].items() if found}
    assert "/api/v1/faq/q99-added.json" in checked
    assert not any("q02-endpoints" in path for path in checked), checked


def _errors(site: Path, out: Path) -> list[str] | None:
    try:
        pipeline.build(site, out)
    except SiteDataError as error:
        return [str(problem) for problem in error.problems]
    return None


def _llms_txt_links_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    real = endpoints.RENDERERS["llms_txt"]
    dangling = "{}/api/v1/gone.json\n"
    bad = replace(real, body=lambda c: real.body(c) + dangling.format(c.site.base_url).encode())
    monkeypatch.setitem(endpoints.RENDERERS, "llms_txt", bad)


def _discovery_leaves_a_path_out(monkeypatch: pytest.MonkeyPatch) -> None:
    real = endpoints.RENDERERS["discovery"]

    def body(context: Any) -> bytes:
        data = json.loads(real.body(context))
        data["interfaces"] = {
            key: url for key, url in data["interfaces"].items() if "openapi" not in url
        }
        return json.dumps(data, indent=2).encode() + b"\n"

    monkeypatch.setitem(endpoints.RENDERERS, "discovery", replace(real, body=body))


def _a_stray_file_published(monkeypatch: pytest.MonkeyPatch) -> None:
    """A path more (nothing taken away: links still hold), which nothing covers."""
    real = pipeline.render

    def render(*args: Any, **kwargs: Any) -> list[Artifact]:
        return [*real(*args, **kwargs), Artifact("/api/v1/stray.json", b"{}\n")]

    monkeypatch.setattr(pipeline, "render", render)


@pytest.mark.parametrize(
    "breakage", [_llms_txt_links_nowhere, _discovery_leaves_a_path_out, _a_stray_file_published]
)
def test_a_generated_file_with_new_bytes_is_checked_again(
    breakage: Callable[[pytest.MonkeyPatch], None],
    site_copy: Path,
    tmp_path: Path,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same published paths, entries unchanged, one generated file different (a
    renderer bug, patched in so that the code fingerprint stays): it is checked."""
    assert _errors(site_copy, tmp_path / "out") is None  # writes the note
    breakage(monkeypatch)
    warm = _errors(site_copy, tmp_path / "out")
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    cold = _errors(site_copy, tmp_path / "cold")
    assert cold, "the breakage is caught without the cache"
    assert warm == cold


def test_a_failed_build_records_nothing(site_copy: Path, tmp_path: Path, cache_dir: Path) -> None:
    assert _outcome(site_copy, tmp_path / "out")[0] == 0
    [note] = cache_dir.glob("build-*.latest")
    before = note.read_bytes(), note.stat().st_mtime_ns
    _dangling_link(site_copy)
    assert _outcome(site_copy, tmp_path / "out")[0] != 0
    assert (note.read_bytes(), note.stat().st_mtime_ns) == before


@pytest.mark.parametrize("damage", ["garbage", "cut short", "another published set"])
def test_a_damaged_or_foreign_note_proves_nothing(
    damage: str,
    site_copy: Path,
    tmp_path: Path,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _outcome(site_copy, tmp_path / "out")[0] == 0
    [note] = cache_dir.glob("build-*.latest")
    body = note.read_bytes()
    if damage == "garbage":
        note.write_bytes(b"garbage")
    elif damage == "cut short":
        note.write_bytes(body[: len(body) // 2])
    else:  # a note that would prove the same entries for other paths
        magic, header, frame = body.split(b"\n", 2)
        values = pickle.loads(frame[:-12])
        found: proven.Proven = values[proven._PROVEN]
        gone = frozenset(sorted(found.published)[1:])  # a path this build publishes
        values[proven._PROVEN] = proven.Proven(
            found.published | {"/elsewhere.json"} - gone, found.entries, found.files, found.coverage
        )
        with note.open("wb") as stream:
            stream.write(magic + b"\n" + header + b"\n")
            build_cache._write_frame(stream, values)
    seen = _spied(monkeypatch)
    pipeline.build(site_copy, tmp_path / "out")
    assert not seen[-1]["coverage_proven"]
    assert any(seen[-1]["known"].values()), "everything is checked again"


def test_without_the_cache_nothing_is_recorded(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    seen = _spied(monkeypatch)
    for _ in range(2):
        pipeline.build(site_copy, tmp_path / "out")
        assert not seen[-1]["coverage_proven"]
        assert any(seen[-1]["known"].values())


def test_entry_links_are_kept_packed_and_unpacked_whole() -> None:
    links = EntryLinks.found(
        json=[("https://x.test/a.json", "/a.json")],
        markdown=[],
        authored=[("answer", "https://x.test/b.json", "/b.json")],
        pieces={"index_entry": [("https://x.test/c.json", "/c.json")]},
    )
    packed = links.pack()
    assert isinstance(packed, bytes), "one bytes object: nothing for the collector to walk"
    again = EntryLinks.unpack(packed)
    assert again == links
    assert again.authored == (("answer", "https://x.test/b.json", "/b.json"),)
    assert again.pieces == {"index_entry": (("https://x.test/c.json", "/c.json"),)}
