"""The writer swaps a complete output in, or leaves the previous one exactly as it was."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from content_builder import writer
from tests.conftest import TEST_BASE_URL, run_cli, tree_digest


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
    real_write = writer.write_new_file

    def failing_write(path: str, data: bytes) -> None:
        if len(written) == 5:
            raise OSError(28, "No space left on device")
        written.append(path)
        real_write(path, data)

    monkeypatch.setattr(writer, "write_new_file", failing_write)
    with pytest.raises(OSError, match="No space left"):
        run_cli("build", "--site", site_copy, "--out", out, "--base-url", TEST_BASE_URL)
    monkeypatch.undo()

    assert len(written) == 5, "the failure happened mid-build"
    assert tree_digest(out) == before
    assert (site_copy / "content.lock.json").read_bytes() == lock_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "site_data"], "no staging left"


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
    # The manifest one second later than any file (a coarse clock may give files and
    # manifest the same tick, and equal times are read, not trusted).
    manifest = out / writer.MANIFEST_NAME
    later = manifest.stat().st_mtime_ns + 10**9
    os.utime(manifest, ns=(later, later))
    before = tree_digest(out)
    read: list[Path] = []
    real_read_bytes = Path.read_bytes

    def counting(self: Path) -> bytes:
        if out in self.parents:
            read.append(self)
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    monkeypatch.undo()
    assert read == [], "files the manifest vouches for were read"
    assert tree_digest(out) == before


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
