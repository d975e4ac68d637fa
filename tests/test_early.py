"""content_builder/early.py: a first build's files written by a forked child while the
build checks them. The output is that of a plain write; a failed build, or a child that
fails, leaves no trace and changes nothing but the time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_contract import paths
from agent_contract.artifacts import Artifact
from content_builder import build as pipeline
from content_builder import cache as build_cache
from content_builder import early, halves, writer
from content_builder.errors import SiteDataError
from tests.conftest import (
    REPO,
    TEST_BASE_URL,
    counted_forks,
    full_disk_when,
    plain_build,
    tree_digest,
)


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork path on the small fixture site, whatever threads other tests left behind
    (the child takes no lock another thread could hold)."""
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    monkeypatch.setattr(halves.threading, "active_count", lambda: 1)
    monkeypatch.setattr(early, "MINIMUM_FILES", 1)


def _written_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the writer writes in this process (the child's writes are not seen)."""
    written: list[str] = []
    real = writer.write_new_file

    def counting(path: str, body: bytes) -> None:
        written.append(path)
        real(path, body)

    monkeypatch.setattr(writer, "write_new_file", counting)
    return written


def _capturing_start(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """EarlyFiles.start as it is, each call's files and result kept."""
    calls: list[object] = []
    real_start = early.EarlyFiles.start.__func__  # type: ignore[attr-defined]

    def start(cls: type[early.EarlyFiles], files: list[Artifact], out_dir: Path) -> object:
        started = real_start(cls, files, out_dir)
        calls.append((files, started))
        return started

    monkeypatch.setattr(early.EarlyFiles, "start", classmethod(start))
    return calls


@pytest.mark.usefixtures("forking")
def test_the_output_is_that_of_a_plain_write(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    calls = _capturing_start(monkeypatch)
    written = _written_here(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    [(files, started)] = calls
    assert started is not None, "a child wrote the files"
    assert files == result.artifacts
    assert written == [], "this process wrote none of them (the manifest aside)"
    # Beside the output, only the spare the child linked (the next build updates it).
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".dist.spare",
        "dist",
        "plain",
        "site_data",
    ]
    assert tree_digest(tmp_path / ".dist.spare" / "dist") == {
        **expected,
        writer.SPARE_RECORD: tree_digest(tmp_path / ".dist.spare" / "dist")[writer.SPARE_RECORD],
    }


@pytest.mark.usefixtures("forking")
def test_a_build_that_fails_after_the_child_started_leaves_nothing(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _capturing_start(monkeypatch)

    def failing_budgets(artifacts: list[Artifact]) -> None:
        raise SiteDataError.single("site.yaml", None, "over budget (injected)")

    monkeypatch.setattr(pipeline, "check_budgets", failing_budgets)
    with pytest.raises(SiteDataError, match="injected"):
        pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert calls and calls[0][1] is not None, "the child had started"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site_data"], "no output, no staging"
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # the child was reaped: no zombie left behind


@pytest.mark.usefixtures("forking")
def test_a_child_that_fails_changes_nothing_but_the_time(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)

    def failing_files(folder: str, files: dict[str, bytes]) -> None:
        Path(folder, "stray").write_text("half-written")  # what a dying child leaves
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(early, "write_files", failing_files)
    written = _written_here(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    assert len(written) == len(result.artifacts), "every file written here instead"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "plain", "site_data"]


@pytest.mark.usefixtures("forking")
def test_an_existing_output_is_never_staged_early(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "dist"
    out.mkdir()
    leaves = [Artifact("/api/v1/content/documents/a.json", b"{}\n")]
    assert early.EarlyFiles.start(leaves, out) is None
    assert early.EarlyFiles.start(leaves, tmp_path / "missing" / "dist") is None, (
        "a failed build must not have created the parent folder"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "site_data"]


@pytest.mark.usefixtures("forking")
def test_a_key_published_again_later_is_written_by_the_writer(tmp_path: Path) -> None:
    first = Artifact("/api/v1/content/documents/a.json", b'{"first": 1}\n')
    other = Artifact("/api/v1/content/documents/b.json", b"{}\n")
    files = early.EarlyFiles.start([first, other], tmp_path / "dist")
    assert files is not None
    later = Artifact(first.path, b'{"later": 2}\n')
    writer.write_output([first, other, later], tmp_path / "dist", TEST_BASE_URL, files)
    assert (tmp_path / "dist" / first.key).read_bytes() == later.body, "the last one wins"
    assert (tmp_path / "dist" / other.key).read_bytes() == other.body


@pytest.fixture
def waiting_for_the_search_index(forking: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search index's keywords chosen by the spare (every entry rendered: no cache), which
    seems to work as long as asked (so every file is written while waiting for it), and
    no early child after (its threshold out of reach)."""
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    monkeypatch.setattr(pipeline, "MINIMUM_ITEMS", 1)
    monkeypatch.setattr(halves.Ahead, "running", lambda self: True)
    monkeypatch.setattr(early, "MINIMUM_FILES", 10**9)


@pytest.mark.usefixtures("waiting_for_the_search_index")
def test_files_written_while_the_search_index_renders_are_those_of_a_plain_write(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    written = _written_here(monkeypatch)
    forks = counted_forks(monkeypatch)
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == expected
    assert [Path(path).name for path in written] == [Path(paths.SEARCH_INDEX).name], (
        "the writer wrote only the search index: every other file was written meanwhile"
    )
    assert len(forks) == 1, "the spare (the search index's keywords), no early child"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "plain", "site_data"]


@pytest.mark.usefixtures("waiting_for_the_search_index")
def test_a_write_that_fails_while_waiting_leaves_every_file_to_the_writer(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    calls = full_disk_when(monkeypatch, lambda count: count == 3)
    written = _written_here(monkeypatch)
    result, _ = pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert len(calls) == 3, "writing stopped at the failure"
    assert tree_digest(tmp_path / "dist") == expected
    assert len(written) == len(result.artifacts), "every file written by the writer instead"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "plain", "site_data"]


@pytest.mark.usefixtures("waiting_for_the_search_index")
def test_a_build_that_fails_after_files_were_written_while_waiting_leaves_nothing(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, calls = early.write_new_file, []
    monkeypatch.setattr(early, "write_new_file", lambda p, b: (calls.append(p), real(p, b)))

    def failing_budgets(artifacts: list[Artifact]) -> None:
        raise SiteDataError.single("site.yaml", None, "over budget (injected)")

    monkeypatch.setattr(pipeline, "check_budgets", failing_budgets)
    with pytest.raises(SiteDataError, match="injected"):
        pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert calls, "files had been written while waiting"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site_data"], "no output, no staging"


@pytest.mark.usefixtures("forking")
def test_writing_stops_when_the_child_is_done_and_a_child_writes_the_rest(
    tmp_path: Path,
) -> None:
    artifacts = [
        Artifact(f"/api/v1/content/documents/d{i:02}.json", b'{"n": %d}\n' % i) for i in range(40)
    ]
    answers = iter([True, False])  # busy when first asked, done when asked again
    files = early.EarlyFiles.begin(tmp_path / "dist")
    assert files is not None
    files.write_while(artifacts, lambda: next(answers))
    assert len(files.files) == early._ASK_EVERY, "written until the child was done"
    assert files.finish(artifacts), "a child writes the rest"
    writer.write_output(artifacts, tmp_path / "dist", TEST_BASE_URL, files)
    for artifact in artifacts:
        assert (tmp_path / "dist" / artifact.key).read_bytes() == artifact.body
    # Beside the output, only the spare the child linked: every file, those this process
    # wrote before the fork too (the next build updates it in place).
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dist.spare", "dist"]
    spare = tmp_path / ".dist.spare" / "dist"
    assert tree_digest(spare) == {
        **tree_digest(tmp_path / "dist"),
        writer.SPARE_RECORD: tree_digest(spare)[writer.SPARE_RECORD],
    }


def test_nothing_written_early_means_no_staging_folder(tmp_path: Path) -> None:
    files = early.EarlyFiles.begin(tmp_path / "dist")
    assert files is not None
    files.write_while([Artifact("/api/v1/content/documents/a.json", b"{}\n")], lambda: False)
    assert files.take() is None and list(tmp_path.iterdir()) == []


def test_write_new_file_writes_what_write_bytes_writes(tmp_path: Path) -> None:
    body = bytes(range(256)) * 4096  # larger than one pipe or page
    early.write_new_file(str(tmp_path / "new"), body)
    (tmp_path / "old").write_bytes(body)
    early.write_new_file(str(tmp_path / "old"), b"short")  # truncated, as "wb" does
    assert (tmp_path / "new").read_bytes() == body
    assert (tmp_path / "old").read_bytes() == b"short"
    assert (tmp_path / "new").stat().st_mode == (tmp_path / "old").stat().st_mode


_TERMINATED_MID_CHECK = """
import os, signal, sys, time
from content_builder import build as pipeline, early, halves
from content_builder.cli import main
early.MINIMUM_FILES = 1
halves.threading.active_count = lambda: 1
def checked(artifacts):  # the early files are being written: a SIGTERM arrives
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
pipeline.check_budgets = checked
sys.exit(main(["build", "--site", sys.argv[1], "--out", sys.argv[2]]))
"""


def test_a_build_terminated_mid_check_leaves_nothing_behind(
    site_copy: Path, tmp_path: Path
) -> None:
    """SIGTERM (a cancelled CI job) runs the build's cleanup: no staging folder of early
    files is left beside the output, and no child goes on writing."""
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs os.fork and two CPUs")
    out = tmp_path / "out" / "dist"
    out.parent.mkdir()
    completed = subprocess.run(
        [sys.executable, "-c", _TERMINATED_MID_CHECK, str(site_copy), str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "AGENT_ACCESS_CACHE_DIR": "off"},
    )  # fmt: skip
    assert completed.returncode == 128 + signal.SIGTERM, completed.stderr[-2000:]
    time.sleep(0.5)  # a child that went on would still be writing
    assert list(out.parent.iterdir()) == [], "no staging folder, no output"


def _edit(site: Path) -> None:
    path = site / "faq" / "q01-difference.yaml"
    path.write_text(path.read_text().replace("sitemap", "site map"))


@pytest.mark.usefixtures("forking")
def test_the_build_after_a_first_one_updates_the_spare_the_child_linked(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child links what it wrote into the first build's spare: the next build updates
    it in place instead of staging a link of every file, and writes what a plain build
    writes."""
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    staged: list[object] = []
    real_stage = writer._stage

    def stage(*args: object, **kwargs: object) -> object:
        staged.append(args)
        return real_stage(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "_stage", stage)
    _edit(site_copy)
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert staged == [], "the spare was updated in place"
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    assert tree_digest(tmp_path / "dist") == expected


@pytest.mark.usefixtures("forking")
def test_a_child_that_fails_to_link_leaves_no_spare_and_its_files_used(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(folder: str, twin: str, keys: object) -> None:
        raise OSError("no hard links here")

    monkeypatch.setattr(early, "link_files", broken)
    written = _written_here(monkeypatch)
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert written == [], "the files the child wrote are used"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "site_data"]
    expected = plain_build(site_copy, tmp_path / "plain", monkeypatch)
    assert tree_digest(tmp_path / "dist") == expected
    _edit(site_copy)
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert tree_digest(tmp_path / "dist") == plain_build(site_copy, tmp_path / "plain", monkeypatch)


@pytest.mark.usefixtures("forking")
def test_with_the_cache_off_the_child_links_nothing(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the build cache the parent soon waits for the child, and no later build is
    incremental: the cold build does not pay for the links."""
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    pipeline.build(site_copy, tmp_path / "dist", TEST_BASE_URL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "site_data"]


@pytest.mark.usefixtures("forking")
def test_a_fork_that_fails_leaves_no_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No child (fork refused: too many processes, no memory): the folders made for it
    go at once, not when a later build finds this process gone."""

    def refused() -> int:
        raise OSError("fork refused")

    monkeypatch.setattr(early.os, "fork", refused)
    artifacts = [Artifact("/api/v1/content/documents/a.json", b"{}\n")]
    assert early.EarlyFiles.start(artifacts, tmp_path / "dist") is None
    assert list(tmp_path.iterdir()) == []
