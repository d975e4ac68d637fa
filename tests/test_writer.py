"""The writer swaps a complete output in, or leaves the previous one exactly as it was."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_contract.artifacts import Artifact
from content_builder import build as pipeline
from content_builder import writer
from tests.conftest import REPO, TEST_BASE_URL, run_cli, tree_digest


def test_a_failure_while_writing_leaves_the_previous_output(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "dist"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    before = tree_digest(out)
    lock_before = (site_copy / "content.lock.json").read_bytes()
    (site_copy / "faq" / "q01-difference.yaml").write_text(
        (site_copy / "faq" / "q01-difference.yaml").read_text().replace("sitemap", "site map")
    )

    written: list[str] = []
    real_write = writer._write_new_file

    def failing_write(path: str, data: bytes) -> None:
        if len(written) == 5:
            raise OSError(28, "No space left on device")
        written.append(path)
        real_write(path, data)

    monkeypatch.setattr(writer, "_write_new_file", failing_write)
    with pytest.raises(OSError, match="No space left"):
        run_cli("build", "--site", site_copy, "--out", out, "--base-url", TEST_BASE_URL)
    monkeypatch.undo()

    assert len(written) == 5, "the failure happened mid-build"
    assert tree_digest(out) == before
    assert (site_copy / "content.lock.json").read_bytes() == lock_before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dist.spare", "dist", "site_data"]
    # The half-staged spare is trusted for nothing: the next build is a clean build's.
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


def test_a_lock_that_cannot_be_written_leaves_the_output_as_it_was(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock goes in after the output: its bytes are written beside it first, so a
    full disk fails the build before the output changes (not after, with the output new
    and the lock old)."""
    out = tmp_path / "dist"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    before = tree_digest(out)
    lock = site_copy / "content.lock.json"
    lock_before = lock.read_bytes()
    faq = site_copy / "faq" / "q01-difference.yaml"
    faq.write_text(faq.read_text().replace("sitemap", "site map"))

    def full_disk(path: Path, body: bytes) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipeline, "staged_file", full_disk)
    with pytest.raises(OSError, match="No space left"):
        run_cli("build", "--site", site_copy, "--out", out)
    monkeypatch.undo()
    assert tree_digest(out) == before
    assert lock.read_bytes() == lock_before
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    assert lock.read_bytes() != lock_before, "the next build writes both"
    assert sorted(p.name for p in site_copy.iterdir() if p.name.startswith(".")) == []


def test_a_first_build_whose_swap_fails_leaves_no_output(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rename = os.rename

    def refused(source: object, target: object) -> None:
        if Path(str(target)) == tmp_path / "dist":
            raise OSError(13, "Permission denied")
        real_rename(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "rename", refused)
    with pytest.raises(OSError, match="Permission denied"):
        run_cli("build", "--site", site_copy, "--out", tmp_path / "dist")
    monkeypatch.undo()
    assert not (tmp_path / "dist").exists()
    assert run_cli("build", "--site", site_copy, "--out", tmp_path / "dist").code == 0
    assert tree_digest(tmp_path / "dist") == _clean_build(site_copy, tmp_path / "clean")


def test_a_spare_a_killed_build_left_or_a_hand_changed_is_trusted_for_nothing(
    site_copy: Path, tmp_path: Path
) -> None:
    """SIGKILL (or SIGTERM: no handler) leaves a build no cleanup: the spare it was staging
    in is half-updated. The next build keeps a spare's file only when it is the live file
    itself (same inode) and the live file is trusted: stray files go, replaced or edited
    ones are written again, and the output is a clean build's."""
    out = tmp_path / "dist"
    for number in range(2):
        _edit(site_copy, number)
        _build(site_copy, out)
    spare = writer.spare_folder(out)
    assert (spare / writer.MANIFEST_NAME).is_file()
    (spare / "stray.json").write_text("{}")
    (spare / "api" / "stray-folder").mkdir()
    _replace_by_hand(spare / "api/v1/faq/q02-endpoints.json")
    (spare / "llms.txt").unlink()
    (spare / "api/v1/content/index.json").write_bytes(b"half")
    _edit(site_copy, 2)
    _build(site_copy, out)
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


def test_a_spares_place_holding_something_else_is_refused_not_cleared(
    site_copy: Path, tmp_path: Path
) -> None:
    out = tmp_path / "dist"
    _build(site_copy, out)
    theirs = writer.spare_folder(out)
    shutil.rmtree(theirs.parent, ignore_errors=True)
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("keep me")
    result = run_cli("build", "--site", site_copy, "--out", out)
    assert result.code == 1 and ".dist.spare" in result.err
    assert (theirs / "notes.txt").read_text() == "keep me"


def test_an_edit_build_keeps_the_spares_unchanged_files_and_links_or_removes_none(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After one edit, the spare already holds (as the live output's own inodes) every
    file but the edited entry's and the aggregates: only those are replaced."""
    out = tmp_path / "dist"
    for number in range(3):
        _edit(site_copy, number)
        _build(site_copy, out)
    calls: list[str] = []
    for name in ("link", "unlink"):
        real = getattr(os, name)
        monkeypatch.setattr(
            os,
            name,
            lambda *a, _real=real, _name=name, **k: (calls.append(_name), _real(*a, **k))[1],
        )
    _edit(site_copy, 3)
    _build(site_copy, out)
    monkeypatch.undo()
    files = len(list(out.rglob("*")))
    assert 0 < calls.count("link") < files / 3, calls.count("link")
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


def test_refuses_to_replace_a_folder_it_did_not_write(site_copy: Path, tmp_path: Path) -> None:
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    result = run_cli("build", "--site", site_copy, "--out", precious)
    assert result.code == 1
    assert "not a build output" in result.err and "home" in result.err
    assert (precious / "notes.txt").read_text() == "keep me"
    assert list(precious.iterdir()) == [precious / "notes.txt"]


def test_manifest_records_hash_size_and_headers(site_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    manifest = json.loads((out / writer.MANIFEST_NAME).read_text())
    entry = manifest["files"]["/api/v1/faq/q02-endpoints.json"]
    body = (out / "api/v1/faq/q02-endpoints.json").read_bytes()
    assert entry["sha256"] == hashlib.sha256(body).hexdigest()
    assert entry["size"] == len(body)
    assert entry["media_type"] == "application/json"
    assert "max-age=" in entry["cache_control"]
    assert list(manifest["files"]) == sorted(manifest["files"])


def test_a_folder_with_someone_elses_manifest_json_is_not_replaced(
    site_copy: Path, tmp_path: Path
) -> None:
    """A web app or browser extension has a manifest.json too: that is not our build."""
    extension = tmp_path / "extension"
    (extension / "src").mkdir(parents=True)
    (extension / "manifest.json").write_text('{"manifest_version": 3, "name": "x"}')
    (extension / "src" / "background.js").write_text("chrome.runtime.onInstalled")
    result = run_cli("build", "--site", site_copy, "--out", extension)
    assert result.code == 1 and "not a build output" in result.err
    assert (extension / "src" / "background.js").is_file()


def test_a_published_file_changed_by_hand_is_written_again(site_copy: Path, tmp_path: Path) -> None:
    """Unchanged files are reused from the previous output without being read when the
    manifest vouches for them; a file edited since (same size, newer) is not vouched for."""
    out = tmp_path / "dist"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    target = out / "api/v1/faq/q02-endpoints.json"
    original = target.read_bytes()
    tampered = original.replace(b"a", b"b", 1)
    assert tampered != original and len(tampered) == len(original)
    target.write_bytes(tampered)
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    assert (out / "api/v1/faq/q02-endpoints.json").read_bytes() == original


def test_unchanged_files_are_reused_without_reading_them(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "dist"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    before = tree_digest(out)
    read: list[Path] = []
    real_read_bytes = Path.read_bytes

    def counting(self: Path) -> bytes:
        if out in self.parents and self != out / "manifest.json":  # the manifest: read
            read.append(self)
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    monkeypatch.undo()
    assert read == [], "files the manifest vouches for were read"
    assert tree_digest(out) == before


@pytest.mark.parametrize("how", ["manifest touched", "folder moved in", "folder a symlink"])
def test_a_live_output_changed_by_hand_gets_no_trust_from_its_manifest(
    site_copy: Path, tmp_path: Path, how: str
) -> None:
    """The manifest vouches for the live files' times only while it is the very file the
    last build wrote (its inode and ctime, recorded in the spare); a folder moved in keeps
    its files' times but not its own; a symlinked folder is never followed."""
    out = tmp_path / "dist"
    _edit(site_copy, 1)  # "site map 1": the FAQ's files are the same size at every edit
    _build(site_copy, out)
    _edit(site_copy, 2)
    _build(site_copy, out)
    faq = out / "api/v1/faq"
    elsewhere = tmp_path / "elsewhere"
    if how == "manifest touched":
        target = faq / "q01-difference.json"
        stat, body = target.stat(), target.read_bytes()
        target.write_bytes(body.replace(b"site map 2", b"site map 9"))  # in place
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        time.sleep(0.05)  # past the coarse clock's tick
        os.utime(out / writer.MANIFEST_NAME)  # an editor saved it, say
    elif how == "folder moved in":
        shutil.rmtree(faq)  # the previous build's FAQ files, their old times kept
        os.rename(writer.spare_folder(out) / "api/v1/faq", faq)
    else:
        shutil.copytree(faq, elsewhere)
        shutil.rmtree(faq)
        faq.symlink_to(elsewhere, target_is_directory=True)
    _build(site_copy, out)
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")
    assert not faq.is_symlink()
    if elsewhere.exists():
        outside = {path.stat().st_ino for path in elsewhere.iterdir()}
        assert not outside & {path.stat().st_ino for path in faq.iterdir()}


def test_a_published_file_restored_with_its_old_mtime_is_written_again(
    site_copy: Path, tmp_path: Path
) -> None:
    """`cp -p`, `rsync -t`, `tar x` put an old mtime back on changed bytes; the ctime
    still moves, so the file is not vouched for."""
    out = tmp_path / "dist"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    manifest_time = (out / writer.MANIFEST_NAME).stat().st_mtime_ns
    target = out / "api/v1/faq/q02-endpoints.json"
    original, stat = target.read_bytes(), target.stat()
    target.write_bytes(original.replace(b"a", b"b", 1))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert target.stat().st_mtime_ns < manifest_time <= target.stat().st_ctime_ns
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    assert (out / "api/v1/faq/q02-endpoints.json").read_bytes() == original


@pytest.mark.parametrize("base_url", ["https://agents.example.test", "https://café.test",
                                      "https://a\x7fb.test"])  # fmt: skip
def test_manifest_body_is_what_json_dumps_writes(base_url: str) -> None:
    """manifest.json is written by pydantic-core only where its bytes equal json.dumps'
    (ASCII without DEL); otherwise by json.dumps itself."""
    from agent_contract.manifest import build_manifest, entry, manifest_body

    files = {"/api/v1/x.json": entry("ab" * 32, 12, "application/json", "public, max-age=60")}
    manifest = build_manifest(base_url, files)
    assert manifest_body(manifest) == (json.dumps(manifest, indent=2) + "\n").encode()


# --- A sequence of builds into one output ----------------------------------------------


def _edit(site: Path, n: int) -> None:
    """A different small edit each call (one FAQ answer), as a user makes between builds."""
    faq = site / "faq" / "q01-difference.yaml"
    faq.write_text(faq.read_text().replace("sitemap", f"site map {n}", 1))


def _clean_build(site: Path, folder: Path) -> dict[str, str]:
    """What a build from scratch writes for the site as it is now."""
    assert run_cli("build", "--site", site, "--out", folder).code == 0
    return tree_digest(folder)


def _build(site: Path, out: Path) -> None:
    result = run_cli("build", "--site", site, "--out", out)
    assert result.code == 0, result.err


def _replace_by_hand(target: Path) -> None:
    """Change one byte in a new file renamed over `target` (as an editor saves), mtime
    put back: only the ctime tells."""
    stat = target.stat()
    body = target.read_bytes()
    changed = body.replace(b"a", b"b", 1)
    assert changed != body
    fresh = target.with_name(target.name + ".edit")
    fresh.write_bytes(changed)
    os.replace(fresh, target)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_every_build_of_a_sequence_equals_a_clean_build(site_copy: Path, tmp_path: Path) -> None:
    """Edits, an edit undone, a build with no change, a file added and one removed by
    hand in the output: after each build the output is what a clean build writes."""
    out = tmp_path / "dist"
    faq = site_copy / "faq" / "q01-difference.yaml"
    original = faq.read_text()
    steps = [
        lambda: _edit(site_copy, 1),
        lambda: _edit(site_copy, 2),
        lambda: faq.write_text(original),
        lambda: None,
        lambda: (out / "stray.txt").write_text("left by hand"),
        lambda: (out / "api/v1/faq/q02-endpoints.json").unlink(),
        lambda: _edit(site_copy, 3),
        lambda: None,
    ]
    _build(site_copy, out)
    for number, step in enumerate(steps):
        step()
        _build(site_copy, out)
        expected = _clean_build(site_copy, tmp_path / f"clean{number}")
        assert tree_digest(out) == expected, f"step {number}"


@pytest.mark.parametrize("how", ["replaced", "in place"])
def test_a_live_file_changed_by_hand_is_not_trusted(
    site_copy: Path, tmp_path: Path, how: str
) -> None:
    """The manifest's time vouches only for what the output held when it was written (a
    file changed in place, mtime put back, moved its ctime)."""
    out = tmp_path / "dist"
    _build(site_copy, out)
    _edit(site_copy, 1)
    _build(site_copy, out)
    target = out / "api/v1/faq/q02-endpoints.json"
    if how == "replaced":
        _replace_by_hand(target)
    else:
        stat, body = target.stat(), target.read_bytes()
        target.write_bytes(body.replace(b"a", b"b", 1))
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _build(site_copy, out)
    _build(site_copy, out)
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


@pytest.mark.parametrize("exchange", ["missing", "refused by the filesystem"])
def test_without_an_atomic_exchange_three_renames_do(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: str
) -> None:
    import ctypes
    import errno

    def refusing(*args: object) -> int:
        ctypes.set_errno(errno.EINVAL)
        return -1

    monkeypatch.setattr(writer, "_renameat2", lambda: None if exchange == "missing" else refusing)
    out = tmp_path / "dist"
    for number in range(4):
        _edit(site_copy, number)
        _build(site_copy, out)
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".clean.spare", ".dist.spare",
                                                          "clean", "dist", "site_data"]  # fmt: skip


@pytest.mark.skipif(writer._renameat2() is None, reason="renameat2 is Linux (glibc 2.28+) only")
def test_the_output_is_exchanged_in_one_step_where_the_os_can(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readers (serve, the publisher) never find the output folder missing."""
    out = tmp_path / "dist"
    for number in range(2):
        _edit(site_copy, number)
        _build(site_copy, out)
    renamed: list[tuple[object, ...]] = []
    real_rename = os.rename
    monkeypatch.setattr(os, "rename", lambda *a, **k: (renamed.append(a), real_rename(*a, **k)))
    _edit(site_copy, 2)
    _build(site_copy, out)
    monkeypatch.undo()
    assert renamed == []
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_clean_removes_the_output_its_spare_and_the_build_cache(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "Makefile", project / "Makefile")
    cache = tmp_path / "cache"
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", str(cache))
    out = project / "dist"
    _build(site_copy, out)
    _build(site_copy, out)
    assert writer.spare_folder(out).is_dir()
    assert any(cache.glob("build-*.pickle")), "the build filled the cache"
    subprocess.run(["make", "-s", "clean"], cwd=project, check=True, capture_output=True)
    assert sorted(path.name for path in project.iterdir()) == ["Makefile"]
    assert not cache.exists() or not any(cache.iterdir())


@pytest.mark.skipif(writer.fcntl is None, reason="flock is POSIX only")
def test_two_builds_into_one_output_take_turns(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds staging beside one output at once: the second waits until the first
    has swapped its output in (it would otherwise remove the first's staging folder as
    abandoned, or link from an output being replaced)."""
    import threading

    from content_builder.build import plan

    out = tmp_path / "dist"
    for number in range(2):
        _edit(site_copy, number)
        _build(site_copy, out)
    _edit(site_copy, 2)
    first = plan(site_copy)
    _edit(site_copy, 3)
    second = plan(site_copy)
    inside, release = threading.Event(), threading.Event()
    events: list[str] = []
    real_stage, real_read_manifest = writer._stage, writer._read_previous

    def slow_stage(*args: Any) -> Path:
        if not inside.is_set():
            inside.set()
            assert release.wait(10)
        staged = real_stage(*args)
        events.append(f"{threading.current_thread().name} staged")
        return staged

    def recording_read_manifest(folder: Path) -> Any:
        events.append(f"{threading.current_thread().name} read")
        return real_read_manifest(folder)

    monkeypatch.setattr(writer, "_stage", slow_stage)
    monkeypatch.setattr(writer, "_read_previous", recording_read_manifest)
    base_url = first.site.base_url
    one = threading.Thread(name="one", target=writer.write_output,
                           args=(first.artifacts, out, base_url))  # fmt: skip
    two = threading.Thread(name="two", target=writer.write_output,
                           args=(second.artifacts, out, base_url))  # fmt: skip
    one.start()
    try:
        assert inside.wait(10)
        two.start()
        two.join(0.5)
        assert two.is_alive() and events == ["one read"], "the second build waits"
    finally:
        release.set()
        one.join(10)
        if two.is_alive() or two.ident is not None:
            two.join(10)
        monkeypatch.undo()
    assert events == ["one read", "one staged", "two read", "two staged"]
    writer.write_output(second.artifacts, tmp_path / "clean", base_url)
    assert tree_digest(out) == tree_digest(tmp_path / "clean")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("ignore", ["this repository's", "only dist/"])
def test_the_spare_does_not_show_in_git_status(
    site_copy: Path, tmp_path: Path, ignore: str
) -> None:
    """A user whose .gitignore lists only `dist/` must not see the spare: it is a folder
    named like the output, inside `.dist.spare`."""
    repository = tmp_path / "repository"
    repository.mkdir()
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    gitignore = (REPO / ".gitignore").read_text() if ignore == "this repository's" else "dist/\n"
    (repository / ".gitignore").write_text(gitignore)
    out = repository / "dist"
    for number in range(2):
        _edit(site_copy, number)
        _build(site_copy, out)
    assert (writer.spare_folder(out) / writer.MANIFEST_NAME).is_file()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repository, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert status.splitlines() == ["?? .gitignore"]


# --- What an edit build costs: per changed file, not per published file ----------------


def test_an_edit_reports_a_row_only_for_what_it_wrote_or_removed(
    site_copy: Path, tmp_path: Path
) -> None:
    """The report holds a row per file written or removed, and counts: not a row object
    per published file (48,000 at 10,000 entries, a full garbage collection's worth, for
    the handful printed). Asked for every file (--verbose), it has them all."""
    out = tmp_path / "dist"
    first = pipeline.plan(site_copy)
    gone = Artifact("/api/v1/faq/gone.json", b"{}\n")  # a file the next build has not
    writer.write_output([*first.artifacts, gone], out, first.site.base_url)
    _edit(site_copy, 1)
    second = pipeline.plan(site_copy)
    report = writer.write_output(second.artifacts, out, second.site.base_url)
    statuses = {row.path: row.status for row in report.rows}
    assert statuses["/api/v1/faq/q01-difference.json"] == "changed"
    assert statuses[gone.path] == "removed"
    assert "unchanged" not in statuses.values()
    assert 2 < len(report.rows) < len(second.artifacts) / 3
    assert (report.files, report.changed) == (len(second.artifacts), len(report.rows))
    again = writer.write_output(second.artifacts, out, second.site.base_url, every=True)
    assert [row.path for row in again.rows] == sorted(a.path for a in second.artifacts)
    assert {row.status for row in again.rows} == {"unchanged"} and again.changed == 0


def _lstats_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths under `folder` that os.lstat is asked about from now on."""
    asked: list[str] = []
    real = os.lstat

    def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).startswith(f"{folder}/"):
            asked.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting)
    return asked


def test_an_edit_build_knows_the_spares_files_from_its_folder_listings(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which of the spare's files are the live output's own inodes is read from one
    listing per folder (its inode numbers), checked against an lstat of one file per
    folder: not an lstat per file."""
    out = tmp_path / "dist"
    for number in range(3):
        _edit(site_copy, number)
        _build(site_copy, out)
    asked = _lstats_in(writer.spare_folder(out), monkeypatch)
    _edit(site_copy, 3)
    _build(site_copy, out)
    monkeypatch.undo()
    folders = sum(1 for path in out.rglob("*") if path.is_dir())
    assert len(asked) <= folders + 1, asked
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


class _OtherNumbering:
    """A folder listing entry whose inode is not the one lstat reports (a FUSE filesystem
    without use_ino numbers its listings its own way): a number that, for one file,
    happens to be the live output's inode at that path."""

    def __init__(self, entry: os.DirEntry[str], lies: dict[str, int]) -> None:
        self._entry = entry
        self._lie = lies.get(entry.path)

    def inode(self) -> int:
        return self._entry.inode() + 10**9 if self._lie is None else self._lie

    def __getattr__(self, name: str) -> Any:
        return getattr(self._entry, name)


def test_a_folder_listing_whose_inodes_lstat_does_not_confirm_is_not_believed(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spare's file changed by hand, whose listed inode (another numbering) is the live
    file's: the folder's listing disagrees with lstat, so each of its files is asked with
    lstat, and the changed file is replaced, not kept."""
    out = tmp_path / "dist"
    for number in range(3):
        _edit(site_copy, number)
        _build(site_copy, out)
    key = "api/v1/faq/q02-endpoints.json"
    spare_file = writer.spare_folder(out) / key
    _replace_by_hand(spare_file)
    lies = {str(spare_file): (out / key).stat().st_ino}
    real_scandir = os.scandir

    class Listing:
        def __init__(self, path: Any) -> None:
            self._listing = real_scandir(path)

        def __enter__(self) -> Any:
            return (_OtherNumbering(entry, lies) for entry in self._listing)

        def __exit__(self, *exc: object) -> None:
            self._listing.close()

    monkeypatch.setattr(writer.os, "scandir", Listing)
    _build(site_copy, out)
    monkeypatch.undo()
    assert tree_digest(out) == _clean_build(site_copy, tmp_path / "clean")


@pytest.mark.parametrize(
    "text",
    [
        '{"base_url": "https://a.test", "files": {"/a": {"sha256": "00", "size": 1, '
        '"media_type": "text/plain", "cache_control": "no-cache"}}}',
        '{"base_url": "https://a.test", "files": {}, "base_url": "https://b.test"}',  # twice
        '{"base_url": "https://a.test", "files": {"/\\ud800": {"sha256": "00", "size": 1, '
        '"media_type": "text/plain", "cache_control": "no-cache"}}}',  # a lone surrogate
        '{"manifest_version": 3, "name": "a browser extension"}',
        '{"base_url": "https://a.test", "files": {}',  # cut short
        "\ufeff{}",
    ],
)
def test_the_previous_manifest_is_read_as_the_standard_library_reads_it(
    tmp_path: Path, text: str
) -> None:
    """The writer reads the live manifest with pydantic-core's JSON reader (faster at
    48,000 files): the same manifest, or none, as `read_manifest` finds."""
    (tmp_path / "manifest.json").write_text(text, encoding="utf-8")
    assert writer._read_previous(tmp_path) == writer.read_manifest(tmp_path)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_the_first_edit_links_every_file_and_leaves_no_descriptor_open(
    site_copy: Path, tmp_path: Path
) -> None:
    """After a cold build the spare is empty: the next build links every unchanged file
    into it by name between folder descriptors (`_Linker`), closed when the stage ends."""
    out = tmp_path / "dist"
    first = pipeline.plan(site_copy)
    writer.write_output(first.artifacts, out, first.site.base_url)
    open_before = len(list(Path("/proc/self/fd").iterdir()))
    writer.write_output(first.artifacts, out, first.site.base_url)
    assert len(list(Path("/proc/self/fd").iterdir())) == open_before
    spare = writer.spare_folder(out)
    for artifact in first.artifacts:  # the output it replaced: the same inodes
        assert (out / artifact.key).stat().st_ino == (spare / artifact.key).stat().st_ino
    spare_files = tree_digest(spare)
    assert spare_files.pop(".manifest-stamp") and spare_files == tree_digest(out)
