"""What the last passing build proved (content_builder/proven.py) spares the next build
only checks whose answer cannot have changed: a proof never hides a problem."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from content_builder import build as pipeline
from content_builder import cache as build_cache
from content_builder import proven
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
    """The arguments each build passes to check_artifacts."""
    seen: list[dict[str, Any]] = []
    real = pipeline.check_artifacts

    def spy(site: Any, artifacts: Any, known: Any, coverage_proven: bool = False) -> None:
        seen.append({"known": known, "coverage_proven": coverage_proven})
        real(site, artifacts, known, coverage_proven=coverage_proven)

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


def test_a_failed_build_records_nothing(site_copy: Path, tmp_path: Path, cache_dir: Path) -> None:
    assert _outcome(site_copy, tmp_path / "out")[0] == 0
    [note] = cache_dir.glob(f"build-*.{proven.NOTE}")
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
    [note] = cache_dir.glob(f"build-*.{proven.NOTE}")
    body = note.read_bytes()
    if damage == "garbage":
        note.write_bytes(b"garbage")
    elif damage == "cut short":
        note.write_bytes(body[: len(body) // 2])
    else:  # a note that would prove the same entries for other paths
        magic, header, frame = body.split(b"\n", 2)
        found: proven.Proven = pickle.loads(frame[:-12])
        forged = proven.Proven(b"other", found.entries, found.files, found.coverage)
        with note.open("wb") as stream:
            stream.write(magic + b"\n" + header + b"\n")
            build_cache._write_frame(stream, forged)
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


def test_entry_links_pickle_on_their_own_and_unpickle_when_read() -> None:
    links = EntryLinks(
        json=[("https://x.test/a.json", "/a.json")],
        markdown=[],
        authored=[("answer", "https://x.test/b.json", "/b.json")],
        pieces={"index_entry": [("https://x.test/c.json", "/c.json")]},
    )
    again = pickle.loads(pickle.dumps(links))
    assert again._value is None, "not unpickled until read"
    assert again.authored == [("answer", "https://x.test/b.json", "/b.json")]
    assert again == links
    assert again.pieces == {"index_entry": [("https://x.test/c.json", "/c.json")]}
