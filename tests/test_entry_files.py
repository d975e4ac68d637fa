"""A first build of a large site writes each entry's own files in the process that rendered
it (content_builder/early.py `EntryFiles`, given to render/entries.py `build_catalog`):
the forked half writes its half from its own memory, so no child forked later shares the
build's full heap. The output is that of a plain write; a write that fails leaves every
file to the writer; a failed build leaves nothing behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from agent_contract import paths
from agent_contract.artifacts import Artifact
from content_builder import build as pipeline
from content_builder import cache as build_cache
from content_builder import early, halves, writer
from content_builder.errors import SiteDataError
from content_builder.render import entries
from tests.conftest import (
    TEST_BASE_URL,
    force_halves,
    full_disk_when,
    plain_build,
    tree_digest,
)


@pytest.fixture
def entry_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Entries' files written as rendered, by both halves (two entries are enough), and
    no early child after (its threshold out of reach). Returns the file in which every
    process that writes an entry's file records its pid and the file's name."""
    force_halves(monkeypatch, entries)
    monkeypatch.setattr(early, "MINIMUM_ENTRY_FILES", 1)
    monkeypatch.setattr(early, "MINIMUM_FILES", 10**9)
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    log = tmp_path / "writes.log"
    real = early.write_new_file

    def logging(path: str, body: bytes) -> None:
        real(path, body)
        with open(log, "a") as record:  # one short append per line: whole lines
            record.write(f"{os.getpid()} {_key(path)}\n")

    monkeypatch.setattr(early, "write_new_file", logging)
    return log


def _key(path: str) -> str:
    """A file's key: its path under the staging folder (`.dist.new-<pid>-<random>`)."""
    parts = Path(path).parts
    staging = next(i for i, part in enumerate(parts) if part.startswith(".dist.new-"))
    return "/".join(parts[staging + 1 :])


def _written_by_the_writer(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    written: list[str] = []
    real = writer.write_new_file

    def counting(path: str, body: bytes) -> None:
        written.append(_key(path))
        real(path, body)

    monkeypatch.setattr(writer, "write_new_file", counting)
    return written


def _entry_keys(artifacts: list[Artifact], count: int) -> set[str]:
    """The keys of the entries' own files: render_catalog puts the JSON files first, then
    the Markdown mirrors, `count` of each."""
    return {a.key for a in artifacts[: 2 * count]}


def test_each_half_writes_the_files_it_rendered(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    by_writer = _written_by_the_writer(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    count = len(result.site.documents) + len(result.site.faqs)
    own = _entry_keys(result.artifacts, count)
    writes = [line.split() for line in entry_files.read_text().splitlines()]
    by_pid: dict[str, set[str]] = {}
    for pid, name in writes:
        by_pid.setdefault(pid, set()).add(name)
    assert str(os.getpid()) in by_pid and len(by_pid) == 2, "this process and its half"
    child = next(names for pid, names in by_pid.items() if pid != str(os.getpid()))
    assert child and child <= own, "the child wrote entries' files only, some of them"
    assert own <= {name for _, name in writes}, "every entry's files written as rendered"
    assert not own & set(by_writer), "the writer wrote none of the entries' files again"


def test_a_write_that_fails_leaves_every_file_to_the_writer(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    full_disk_when(monkeypatch, lambda count: count == 3)
    by_writer = _written_by_the_writer(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    assert len(by_writer) == len(result.artifacts), "every file written by the writer"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dist",
        "plain",
        "site_data",
        "writes.log",
    ], "the early staging folder removed"


def test_a_build_that_fails_after_the_entries_were_written_leaves_nothing(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_budgets(artifacts: list[Artifact]) -> None:
        raise SiteDataError.single("site.yaml", None, "over budget (injected)")

    monkeypatch.setattr(pipeline, "check_budgets", failing_budgets)
    with pytest.raises(SiteDataError, match="injected"):
        pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert entry_files.read_text(), "entries' files had been written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site_data", "writes.log"], (
        "no output, no staging folder, no twin"
    )


def test_the_twin_holds_every_file_written_early_and_the_next_build_uses_it(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the build cache on, each file written early is linked into a twin as it is
    written, which the first build keeps as the spare the next build updates in place."""
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    spare = tmp_path / ".dist.spare" / "dist"
    count = len(result.site.documents) + len(result.site.faqs)
    own = {a.key: a.body for a in result.artifacts[: 2 * count]}
    for key, body in own.items():
        assert (spare / key).read_bytes() == body, key
        assert (spare / key).stat().st_ino == (tmp_path / "dist" / key).stat().st_ino, (
            f"{key}: a hard link of the published file"
        )
    faq = next((site_copy / "faq").glob("*.yaml"))
    faq.write_text(faq.read_text().replace("answer: |\n  ", "answer: |\n  Edited. ", 1))
    edited, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == plain_build(
        site_copy, tmp_path / "plain", monkeypatch
    ), "the next build, from the spare, publishes what a plain build does"
    assert any(b"Edited." in a.body for a in edited.artifacts if a.key.startswith("api/"))


def test_a_link_that_fails_leaves_no_twin(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)  # cache off
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    real_link, links = os.link, []

    def link_fails_on_the_second(source: str, target: str) -> None:
        links.append(target)
        if len(links) == 2:
            raise OSError(31, "Too many links")
        real_link(source, target)

    monkeypatch.setattr(early.os, "link", link_fails_on_the_second)
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert links, "links were made"
    assert tree_digest(tmp_path / "dist") == expected
    assert not (tmp_path / ".dist.spare").exists(), "a twin missing a file is not kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cache",
        "dist",
        "plain",
        "site_data",
        "writes.log",
    ]


def test_an_existing_output_is_not_written_as_rendered(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    entry_files.unlink()
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert not entry_files.exists(), "the writer reuses or replaces an existing output"


def _written_once(log: Path) -> dict[str, str]:
    """Each file's name -> the pid that wrote it, asserting none was written twice."""
    writer_of: dict[str, str] = {}
    for line in log.read_text().splitlines():
        pid, name = line.split()
        assert name not in writer_of, f"{name} written twice ({writer_of[name]}, {pid})"
        writer_of[name] = pid
    return writer_of


def test_a_first_build_writes_each_file_once_and_keeps_a_whole_twin(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole cold path: entries' files as rendered, the rest while the spare chooses
    the keywords (which seems busy as long as asked), the search index by the writer;
    every file linked into the twin as written."""
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    monkeypatch.setattr(pipeline, "MINIMUM_ITEMS", 1)  # the spare gets the keywords
    monkeypatch.setattr(halves.Ahead, "running", lambda self: True)
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    by_writer = _written_by_the_writer(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    writer_of = _written_once(entry_files)
    assert len(writer_of) == len(result.artifacts) - 1, "all but the search index early"
    assert by_writer == [paths.SEARCH_INDEX.lstrip("/")], "the writer wrote the search index"
    spare = tmp_path / ".dist.spare" / "dist"
    for artifact in result.artifacts:
        if artifact.path == paths.SEARCH_INDEX:
            continue
        assert (spare / artifact.key).stat().st_ino == (
            tmp_path / "dist" / artifact.key
        ).stat().st_ino, f"{artifact.key}: linked into the twin"


def test_the_early_child_links_only_what_is_left_into_a_twin_made_up_front(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    monkeypatch.setattr(early, "MINIMUM_FILES", 1)  # what is left goes to an early child
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    spare = tmp_path / ".dist.spare" / "dist"
    assert spare.is_dir(), "the twin is whole: kept as the spare"
    for artifact in result.artifacts:
        assert (spare / artifact.key).stat().st_ino == (
            tmp_path / "dist" / artifact.key
        ).stat().st_ino, artifact.key


def test_a_write_that_fails_in_the_child_only_leaves_every_file_to_the_writer(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    parent = os.getpid()
    full_disk_when(monkeypatch, lambda count: os.getpid() != parent)
    by_writer = _written_by_the_writer(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    assert len(by_writer) == len(result.artifacts), "every file written by the writer"


def test_a_child_killed_mid_write_changes_nothing_but_the_time(
    entry_files: Path, site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its half rendered again here (halves.py) and written here; the file it left
    half-written is written again."""
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    parent, real = os.getpid(), early.write_new_file

    def killed_in_the_child(path: str, body: bytes) -> None:
        if os.getpid() != parent:
            Path(path).write_bytes(body[:1])
            os.kill(os.getpid(), signal.SIGKILL)
        real(path, body)

    monkeypatch.setattr(early, "write_new_file", killed_in_the_child)
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dist",
        "plain",
        "site_data",
        "writes.log",
    ], "no staging folder left"
