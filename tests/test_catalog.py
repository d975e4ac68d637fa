"""The catalog: entries rendered once into pieces, aggregates joined from the pieces.

The joined bytes themselves are checked by the golden test and by every cached-versus-cold
comparison; here, what the joining relies on: the links found in the pieces are exactly the
links a scan of the whole published file finds, and a marker collision is refused.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agent_contract.models import FAQEntry
from content_builder.build import known_links, render
from content_builder.loader import LOCK_FILE, load_site
from content_builder.lock import advance, read_history, read_lock, resolve
from content_builder.render.catalog import JOINED, around, around_value
from content_builder.render.documents import DocumentData, tracked
from content_builder.render.entries import build_catalog
from content_builder.validate import body_links
from tests.conftest import SITE_DATA, SPEC_SITE, TEST_BASE_URL, run_cli
from tests.sites import Shape, make_site

GOLDEN_SITE = Path(__file__).parent / "golden" / "site"


@pytest.mark.parametrize("site_dir", [SITE_DATA, SPEC_SITE, GOLDEN_SITE], ids=lambda p: p.name)
def test_links_known_from_the_pieces_are_the_links_in_the_published_files(
    site_dir: Path,
) -> None:
    site = load_site(site_dir, TEST_BASE_URL)
    display = str(site.root / LOCK_FILE)
    data = DocumentData(site)
    lock, changes = resolve(read_lock(site.root / LOCK_FILE, display), tracked(site, data))
    history = advance(read_history(site.root / LOCK_FILE, display), changes)
    catalog = build_catalog(site, lock, history, data)
    artifacts = {artifact.path: artifact for artifact in render(site, catalog)}
    known = known_links(site, catalog, list(artifacts.values()))
    assert len(known) == 2 * len(catalog.entries) + len(JOINED), "every leaf and aggregate"
    for path, links in known.items():
        scanned = body_links(site, artifacts[path].body)
        assert Counter(links) == Counter(scanned), path
    assert any(known[path] for path in known), "the site links somewhere"


def test_a_piece_is_spliced_where_the_whole_would_serialize_it() -> None:
    entry = FAQEntry(id="q1", question="What?", answer="This.")
    before, after = around_value(entry, "answer")
    assert before + b'"This."' + after == entry.model_dump_json().encode()


def test_a_string_holding_the_splice_marker_is_refused() -> None:
    entry = FAQEntry(id="q1", question="\x00agent-access splice\x00", answer="x")
    with pytest.raises(ValueError, match="splice marker"):
        around(entry, "answer")


def test_an_entry_holding_the_splice_marker_is_refused_by_file(site_copy: Path) -> None:
    faq = site_copy / "faq" / "q01-difference.yaml"
    text = faq.read_text(encoding="utf-8")
    question = next(line for line in text.splitlines() if line.startswith("question:"))
    faq.write_text(
        text.replace(question, 'question: "\\0agent-access splice\\0"'), encoding="utf-8"
    )
    result = run_cli("check", "--site", site_copy)
    assert result.code == 1
    # NUL is a control character: refused when the file is read (issue 24), before the
    # catalog's own check (`reserves`) could see it; either way the file is named.
    assert "q01-difference.yaml" in result.err
    assert "U+0000" in result.err or "reserves" in result.err
    assert "Traceback" not in result.err


def test_an_entry_s_links_are_kept_with_each_url_stored_once(tmp_path: Path) -> None:
    # An entry names the same URLs in its JSON, its Markdown mirror, its source and its
    # aggregate pieces; the build cache keeps its links pickled (EntryLinks), where each
    # URL written again as a copy of its own was half of the links' 34 MB at N = 10,000.
    site_dir = make_site(tmp_path / "site_data", Shape(documents=6, faqs=6))
    site = load_site(site_dir, TEST_BASE_URL)
    display = str(site.root / LOCK_FILE)
    data = DocumentData(site)
    lock, _ = resolve(read_lock(site.root / LOCK_FILE, display), tracked(site, data))
    catalog = build_catalog(site, lock, None, data)
    checked = 0
    for entry in catalog.entries:
        packed = entry.links  # as the build cache keeps them (EntryLinks.pack)
        found = entry.entry_links()
        urls = {url for url, _ in found.json + found.markdown}
        for url in urls:
            text = url.encode()
            assert len(text) < 256
            stored = b"\x8c" + bytes([len(text)]) + text  # pickle's SHORT_BINUNICODE
            assert packed.count(stored) == 1, (entry.id, url)
            checked += 1
    assert checked > len(catalog.entries), "the entries link each other"
