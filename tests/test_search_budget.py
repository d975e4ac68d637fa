"""The search index's byte budget: it holds on any site, so no later change can let a
large site's index grow past CloudFront's compression limit unnoticed.

CloudFront compresses only files of 1,000 to 10,000,000 bytes; N = 10,000 is 20,000
entries, so an index fits only below 500 bytes per entry, fixed fields included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_contract import paths, search_terms
from agent_contract.models import SearchIndex
from benchmarks import sitegen
from content_builder.build import plan
from content_builder.render import indexes
from tests.conftest import SITE_DATA

CLOUDFRONT_COMPRESSION_LIMIT = 10_000_000
ENTRIES_AT_N_10000 = 20_000
N = 25  # 50 entries: a second or two to generate and build


def _index(site: Path) -> tuple[bytes, SearchIndex]:
    body = {a.path: a for a in plan(site).artifacts}[paths.SEARCH_INDEX].body
    return body, SearchIndex.model_validate_json(body)


def _keyword_bytes(keywords: list[str]) -> int:
    return sum(indexes.keyword_cost(keyword) for keyword in keywords)


def _title_bytes(title: str) -> int:
    found = search_terms.Tokenizer().scan([title])
    return _keyword_bytes(sorted(found.words | found.compounds))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sitegen.generate(tmp_path_factory.mktemp("budget") / "site", N).root


def test_the_index_budget_is_under_cloudfronts_compression_limit() -> None:
    assert indexes.SEARCH_INDEX_BYTES < CLOUDFRONT_COMPRESSION_LIMIT


@pytest.mark.parametrize("which", ["generated", "site_data"])
def test_no_entry_exceeds_the_per_entry_keyword_budget(generated: Path, which: str) -> None:
    _, index = _index(generated if which == "generated" else SITE_DATA)
    for entry in index.entries:
        allowed = max(indexes.KEYWORD_BYTES_PER_ENTRY, _title_bytes(entry.title))
        assert _keyword_bytes(entry.keywords) <= allowed, entry.id
        title_words = search_terms.Tokenizer().scan([entry.title]).words
        assert title_words <= set(entry.keywords), "title words are always kept"


def test_at_the_share_n_10000_gets_the_index_fits(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same site held to the bytes per entry that 20,000 entries may take: the index
    comes in under that budget, so at N = 10,000 it comes in under 10,000,000 bytes."""
    unpruned, index = _index(generated)
    entries = len(index.entries)
    share = indexes.SEARCH_INDEX_BYTES * entries // ENTRIES_AT_N_10000
    assert len(unpruned) > share, "the per-entry cap alone would not be enough here"
    monkeypatch.setattr(indexes, "SEARCH_INDEX_BYTES", share)
    body, pruned = _index(generated)
    assert len(body) <= share
    assert len(body) / entries * ENTRIES_AT_N_10000 < CLOUDFRONT_COMPRESSION_LIMIT
    assert [e.id for e in pruned.entries] == [e.id for e in index.entries]
    assert all(entry.keywords for entry in pruned.entries), "every entry stays findable"
