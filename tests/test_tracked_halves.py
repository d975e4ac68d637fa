"""The lock's source hashes made in two halves (render/documents.py `tracked`): the same
hashes, in the same order, as a plain loop; a failure raises here, the first in
publication order, as in a plain loop; each document's content hash is made once from
the same bytes, and equals agent_contract.hashing.content_hash."""

from __future__ import annotations

import os

import pytest

from agent_contract.hashing import content_hash
from content_builder.cache import CACHE_ENV
from content_builder.loader import LoadedDocument, LoadedFaq, Site, load_site
from content_builder.render import documents
from tests.conftest import SPEC_SITE, TEST_BASE_URL, force_halves


@pytest.fixture(autouse=True)
def no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hash made, none taken from the session's build cache (other tests fill it)."""
    monkeypatch.setenv(CACHE_ENV, "off")


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork path on a small site (two items are enough)."""
    force_halves(monkeypatch, documents)


def _plain(site: Site) -> list[str]:
    """What the lock records, by the loop `tracked` replaced (documents.source_hash)."""
    return [
        documents.source_hash(site, documents._unversioned(site, d)) for d in site.documents
    ] + [
        documents.source_hash(site, documents.faq_entry(f).model_dump(mode="json"))
        for f in site.faqs
    ]


@pytest.mark.usefixtures("forking")
def test_the_hashes_are_those_of_a_plain_loop_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    site = load_site(SPEC_SITE, TEST_BASE_URL)
    expected = _plain(site)
    real = documents._source_hash

    def with_pid(
        site: Site, data: documents.DocumentData, loaded: object
    ) -> tuple[str, str | None]:
        # The pid that hashed comes back with the hash: a child's only through its results.
        source, content = real(site, data, loaded)  # type: ignore[arg-type]
        return f"{source}@{os.getpid()}", content

    monkeypatch.setattr(documents, "_source_hash", with_pid)
    got = documents.tracked(site)
    pids = [int(item.source_hash.rsplit("@", 1)[1]) for item in got]
    assert [item.source_hash.rsplit("@", 1)[0] for item in got] == expected
    assert [item.id for item in got] == [e.id for e in [*site.documents, *site.faqs]]
    assert os.getpid() in pids and len(set(pids)) == 2, "one half was hashed in a child"
    assert set(pids[1::2]) == {os.getpid()}, "the odd items here, for the render's child"


@pytest.mark.usefixtures("forking")
def test_the_first_failure_in_order_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    site = load_site(SPEC_SITE, TEST_BASE_URL)
    entries = [*site.documents, *site.faqs]
    # The child hashes the even items: the first failure in order is in its half, the
    # second in this process's, which a plain in_halves would raise first.
    failing = {entries[2].id, entries[5].id}
    parent = os.getpid()
    real = documents._source_hash

    def fails(
        site: Site, data: documents.DocumentData, loaded: LoadedDocument | LoadedFaq
    ) -> tuple[str, str | None]:
        if loaded.id in failing:
            where = "here" if os.getpid() == parent else "in a child"
            raise ValueError(f"{loaded.id} fails {where}")
        return real(site, data, loaded)

    monkeypatch.setattr(documents, "_source_hash", fails)
    with pytest.raises(ValueError, match=rf"^{entries[2].id} fails here$"):
        documents.tracked(site)


@pytest.mark.usefixtures("forking")
def test_a_documents_content_hash_is_made_once_and_is_content_hash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = load_site(SPEC_SITE, TEST_BASE_URL)
    data = documents.DocumentData(site)
    documents.tracked(site, data)
    # Every other document was hashed in the child: its data is made again here, with
    # the content hash the child sent back.
    for document in site.documents:
        unversioned = data(document)
        assert unversioned.content_hash == content_hash(dict(unversioned))  # type: ignore[attr-defined]

    def no_second_hash(value: object) -> str:
        raise AssertionError("content_hash made twice")

    monkeypatch.setattr(documents, "content_hash", no_second_hash)
    document = site.documents[0]
    lock_entry = documents.LockEntry("sha256:" + "0" * 64, "1.0.0", "2026-01-01T00:00:00Z")
    rendered = documents.content_document(site, document, lock_entry, data(document))
    assert rendered.metadata.content_hash == data(document).content_hash  # type: ignore[attr-defined]


def test_data_with_fields_content_hash_leaves_out_is_hashed_the_plain_way() -> None:
    site = load_site(SPEC_SITE, TEST_BASE_URL)
    data = documents.DocumentData(site)
    document = site.documents[0]
    unversioned = data(document)
    unversioned["updated_at"] = "2026-01-01T00:00:00Z"  # content_hash() leaves it out
    assert documents._source_hash(site, data, document)[1] is None
