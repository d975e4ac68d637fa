"""`pulumi preview` on a pull request: what the reviewer sees, and what it costs.

- The SiteContent `files` input is one string holding a JSON object. The Pulumi CLI
  decodes a changed string property on both sides as JSON (the whole string, a JSON
  object or array only) and prints the decoded objects' diff key by key
  (pulumi/pulumi pkg/backend/display/object_diff.go: printPropertyValueDiff ->
  printTextDiff -> printEncodedValueDiff -> decodeValue; docs/decisions.md, "Preview at
  any size"). These tests check what that rule needs from our input, on real edits.
- The program's build reuses the build cache when the sources did not change: a second
  run, in a fresh interpreter as each `pulumi preview` is, parses no entry again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from agent_contract import manifest as build_manifest
from content_builder.build import build
from content_builder.cache import CACHE_ENV
from content_builder.loader import RACY_NS
from infra.config import SiteConfig
from infra.site_content import decode_input
from tests.conftest import REPO
from tests.conftest import SPEC_SITE as SITE_DATA
from tests.pulumi_harness import DISTRIBUTION_DOMAIN, run_program, site_content

REGION = "eu-west-1"


def _config(site: Path, dist: Path) -> SiteConfig:
    return SiteConfig(region=REGION, site_dir=site, dist_dir=dist, tags={"t": "1"})


def _files_input(site: Path, dist: Path) -> str:
    files = site_content(run_program(_config(site, dist), preview=True)).inputs["files"]
    assert isinstance(files, str)
    return files


def _cli_decode(text: str) -> dict[str, str]:
    """What decodeValue accepts: the whole (trimmed) string is one JSON value, and that
    value is an object (or an array); anything else is shown as plain text."""
    decoder = json.JSONDecoder()
    stripped = text.strip()
    value, end = decoder.raw_decode(stripped)
    assert end == len(stripped), "the whole string is one JSON value"
    assert isinstance(value, dict), "an object, so the CLI shows an object diff"
    return value


def test_a_preview_of_one_edit_names_exactly_the_changed_files(tmp_path: Path) -> None:
    site = tmp_path / "site_data"
    shutil.copytree(SITE_DATA, site)
    before = _files_input(site, tmp_path / "dist")

    faq = site / "faq" / "q03-protection.yaml"
    data = yaml.safe_load(faq.read_text())
    data["answer"] = data["answer"].rstrip() + "\n\nEvery change is in the stack history."
    faq.write_text(yaml.safe_dump(data, sort_keys=False))
    build(site, tmp_path / "lock-refresh", f"https://{DISTRIBUTION_DOMAIN}")  # the lock
    after = _files_input(site, tmp_path / "dist")

    old, new = _cli_decode(before), _cli_decode(after)
    changed = {path for path in new if old.get(path) != new[path]}
    # The keys that differ are the files the publisher uploads, and only those.
    olds, news = decode_input(before), decode_input(after)
    uploads = {
        path
        for path in news
        if build_manifest.entry_signature(news[path])
        != build_manifest.entry_signature(olds.get(path, {}))
    }
    assert changed == uploads
    assert "/api/v1/faq/q03-protection.json" in changed
    assert "/api/v1/faq/q01-difference.json" not in changed
    assert len(changed) < len(new) / 2, "a one-entry edit is a short list, not the site"
    # Each changed key's value is one line: the new hash, size, type and headers.
    path = "/api/v1/faq/q03-protection.json"
    assert new[path].split(" ", 1)[0] == news[path]["sha256"] != olds[path]["sha256"]


#: One program run in a fresh interpreter, as `pulumi preview` gives the program: prints
#: how many content and FAQ entries the build parsed, and the file count it exported.
_RUN = """
import json, sys
from pathlib import Path
import content_builder.loader as loader
from infra.config import SiteConfig
from tests.pulumi_harness import run_program

parsed = []
real = loader.read_yaml_mapping

def counting(path, display, data=None):
    if path.parent.name in ("content", "faq"):
        parsed.append(path.name)
    return real(path, display, data)

loader.read_yaml_mapping = counting
config = SiteConfig(region="eu-west-1", site_dir=Path(sys.argv[1]), dist_dir=Path(sys.argv[2]),
                    tags={"t": "1"})
run = run_program(config, preview=True)
print(json.dumps({"parsed": len(parsed), "file_count": run.outputs["file_count"]}))
"""


def test_a_second_program_run_reuses_the_build_cache(tmp_path: Path) -> None:
    site = tmp_path / "site_data"
    shutil.copytree(SITE_DATA, site)
    # Past the cache's racy window (files changed less than RACY_NS before a build are
    # read again by the next, which then saves what it learned): the second run must
    # find nothing to add whether it starts one second or ten after the copy.
    time.sleep(RACY_NS / 1e9 + 0.1)
    cache = tmp_path / "cache"
    env = {**os.environ, CACHE_ENV: str(cache)}

    def program_run() -> dict[str, int]:
        completed = subprocess.run(
            [sys.executable, "-c", _RUN, str(site), str(tmp_path / "dist")],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-3000:]
        return json.loads(completed.stdout.strip().splitlines()[-1])

    first = program_run()
    assert first["parsed"] > 0 and first["file_count"] > 0  # the counter sees parsing
    (cache_file,) = cache.glob("build-*.pickle")  # beside it, its `.latest` values

    def cache_files() -> dict[str, tuple[bytes, int]]:
        return {path.name: (path.read_bytes(), path.stat().st_ino) for path in cache.iterdir()}

    stored = cache_files()
    second = program_run()
    assert second == {"parsed": 0, "file_count": first["file_count"]}
    # Same settings, same cache file, nothing added or rewritten: every entry was a hit
    # (a build into a fresh folder or with another base URL would have keyed a second
    # file), and the search keywords' choice was the same.
    assert list(cache.glob("build-*.pickle")) == [cache_file]
    assert cache_files() == stored


def test_the_input_is_exactly_what_json_dumps_writes() -> None:
    """encode_input writes the JSON by hand (json's own C escaper, one file per line);
    it must be what json.dumps writes, for any path and header text."""
    from infra.site_content import encode_input, encode_input_and_summary, input_summary

    entry = build_manifest.entry("ab" * 32, 7, 'application/x; profile="a\\b"', "no-cache")
    awkward = {
        "/a.json": entry,
        '/q"uote\\/back\tslash.json': entry,
        "/caf\u00e9/\u6587\u4ef6.md": {**entry, "cache_control": "public,\nmax-age=1\u2028"},
    }
    for files in ({}, {"/x": entry}, awkward):
        encoded = build_manifest.encode_files(files)
        text = encode_input(files)
        assert text == json.dumps(encoded, separators=(",\n", ": "))
        assert json.loads(text) == encoded and decode_input(text) == dict(files)
        assert len(text.splitlines()) == max(len(files), 1)
        summary = encode_input_and_summary(files)
        assert summary == (text, len(files), build_manifest.files_digest(encoded))
        assert input_summary(text) == summary[1:] == input_summary(encoded)


def test_the_exported_count_and_digest_are_those_of_the_registered_files(
    tmp_path: Path,
) -> None:
    from infra.site_content import input_summary

    site = tmp_path / "site_data"
    shutil.copytree(SITE_DATA, site)
    run = run_program(_config(site, tmp_path / "dist"), preview=True)
    registered = site_content(run).inputs["files"]
    manifest = json.loads((tmp_path / "dist" / "manifest.json").read_text())
    expected = build_manifest.files_digest(build_manifest.encode_files(manifest["files"]))
    assert input_summary(registered) == (len(manifest["files"]), expected)
    assert (run.outputs["file_count"], run.outputs["files_digest"]) == input_summary(registered)


# --- the input written from the digest's text (issue 11, target 7, round 4) -------------

_ENTRY = build_manifest.entry("ab" * 32, 7, "application/json", "public, max-age=60")
_LINKSET = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'


def _reference(files: build_manifest.Files) -> tuple[str, int, str]:
    """The input, count and digest as first defined, the slow way: json.dumps of the
    per-file lines in path order, and one sha256 fed file by file."""
    encoded = {path: build_manifest.encode_entry(entry) for path, entry in sorted(files.items())}
    digest = hashlib.sha256()
    for path, line in encoded.items():
        digest.update(f"{path}\t{line}\n".encode())
    return json.dumps(encoded, separators=(",\n", ": ")), len(encoded), digest.hexdigest()


def _with(path: str = "/a.json", **changes: object) -> dict[str, dict[str, object]]:
    return {"/0.json": dict(_ENTRY), path: {**_ENTRY, **changes}, "/z.md": dict(_ENTRY)}


# (files, whether the whole-text path writes them): every byte json.dumps escapes other
# than `"`, and every tab or newline inside a path or a line, must send the files to the
# per-file writer; each case fails if its guard is dropped.
_CASES = {
    "empty": ({}, True),
    "plain": (_with(), True),
    "quoted media type (api-catalog)": (_with(media_type=_LINKSET), True),
    "quote in a path": (_with('/q"uote.json'), True),
    "out of path order": (dict(reversed(list(_with(media_type=_LINKSET).items()))), True),
    "backslash in a path": (_with("/back\\slash.json"), False),
    "backslash in a header": (_with(media_type='application/x; p="a\\b"'), False),
    "tab in a path": (_with("/a\tb.json"), False),
    "tab in a header": (_with(cache_control="public,\tmax-age=1"), False),
    "newline in a path": (_with("/a\nb.json"), False),
    "newline in a header": (_with(cache_control="public,\nmax-age=1"), False),
    "carriage return": (_with(cache_control="public\r"), False),
    "other control byte": (_with("/a\x01.json"), False),
    "DEL (json escapes it)": (_with("/a\x7f.json"), False),
    "non-ASCII path": (_with("/caf\u00e9/\u6587\u4ef6.md"), False),
    "U+2028 in a header": (_with(cache_control="max-age=1\u2028"), False),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_the_input_written_from_the_listing_is_byte_for_byte_json_dumps(name: str) -> None:
    from infra.site_content import _json_from_listing, encode_input_and_summary, input_summary

    files, whole_text = _CASES[name]
    expected = _reference(files)
    assert encode_input_and_summary(files) == expected
    listing = build_manifest.entries_listing(files)
    assert listing == build_manifest.files_listing(build_manifest.encode_files(files))
    assert (_json_from_listing(listing, len(files)) is not None) is whole_text
    assert decode_input(expected[0]) == {path: dict(entry) for path, entry in files.items()}
    assert input_summary(expected[0]) == expected[1:]


def test_the_digest_keeps_its_value() -> None:
    """files_digest is a stack output: the same files give the same value as every
    earlier version (this literal was computed by the per-file sha256 of 9af2d49)."""
    from infra.site_content import encode_input_and_summary

    markdown = {**_ENTRY, "size": 12, "media_type": "text/markdown; charset=utf-8"}
    files = {"/b.json": _ENTRY, "/a.md": markdown, "/caf\u00e9.json": _ENTRY}
    expected = "2d234d32c904795fcab4d045f57e4607a7afc41263bb72d34dc618050ceff4bb"
    assert build_manifest.files_digest(build_manifest.encode_files(files)) == expected
    assert encode_input_and_summary(files)[2] == expected
    assert encode_input_and_summary(dict(reversed(list(files.items()))))[2] == expected


def _assert_written_from_the_listing(files: dict[str, build_manifest.ManifestEntry]) -> None:
    from infra.site_content import _json_from_listing, encode_input

    text = _json_from_listing(build_manifest.entries_listing(files), len(files))
    assert text is not None, "a real site's manifest takes the whole-text path"
    assert text == encode_input(files) == _reference(files)[0]


def test_real_manifests_are_written_from_the_listing(built: Path, tmp_path: Path) -> None:
    """The fast path is the one real sites take (else the preview is slow again, not
    wrong): the spec site and a generated one, with every route's headers."""
    _assert_written_from_the_listing(json.loads((built / "manifest.json").read_text())["files"])
    subprocess.run([sys.executable, "-m", "benchmarks.sitegen", str(tmp_path / "s"), "--n", "3"],
                   cwd=REPO, check=True, capture_output=True)  # fmt: skip
    build(tmp_path / "s", tmp_path / "out", "https://example.test")
    files = json.loads((tmp_path / "out" / "manifest.json").read_text())["files"]
    assert any('"' in entry["media_type"] for entry in files.values())  # the api-catalog
    _assert_written_from_the_listing(files)
