"""Same input, same bytes; an edit moves exactly what it should, and the lock keeps score."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import TEST_BASE_URL, run_cli, tree_digest

EDIT_EPOCH = "1900000000"  # 2030-03-17T17:46:40Z
EDIT_TIME = "2030-03-17T17:46:40Z"


def build(site: Path, out: Path, *extra: str) -> str:
    base = [] if "--base-url" in extra else ["--base-url", TEST_BASE_URL]
    result = run_cli("build", "--site", site, "--out", out, *base, *extra)
    assert result.code == 0, result.err
    return result.out


def read_json(out: Path, path: str) -> Any:
    return json.loads((out / path.lstrip("/")).read_text(encoding="utf-8"))


def documents(out: Path) -> dict[str, dict[str, Any]]:
    return {
        entry["id"]: read_json(out, entry["api_url"].removeprefix(TEST_BASE_URL))
        for entry in read_json(out, "/api/v1/content/index.json")["documents"]
        if "/api/v1/content/" in entry["api_url"]
    }


def edit_yaml(path: Path, **changes: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def test_two_builds_of_the_same_input_are_byte_identical(site_copy: Path, tmp_path: Path) -> None:
    other_site = tmp_path / "other" / "site_data"
    shutil.copytree(site_copy, other_site)
    build(site_copy, tmp_path / "a")
    build(other_site, tmp_path / "b")
    first = tree_digest(tmp_path / "a")
    assert first == tree_digest(tmp_path / "b")
    # 23 spec files, 12 Markdown mirrors, 4 more doors, 2 llms.txt parts (issue 14), the
    # Agent Skill and its index (issue 26) at both RFC versions' locations, manifest,
    # and the sharded search index: its term map, and its shards and entry files
    search = {path for path in first if path.startswith(SEARCH_FILES)}
    assert len(search) >= 3 and "api/v1/search/terms.json" in search
    assert len(first) - len(search) == 23 + 12 + 4 + 2 + 4 + 1


#: The sharded search index's files (issue 25), named by the build.
SEARCH_FILES = ("api/v1/search/shards/", "api/v1/search/entries/", "api/v1/search/terms.json")
PUBLISHED = 45  # the files above less the manifest and the sharded index's


def published_count(site: Path, tmp_path: Path) -> int:
    """Files a build of `site` publishes: PUBLISHED and the sharded index's."""
    build(site, tmp_path / "count")
    digest = tree_digest(tmp_path / "count")
    return PUBLISHED + sum(path.startswith(SEARCH_FILES) for path in digest)


def test_rebuild_reports_nothing_changed(site_copy: Path, tmp_path: Path) -> None:
    total = published_count(site_copy, tmp_path)
    first = build(site_copy, tmp_path / "dist")
    assert f"{total} files, {total} changed" in first
    second = build(site_copy, tmp_path / "dist")
    assert f"{total} files, 0 changed" in second
    assert "/api/v1/faq/q03-protection.json" not in second, "an unchanged file: not listed"
    listed = build(site_copy, tmp_path / "dist", "--verbose")
    assert f"{total} files, 0 changed" in listed
    assert "/api/v1/faq/q03-protection.json" in listed and " new" not in listed


def test_committed_lock_is_fresh_and_production_urls_do_not_touch_it(
    site_copy: Path, tmp_path: Path
) -> None:
    lock_before = (site_copy / "content.lock.json").read_bytes()
    for base_url in ("http://127.0.0.1:8000", "https://agents.parlance.example"):
        result = run_cli(
            "build", "--site", site_copy, "--out", tmp_path / "x", "--base-url", base_url
        )
        assert result.code == 0, result.err
        assert "lock:" not in result.out
    assert (site_copy / "content.lock.json").read_bytes() == lock_before


def test_editing_one_faq_answer_changes_only_that_faq_and_its_aggregates(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "dist"
    build(site_copy, out)
    before = tree_digest(out)
    documents_before = documents(out)
    index_before = {e["id"]: e for e in read_json(out, "/api/v1/content/index.json")["documents"]}

    faq_file = site_copy / "faq" / "q03-protection.yaml"
    answer = yaml.safe_load(faq_file.read_text())["answer"]
    edit_yaml(faq_file, answer=answer + "\n\nBackups are versioned, so any publish can be undone.")

    frozen = run_cli("check", "--site", site_copy, "--frozen")
    assert frozen.code == 1
    assert "q03-protection.yaml" in frozen.err and "content.lock.json" in frozen.err
    assert "content changed" in frozen.err

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EDIT_EPOCH)
    report = build(site_copy, out)
    after = tree_digest(out)
    changed = {path for path in after if before.get(path) != after[path]}
    # The sharded index: the term map and the few shards holding the new words.
    search = {path for path in changed if path.startswith(SEARCH_FILES)}
    assert "api/v1/search/terms.json" in search
    assert 1 < len(search) < 0.5 * sum(path.startswith(SEARCH_FILES) for path in after)
    assert changed - search == {
        "api/v1/faq/q03-protection.json",
        "api/v1/faq/q03-protection.md",  # its Markdown mirror
        "api/v1/changes.json",  # a new generation and hash
        "sitemap.xml",  # its lastmod
        "api/v1/content/index.json",  # its updated_at
        "api/v1/content/search-index.json",  # the new words
        "llms-full.txt",  # the answer in full
        "llms.txt",  # its sizes (issue 26), while llms.txt lists the entries itself
        "llms/faq-1.txt",  # the same line in llms.txt's FAQ part
        "manifest.json",
    }
    assert "lock: q03-protection: content changed" in report
    assert "undone" in read_json(out, "/api/v1/faq/q03-protection.json")["answer"]

    index_after = {e["id"]: e for e in read_json(out, "/api/v1/content/index.json")["documents"]}
    assert index_after["q03-protection"]["updated_at"] == EDIT_TIME
    for entry_id, entry in index_before.items():
        if entry_id != "q03-protection":
            assert index_after[entry_id] == entry
    for doc_id, document in documents(out).items():
        old = documents_before[doc_id]
        assert document["updated_at"] == old["updated_at"]
        assert document["metadata"] == old["metadata"]

    assert run_cli("check", "--site", site_copy, "--frozen").code == 0


def test_editing_a_document_bumps_its_version_hash_and_date(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "dist"
    build(site_copy, out)
    old = read_json(out, "/api/v1/content/compatibility.json")
    others = {k: v for k, v in documents(out).items() if k != "compatibility"}

    doc_file = site_copy / "content" / "compatibility.yaml"
    data = yaml.safe_load(doc_file.read_text())
    edit_yaml(doc_file, title=data["title"] + " (updated)")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EDIT_EPOCH)
    build(site_copy, out)

    new = read_json(out, "/api/v1/content/compatibility.json")
    major, minor, patch = old["metadata"]["content_version"].split(".")
    assert new["metadata"]["content_version"] == f"{major}.{minor}.{int(patch) + 1}"
    assert new["metadata"]["content_hash"] != old["metadata"]["content_hash"]
    assert new["updated_at"] == EDIT_TIME
    assert {k: v for k, v in documents(out).items() if k != "compatibility"} == others


def test_description_edit_is_not_a_document_change(site_copy: Path, tmp_path: Path) -> None:
    """The description is shown by the index, not by the document: no new version."""
    out = tmp_path / "dist"
    build(site_copy, out)
    old = read_json(out, "/api/v1/content/site.json")
    edit_yaml(site_copy / "content" / "site.yaml", description="A shorter description.")
    report = build(site_copy, out)
    assert "lock:" not in report
    assert read_json(out, "/api/v1/content/site.json") == old
    index = {e["id"]: e for e in read_json(out, "/api/v1/content/index.json")["documents"]}
    assert index["site"]["description"] == "A shorter description."


def test_author_pinned_version_wins(site_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    edit_yaml(site_copy / "content" / "developer-guide.yaml", version="2.0.0")
    report = build(site_copy, out)
    assert "lock: developer-guide: version changed" in report
    document = read_json(out, "/api/v1/content/developer-guide.json")
    assert document["metadata"]["content_version"] == "2.0.0"


def test_check_frozen_passes_on_the_repository(site_copy: Path, tmp_path: Path) -> None:
    total = published_count(site_copy, tmp_path)
    result = run_cli("check", "--site", site_copy, "--frozen")
    assert result.code == 0, result.err
    assert f"{total} files would be published" in result.out


def test_a_literal_base_url_in_content_is_refused(site_copy: Path, tmp_path: Path) -> None:
    """Only {base_url} links move with the deployment; a literal one would be checked
    against one base URL and hashed differently for another (a lock that never settles)."""
    faq = site_copy / "faq" / "q02-endpoints.yaml"
    data = yaml.safe_load(faq.read_text())
    data["answer"] += "\n\nStart at https://agents.parlance.example/llms.txt today."
    faq.write_text(yaml.safe_dump(data, sort_keys=False))
    for base_url in ("https://agents.parlance.example", "https://d1.cloudfront.net"):
        result = run_cli(
            "build", "--site", site_copy, "--out", tmp_path / "o", "--base-url", base_url
        )
        assert result.code == 1
        assert "q02-endpoints.yaml: field 'answer': write {base_url} instead of the literal" in (
            result.err
        )


def test_the_api_may_share_the_website_origin(site_copy: Path, tmp_path: Path) -> None:
    """Human pages on the same host (canonical_url, website) are not API links."""
    out = tmp_path / "dist"
    build(site_copy, out, "--base-url", "https://www.parlance.example")
    document = read_json(out, "/api/v1/content/how-it-works.json")
    assert document["canonical_url"].startswith("https://www.parlance.example/")
    faq = site_copy / "faq" / "q01-difference.yaml"
    data = yaml.safe_load(faq.read_text())
    data["answer"] += "\n\nSee {base_url}/api/v1/content/missing.json for more."
    faq.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run_cli("build", "--site", site_copy, "--out", out)
    assert result.code == 1 and "missing.json does not resolve" in result.err
