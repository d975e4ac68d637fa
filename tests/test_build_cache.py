"""The build cache (content_builder.cache) makes a build faster, never different.

After each kind of edit a build that starts from the previous build's cache writes the
same bytes as a build with the cache off; a corrupt or foreign cache is ignored; an
unchanged entry is not parsed again; the cache lives outside the repository.
"""

from __future__ import annotations

import os
import pickle
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from content_builder import cache as build_cache
from content_builder import yaml_io
from tests.conftest import REPO, run_cli, tree_digest


def _build(site: Path, out: Path, *extra: str) -> dict[str, str]:
    result = run_cli("build", "--site", site, "--out", out, *extra)
    assert result.code == 0, result.err
    return tree_digest(out)


def _cold(site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str):
    """The same build with the cache off, from a copy of the site in the same state."""
    twin = tmp_path / "cold" / "site_data"
    shutil.rmtree(twin.parent, ignore_errors=True)
    shutil.copytree(site, twin)
    with monkeypatch.context() as patch:
        patch.setenv(build_cache.CACHE_ENV, "off")
        return _build(twin, tmp_path / "cold" / "out", *extra)


def _edit(site: Path) -> None:
    path = site / "faq" / "q01-difference.yaml"
    path.write_text(path.read_text().replace("sitemap", "site map"))


def _add(site: Path) -> None:
    text = (site / "faq" / "q02-endpoints.yaml").read_text()
    (site / "faq" / "q99-added.yaml").write_text(text.replace("q02-endpoints", "q99-added"))


def _remove(site: Path) -> None:  # every fixture FAQ is linked: remove one added before
    (site / "faq" / "q99-added.yaml").unlink()


def _site_yaml(site: Path) -> None:
    path = site / "site.yaml"
    path.write_text(path.read_text().replace("www.parlance.example", "www.parlance.test"))


def _lock(site: Path) -> None:
    path = site / "content.lock.json"
    text = path.read_text()
    assert '"content_version": "1.0.0"' in text
    path.write_text(text.replace('"content_version": "1.0.0"', '"content_version": "1.0.7"', 1))


EDITS: dict[str, Callable[[Path], None]] = {
    "edit": _edit,
    "add": _add,
    "remove": _remove,
    "site.yaml": _site_yaml,
    "lock": _lock,
}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(folder))
    return folder


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_a_cached_build_after_an_edit_is_byte_identical_to_a_cold_one(
    kind: str, site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    if kind == "remove":
        _add(site_copy)
    _build(site_copy, out)
    assert list(cache_dir.glob("build-*.pickle")), "the first build filled the cache"
    EDITS[kind](site_copy)
    warm = _build(site_copy, out)
    cold = _cold(site_copy, tmp_path, monkeypatch)
    assert warm == cold
    if kind == "lock":
        assert "1.0.7" in (tmp_path / "out" / "llms-full.txt").read_text()


def test_a_changed_base_url_is_byte_identical_to_a_cold_build(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site_copy, tmp_path / "out")
    other = ("--base-url", "https://agents.other.example")
    warm = _build(site_copy, tmp_path / "out", *other)
    assert warm == _cold(site_copy, tmp_path, monkeypatch, *other)


def test_an_unchanged_entry_is_not_parsed_again(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site_copy, tmp_path / "out")
    _edit(site_copy)
    parsed: list[str] = []
    real = yaml_io.read_yaml_mapping

    def counting(path: Path, display: str, data: bytes | None = None):  # type: ignore[no-untyped-def]
        parsed.append(str(path.relative_to(site_copy)))
        return real(path, display, data)

    monkeypatch.setattr("content_builder.loader.read_yaml_mapping", counting)
    _build(site_copy, tmp_path / "out")
    assert [name for name in parsed if name.startswith(("content/", "faq/"))] == [
        "faq/q01-difference.yaml"
    ]


def test_a_rebuild_takes_the_openapi_schemas_from_the_cache(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The component schemas depend on the code alone (which keys the cache): a rebuild
    does not walk the models again, and publishes the same OpenAPI bytes. (Without the
    schemas shipped for the contract: a model edited since, test_openapi_schemas.py.)"""
    monkeypatch.setattr(
        "content_builder.render.openapi_schemas.shipped_component_schemas", lambda: None
    )
    first = _build(site_copy, tmp_path / "out")
    _edit(site_copy)

    def refused() -> None:
        raise AssertionError("the schemas were generated again")

    monkeypatch.setattr("content_builder.render.openapi_schemas.component_schemas", refused)
    warm = _build(site_copy, tmp_path / "out")
    assert warm["api/v1/openapi.json"] == first["api/v1/openapi.json"]
    assert warm == _cold_with(site_copy, tmp_path, monkeypatch)


def _cold_with(site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """`_cold`, with the schema generator back (a cold build must generate them)."""
    monkeypatch.undo()
    return _cold(site, tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage",
        b"agent-access build cache v1\n",  # the magic, then nothing
        b"agent-access build cache v1\nnot our header\n" + pickle.dumps({"k": {}}),
    ],
)
def test_a_corrupt_or_foreign_cache_is_ignored(
    content: bytes,
    site_copy: Path,
    tmp_path: Path,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _build(site_copy, tmp_path / "out")
    [file] = cache_dir.glob("build-*.pickle")
    file.write_bytes(content)
    _edit(site_copy)
    assert _build(site_copy, tmp_path / "out") == _cold(site_copy, tmp_path, monkeypatch)


def test_a_cache_with_the_right_header_but_wrong_records_is_ignored(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site_copy, tmp_path / "out")
    [file] = cache_dir.glob("build-*.pickle")
    head = file.read_bytes().split(b"\n", 2)
    file.write_bytes(head[0] + b"\n" + head[1] + b"\n" + pickle.dumps(["not", "a", "dict"]))
    assert _build(site_copy, tmp_path / "out") == _cold(site_copy, tmp_path, monkeypatch)


def test_the_cache_lives_outside_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(build_cache.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    folder = build_cache.cache_dir()
    assert folder is not None and REPO.resolve() not in folder.resolve().parents
    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    assert build_cache.cache_dir() is None


def test_a_code_change_invalidates_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    before = build_cache.code_fingerprint()
    build_cache.code_fingerprint.cache_clear()
    monkeypatch.setattr(build_cache, "_CODE_PACKAGES", ("content_builder",))
    try:
        assert build_cache.code_fingerprint() != before
    finally:
        build_cache.code_fingerprint.cache_clear()


def test_a_cache_cut_short_while_appending_keeps_its_whole_frames(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site_copy, tmp_path / "out")
    _edit(site_copy)
    _build(site_copy, tmp_path / "out")  # appends the edited entry's records
    [file] = cache_dir.glob("build-*.pickle")
    file.write_bytes(file.read_bytes()[:-7])
    _add(site_copy)
    assert _build(site_copy, tmp_path / "out") == _cold(site_copy, tmp_path, monkeypatch)
    _remove(site_copy)
    assert _build(site_copy, tmp_path / "out") == _cold(site_copy, tmp_path, monkeypatch)


def test_a_flipped_byte_inside_a_record_is_never_published(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte changed inside a cached string (same length, still a valid pickle) was
    published as content: every frame is now checked against its digest first."""
    _build(site_copy, tmp_path / "out")
    [file] = cache_dir.glob("build-*.pickle")
    data = file.read_bytes()
    text = (site_copy / "faq" / "q03-protection.yaml").read_text(encoding="utf-8")
    word = next(w for w in text.split() if len(w) >= 9 and w.isalpha() and w.encode() in data)
    damaged = word[:-1] + ("z" if word[-1] != "z" else "y")
    file.write_bytes(data.replace(word.encode(), damaged.encode()))
    out = _build(site_copy, tmp_path / "out")
    assert out == _cold(site_copy, tmp_path, monkeypatch)
    assert damaged not in (tmp_path / "out" / "llms-full.txt").read_text(encoding="utf-8")


def test_lock_body_is_what_json_dumps_writes_ascii_or_not() -> None:
    """lock_body takes pydantic-core's bytes only when they are ASCII; json.dumps escapes
    non-ASCII text, so an id with an accent must still come out escaped, as before."""
    import json

    from content_builder.lock import History, LockEntry, lock_body

    for entry_id in ("plain-id", "café-ünïcode", "del\x7fchar"):
        lock = {
            entry_id: LockEntry(
                source_hash="sha256:" + "0" * 64,
                content_version="2",
                updated_at="2025-01-01T00:00:00Z",
            )
        }
        history = History(generation=3, removed=((2, ("gone",)),))
        body = lock_body(lock, history)
        data = {
            "format": json.loads(body)["format"],
            "generation": 3,
            "removed": {"2": ["gone"]},
            "entries": {
                entry_id: {
                    "source_hash": "sha256:" + "0" * 64,
                    "content_version": "2",
                    "updated_at": "2025-01-01T00:00:00Z",
                }
            },
        }
        assert body == (json.dumps(data, indent=2) + "\n").encode("utf-8")
        assert body.isascii()


def _reads_of_entries(site: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The content and FAQ files the loader opens for reading during the next call."""
    opened: list[str] = []
    real_open = open

    def counting(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        name = str(file)
        if name.startswith(str(site)) and name.endswith(".yaml"):
            opened.append(str(Path(name).relative_to(site)))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting)
    from content_builder import loader

    real_read = loader.read_site_file

    def counting_read(path, display):  # type: ignore[no-untyped-def]
        counting(path, "rb").close()  # counted as an open, as it is one
        return real_read(path, display)

    monkeypatch.setattr(loader, "read_site_file", counting_read)
    return opened


def test_a_file_unchanged_since_it_was_read_is_not_read_again(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("content_builder.loader.RACY_NS", 0)  # files older than the build
    _build(site_copy, tmp_path / "out")
    _edit(site_copy)
    with monkeypatch.context() as patch:
        opened = _reads_of_entries(site_copy, patch)
        _build(site_copy, tmp_path / "out")
    assert [name for name in opened if name.startswith(("content/", "faq/"))] == [
        "faq/q01-difference.yaml"
    ]


def test_an_edit_that_keeps_the_size_and_the_mtime_is_still_seen(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctime moves on every change and cannot be set back: `touch -d`, `cp -p` or a
    checkout that restores an old mtime and size does not hide an edit."""
    monkeypatch.setattr("content_builder.loader.RACY_NS", 0)
    _build(site_copy, tmp_path / "out")
    path = site_copy / "faq" / "q01-difference.yaml"
    before = path.stat()
    text = path.read_text()
    assert "sitemap" in text
    path.write_text(text.replace("sitemap", "sitemaq"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    warm = _build(site_copy, tmp_path / "out")
    assert "sitemaq" in (tmp_path / "out" / "api/v1/faq/q01-difference.json").read_text()
    assert warm == _cold(site_copy, tmp_path, monkeypatch)


def test_a_file_changed_just_before_a_build_is_read_again_by_the_next(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within RACY_NS of the build that read it, a file could change again in the same
    clock tick without its stat showing it: its stat is not remembered."""
    _build(site_copy, tmp_path / "out")  # every file of site_copy was just written
    with monkeypatch.context() as patch:
        opened = _reads_of_entries(site_copy, patch)
        _build(site_copy, tmp_path / "out")
    assert "faq/q01-difference.yaml" in opened


def test_the_racy_window_is_measured_from_the_read_not_the_build_s_start(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed RACY_NS before the build read it cannot change again unseen, however
    close to the build's start the change was: a cold build of a fresh checkout, which
    reads its files over seconds, remembers them, and the next build does not read them
    again (measured from the start, half of a 10,000-entry site was read again)."""
    window = 0.3
    monkeypatch.setattr("content_builder.loader.RACY_NS", int(window * 1e9))
    from content_builder import loader

    real_read = loader.read_site_file
    first: list[str] = []

    def slow_first_read(path, display):  # type: ignore[no-untyped-def]
        if not first:  # the build's start is within the window, the reads after this past it
            first.append(str(Path(path).relative_to(site_copy)))
            time.sleep(window + 0.1)
        return real_read(path, display)

    for entry in (site_copy / "content").iterdir():  # every entry changed just now
        os.utime(entry)
    for entry in (site_copy / "faq").iterdir():
        os.utime(entry)
    with monkeypatch.context() as patch:
        patch.setattr(loader, "read_site_file", slow_first_read)
        _build(site_copy, tmp_path / "out")
    with monkeypatch.context() as patch:
        opened = _reads_of_entries(site_copy, patch)
        _build(site_copy, tmp_path / "out")
    # Only the file read before the pause, within the window of its own read.
    assert [name for name in opened if name.startswith(("content/", "faq/"))] == first


def test_a_site_keeps_at_most_two_cache_files(
    site_copy: Path, tmp_path: Path, cache_dir: Path
) -> None:
    """Every site.yaml edit or new --base-url starts a cache file (~380 MB at 10k entries):
    the older ones of the same site folder are removed."""
    _build(site_copy, tmp_path / "out")
    [first] = cache_dir.glob("build-*.pickle")
    mine = first.name.split("-")[1]
    other_site = tmp_path / "other" / "site_data"
    shutil.copytree(site_copy, other_site)
    _build(other_site, tmp_path / "other" / "out")
    (cache_dir / "build-0123456789abcdef01234567.pickle").write_bytes(b"old name")
    orphan = cache_dir / f"build-{mine}-0123456789ab.pickle.latest"
    orphan.write_bytes(b"a note whose records were deleted by hand")
    for number in range(4):
        path = site_copy / "site.yaml"
        path.write_text(path.read_text() + f"\n# edit {number}\n")
        _build(site_copy, tmp_path / "out", "--base-url", f"https://agents{number}.example.test")
    files = sorted(cache_dir.glob("build-*.pickle"))
    by_site: dict[str, int] = {}
    for file in files:
        by_site[file.name.split("-")[1]] = by_site.get(file.name.split("-")[1], 0) + 1
    assert sorted(by_site.values()) == [1, 2], files  # the other site's file is kept
    beside = {path.stem for path in cache_dir.iterdir() if path.suffix == ".latest"}
    assert beside and beside <= {file.name for file in files}, "values go with their file"
    assert not orphan.exists()
    assert not (cache_dir / "build-0123456789abcdef01234567.pickle").exists()


def test_latest_values_of_two_builds_saving_one_after_the_other_are_both_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The side file of `put_latest` values is read again before a save only when another
    build replaced it since this one read it: a build's values never erase another's, and
    an edit does not read the (at 10,000 entries 14 MB) file twice."""
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    site = tmp_path / "site"
    site.mkdir()
    reads: list[Path] = []
    read = build_cache._read_latest

    def counted(side: Path, header: bytes) -> dict[str, object]:
        reads.append(side)
        return read(side, header)

    monkeypatch.setattr(build_cache, "_read_latest", counted)
    first = build_cache.EntryCache.open(site, b"settings")
    first.put("a", "body", b"x")
    first.put_latest("one", 1)
    first.save()
    assert len(reads) == 1, "never read before: read under the lock before the save"
    alone = build_cache.EntryCache.open(site, b"settings")
    assert alone.get_latest("one") == 1 and len(reads) == 2
    alone.put_latest("one", 2)
    alone.save()
    assert len(reads) == 2, "the file it read is the file there: not read again"
    # Two builds at once: the second saves between the first's read and its save.
    slow = build_cache.EntryCache.open(site, b"settings")
    assert slow.get_latest("one") == 2
    quick = build_cache.EntryCache.open(site, b"settings")
    quick.put_latest("two", "quick's")
    quick.save()
    slow.put_latest("three", "slow's")
    slow.save()
    values = build_cache.EntryCache.open(site, b"settings")
    assert (values.get_latest("one"), values.get_latest("two"), values.get_latest("three")) == (
        2,
        "quick's",
        "slow's",
    )
