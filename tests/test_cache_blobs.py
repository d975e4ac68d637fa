"""An entry's own files are kept by the build cache as blobs (content_builder.cache.Blob):
raw bytes after their frame's pickle, checked with the frame, read only when asked for.

A cached build reads none it does not write; a damaged or cut blob region is never
published (its frame is dropped, as a damaged pickle's is); blobs survive the file's
rewrite and are read from the new file; a blob pickled anywhere else is its bytes.
"""

from __future__ import annotations

import hashlib
import pickle
import shutil
from pathlib import Path

import pytest

from content_builder import cache as build_cache
from tests.conftest import run_cli, tree_digest


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(folder))
    return folder


def _build(site: Path, out: Path) -> dict[str, str]:
    result = run_cli("build", "--site", site, "--out", out)
    assert result.code == 0, result.err
    return tree_digest(out)


def _cold(site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    twin = tmp_path / "cold" / "site_data"
    shutil.rmtree(twin.parent, ignore_errors=True)
    shutil.copytree(site, twin)
    with monkeypatch.context() as patch:
        patch.setenv(build_cache.CACHE_ENV, "off")
        return _build(twin, tmp_path / "cold" / "out")


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the blobs read from a cache file from now on, but the sharded search
    index's shards (render/shards.py reads back the last build's shards of the words an
    edit changed, to post them again)."""
    seen: list[int] = []
    read = build_cache._Store.read

    def spied(store: build_cache._Store, offset: int, size: int) -> bytes:
        data = read(store, offset, size)
        if not data.startswith(b'{"terms":{'):
            seen.append(size)
        return data

    monkeypatch.setattr(build_cache._Store, "read", spied)
    return seen


def _open(site: Path) -> build_cache.EntryCache:
    return build_cache.EntryCache.open(site, b"settings")


def test_blobs_come_back_from_the_file_and_survive_its_rewrite(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    cache = _open(site)
    cache.put("a", "body", build_cache.Blob(b"first body"))
    cache.put("b", "body", (build_cache.Blob(b"second"), b"inline"))
    cache.save()
    seen = _reads(monkeypatch)
    again = _open(site)
    assert seen == [], "opening the cache reads no blob"
    first = again.get("a", "body")
    assert build_cache.is_blob_ref(first), "read back as a plain reference, not bytes"
    assert seen == []
    assert again.blob(first) == b"first body" and seen == [10]
    assert again.blob(again.get("b", "body")[0]) == b"second"
    assert again.get("b", "body")[1] == b"inline"
    # Rewritten (the file was not appendable): a blob never moves (a request thread of
    # `serve --watch` may be reading it), it reads on from the replaced file, which its
    # descriptor keeps; the next build of a series reads the new file, not these records.
    again.appendable = False
    again.save()
    [file] = cache_dir.glob("build-*.pickle")
    assert again.signature == (-1, -1), "the next build reads the rewritten file"
    file.unlink()
    assert again.blob(first) == b"first body", "read from the file it was read from"
    assert again.blob(again.get("b", "body")[0]) == b"second"
    assert _open(site).get("a", "body") is None  # the file is gone: nothing cached


def test_a_rewritten_cache_is_read_back_whole(tmp_path: Path, cache_dir: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    cache = _open(site)
    cache.put("a", "body", build_cache.Blob(b"first body"))
    cache.save()
    again = _open(site)
    assert again.get("a", "body") is not None
    again.appendable = False  # rewritten with the records it used
    again.save()
    series = build_cache.EntryCache.open(site, b"settings", last=again)
    assert series.records is not again.records, "read from the new file, not the last's"
    assert series.blob(series.get("a", "body")) == b"first body"


def test_blobs_copied_into_a_rewritten_file_are_read_back_from_it(
    tmp_path: Path, cache_dir: Path
) -> None:
    """A rewrite copies each blob the kept records name (a field, or an item of a field's
    tuple) into the new file: their old frame numbers and offsets name the old file's."""
    site = tmp_path / "site"
    site.mkdir()
    first = _open(site)
    first.put("gone", "body", build_cache.Blob(b"x" * 1000))  # frame 0: shifts the rest
    first.save()
    second = _open(site)
    second.put("a", "body", build_cache.Blob(b"alpha"))
    second.put("b", "pieces", ("id", build_cache.Blob(b"beta"), ("t",), 3))
    second.save()  # appended: frame 1
    third = _open(site)
    assert third.get("a", "body")[1] == 1, "named by its frame"
    third.get("b", "pieces")
    third.appendable = False  # rewritten with the records it used: not "gone"
    third.save()
    fresh = _open(site)
    assert fresh.get("gone", "body") is None
    assert fresh.blob(fresh.get("a", "body")) == b"alpha"
    pieces = fresh.get("b", "pieces")
    assert fresh.blob(pieces[1]) == b"beta" and pieces[2:] == (("t",), 3)


def test_records_read_back_hold_no_object_for_the_garbage_collector(
    tmp_path: Path, cache_dir: Path
) -> None:
    """What a cached build reads is plain tuples, strings, bytes and ints, the records
    themselves too: the young collections that run while they are read untrack them, so
    none reaches the old generation, which only a full collection walks and untracks (issue
    22: the records' objects cost a 10,000-entry edit ~1 s of collections; a record as a
    dict, five full collections while the cache was read, session 25)."""
    import gc

    site = tmp_path / "site"
    site.mkdir()
    cache = _open(site)
    for number in range(3000):  # enough objects for young collections during the read
        cache.put(f"k{number}", "rendered", (f"id{number}", build_cache.Blob(b"b"), ("a", "b")))
        cache.put(f"k{number}", "stamp", ("2026-01-01", "1.0.0"))
    cache.save()
    again = _open(site)
    gc.collect(1)  # young collections only, as the build's own allocations start them
    # The last few read may have met a young collection before their innermost tuples
    # did (one level untracked per collection once the unpickler lets go of them); a
    # record as a dict stays tracked whatever the young collections.
    tracked = sum(map(gc.is_tracked, again.records.values()))
    assert tracked < len(again.records) / 10, tracked
    assert again.get("k7", "stamp") == ("2026-01-01", "1.0.0")


def test_a_cached_build_s_files_are_objects_without_an_instance_dict(
    site_copy: Path, tmp_path: Path, cache_dir: Path
) -> None:
    """A build holds an Artifact per published file (48,000 at 10,000 entries): with an
    instance dict each, 48,000 more objects for every full collection to walk, and one
    full collection more per edit (0.13 s at 10,000 entries, session 26). The files of
    cached entries are read only when asked (their sha256 and size known without)."""
    from content_builder.build import plan

    _build(site_copy, tmp_path / "out")
    result = plan(site_copy)
    kinds = {type(artifact).__name__ for artifact in result.artifacts}
    assert "_KeptArtifact" in kinds, kinds  # some came from the cache
    for artifact in result.artifacts:
        assert not hasattr(artifact, "__dict__"), type(artifact)
        assert artifact.size == len(artifact.body)
        assert artifact.sha256 == hashlib.sha256(artifact.body).hexdigest()


def test_a_cached_build_s_files_copy_and_pickle_as_their_bodies(
    site_copy: Path, tmp_path: Path, cache_dir: Path
) -> None:
    """A file kept in the build cache copies and pickles as the file it is (as it did
    with an instance dict): the slotted dataclass' own state would set its `body`, a
    property there, and lose where the body is kept."""
    import copy

    from content_builder.build import plan

    _build(site_copy, tmp_path / "out")
    kept = [a for a in plan(site_copy).artifacts if type(a).__name__ == "_KeptArtifact"]
    assert kept
    for artifact in kept[:5]:
        for twin in (copy.copy(artifact), pickle.loads(pickle.dumps(artifact))):
            assert twin == artifact and artifact == twin
            assert hash(twin) == hash(artifact)
            assert (twin.path, twin.body, twin.sha256) == (
                artifact.path,
                artifact.body,
                artifact.sha256,
            )


def test_a_record_in_several_frames_has_each_field_s_last_value(
    tmp_path: Path, cache_dir: Path
) -> None:
    """A record read back is a flat tuple of fields and values: a field written again in
    a later frame (appended by a later build) wins, the others are kept, and a value that
    equals a field's name is never taken for that field."""
    site = tmp_path / "site"
    site.mkdir()
    first = _open(site)
    first.put("k", "loaded", "stamp")  # a value spelled like another field's name
    first.put("k", "stamp", "one")
    first.put("other", "loaded", "x")
    first.save()
    second = _open(site)
    assert second.get("k", "stamp") == "one" and second.get("k", "loaded") == "stamp"
    second.put("k", "stamp", "two")  # appended as a frame of its own
    second.put("k", "extra", ("t", 1))
    second.get("other", "loaded")
    second.save()
    third = _open(site)
    assert third.appendable, "appended, not rewritten: two frames read back"
    assert third.get("k", "stamp") == "two"
    assert third.get("k", "loaded") == "stamp"
    assert third.get("k", "extra") == ("t", 1)
    assert third.get("k", "missing") is None and third.get("other", "loaded") == "x"
    assert third.get("nothing", "loaded") is None


def test_a_blob_pickled_outside_a_cache_frame_is_its_bytes() -> None:
    blob = build_cache.Blob(b"handed over")
    copy = pickle.loads(pickle.dumps(blob))
    assert type(copy) is build_cache.Blob and copy.data == b"handed over"


@pytest.mark.parametrize("damage", ["flipped", "cut"])
def test_a_damaged_blob_region_drops_its_frame(
    damage: str, tmp_path: Path, cache_dir: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    cache = _open(site)
    cache.put("a", "body", build_cache.Blob(b"kept whole"))
    cache.save()
    cache.put("b", "body", build_cache.Blob(b"the second frame's body"))
    cache.save()  # appended: a frame of its own
    [file] = cache_dir.glob("build-*.pickle")
    data = file.read_bytes()
    at = data.index(b"second frame")
    if damage == "flipped":  # still a valid pickle: only the region's CRC sees it
        file.write_bytes(data[:at] + b"S" + data[at + 1 :])
    else:
        file.write_bytes(data[: at + 3])
    again = _open(site)
    assert again.get("b", "body") is None, "the damaged frame is dropped"
    assert again.blob(again.get("a", "body")) == b"kept whole"
    assert not again.appendable, "the next save rewrites the file"


def test_a_flipped_byte_inside_an_entry_file_is_never_published(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry's own files are not in the pickle the frame's CRC covered before: a byte
    changed in one would be published if its region were not checked too."""
    out = tmp_path / "out"
    _build(site_copy, out)
    [file] = cache_dir.glob("build-*.pickle")
    data = file.read_bytes()
    body = next((out / "api" / "v1" / "faq").glob("*.json")).read_bytes()
    assert data.count(body) == 1
    at = data.index(body) + body.index(b'"question"') + 3
    file.write_bytes(data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :])
    shutil.rmtree(out)  # every file is written: the cached ones from their blobs
    assert _build(site_copy, out) == _cold(site_copy, tmp_path, monkeypatch)


def test_a_cached_build_reads_only_the_blobs_it_writes(
    site_copy: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _build(site_copy, out)
    _build(site_copy, out)
    seen = _reads(monkeypatch)
    _build(site_copy, out)
    assert seen == [], "nothing changed: no entry's file is read from the cache"
    path = site_copy / "faq" / "q01-difference.yaml"
    path.write_text(path.read_text().replace("sitemap", "site map"))
    _build(site_copy, out)  # the edited entry is rendered: its files are not read
    assert seen == []
    _build(site_copy, out)  # the edit is in the output: every file linked, none read
    assert seen == []
    assert tree_digest(out) == _cold(site_copy, tmp_path, monkeypatch)
    # A new output folder: every file is written, those of cached entries from the cache.
    fresh = tmp_path / "fresh"
    _build(site_copy, fresh)
    assert len(seen) > 10
    # The build after it: the output is staged from hard links of
    # the live one, its files trusted by their times and linked, none read.
    seen.clear()
    path.write_text(path.read_text().replace("site map", "sitemap"))
    _build(site_copy, fresh)
    assert seen == []
    assert tree_digest(fresh) == _cold(site_copy, tmp_path, monkeypatch)


def test_a_series_of_builds_reuses_the_last_records_until_the_file_changes(
    tmp_path: Path, cache_dir: Path
) -> None:
    """`serve --watch` passes each build the cache the last one used: its records come
    from memory while the file is the one it wrote, from the file once another wrote it."""
    site = tmp_path / "site"
    site.mkdir()
    first = _open(site)
    first.put("a", "body", b"one")
    first.save()
    second = build_cache.EntryCache.open(site, b"settings", last=first)
    assert second.records is first.records
    other = _open(site)  # another build (another process) appends to the same file
    other.put("b", "body", b"two")
    other.save()
    third = build_cache.EntryCache.open(site, b"settings", last=second)
    assert third.records is not first.records and third.get("b", "body") == b"two"
    elsewhere = build_cache.EntryCache.open(site, b"other settings", last=third)
    assert elsewhere.get("a", "body") is None, "other settings: another file"
