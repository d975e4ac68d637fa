"""The content index and the client-side search index: one entry per document and FAQ."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from agent_contract import paths, search_terms
from agent_contract.models import ContentIndex, ContentIndexEntry, SearchEntry, SearchIndex
from content_builder.loader import Site
from content_builder.render.documents import (
    Catalog,
    document_headings,
    document_text,
    summarize,
)

_URL = re.compile(r"https?://\S+")


def faq_canonical_url(site: Site, faq_id: str, authored: str | None) -> str:
    return authored or f"{site.config.website.rstrip('/')}/faq#{faq_id}"


def content_index(site: Site, catalog: Catalog) -> ContentIndex:
    entries = [
        ContentIndexEntry(
            id=document.id,
            title=document.title,
            content_type=document.content_type,
            canonical_url=document.canonical_url,
            api_url=site.base_url + paths.document(document.id),
            description=loaded.source.description,
            updated_at=document.updated_at,
        )
        for loaded, document in catalog.documents
    ]
    entries += [
        ContentIndexEntry(
            id=faq.id,
            title=faq.question,
            content_type="faq",
            canonical_url=faq_canonical_url(site, faq.id, loaded.source.canonical_url),
            api_url=site.base_url + paths.faq(faq.id),
            description=summarize(faq.answer),
            updated_at=catalog.lock[faq.id].updated_at,
        )
        for loaded, faq in catalog.faqs
    ]
    return ContentIndex(
        version=site.config.api_version, total_documents=len(entries), documents=entries
    )


#: A body word found in more than this share of entries does not tell them apart, and
#: makes long documents win every tie: it is kept only where it is salient.
COMMON_BODY_SHARE = 0.5


@dataclass(frozen=True)
class _EntryTerms:
    salient: frozenset[str]
    body: frozenset[str]


def _entry_terms(
    salient: list[str], body: list[str], tokenizer: search_terms.Tokenizer
) -> _EntryTerms:
    """Salient words (title, description, authored keywords, headings) with their stems
    and regular inflections; body words with their stems; acronyms both ways."""
    salient_found, body_found = tokenizer.scan(salient), tokenizer.scan(body)
    salient_words = salient_found.words | salient_found.compounds
    body_words = body_found.words | body_found.compounds
    salient_terms: set[str] = set(salient_words)
    for word in salient_words:
        base = search_terms.stem(word)
        salient_terms.add(base)
        salient_terms |= search_terms.inflections(base)
    body_terms = body_words | tokenizer.stems(body_words)
    salient_terms |= search_terms.acronym_terms(
        salient_terms | body_terms,
        lambda: tokenizer.ordered(salient_found) + tokenizer.ordered(body_found),
    )
    return _EntryTerms(frozenset(salient_terms), frozenset(body_terms - salient_terms))


def _keywords(entries: list[_EntryTerms]) -> list[list[str]]:
    frequency: Counter[str] = Counter()
    for entry in entries:  # salient and body are disjoint: together, each term once
        frequency.update(entry.salient)
        frequency.update(entry.body)
    limit = COMMON_BODY_SHARE * len(entries)
    common = {term for term, count in frequency.items() if count > limit}
    return [sorted(entry.salient | (entry.body - common)) for entry in entries]


def search_index(site: Site, catalog: Catalog) -> SearchIndex:
    heads: list[tuple[str, str, str, str]] = []  # id, title, description, api_url
    terms: list[_EntryTerms] = []
    # URLs are links, not words: "https", "json" and the host would match every entry.
    tokenizer = search_terms.Tokenizer(drop=_URL)
    for loaded, document in catalog.documents:
        heads.append(
            (document.id, document.title, loaded.source.description,
             site.base_url + paths.document(document.id))
        )  # fmt: skip
        salient = [document.title, loaded.source.description, *loaded.source.keywords]
        terms.append(
            _entry_terms(
                [*salient, *document_headings(document)], document_text(document), tokenizer
            )
        )
    for loaded, faq in catalog.faqs:
        heads.append(
            (faq.id, faq.question, summarize(faq.answer), site.base_url + paths.faq(faq.id))
        )
        terms.append(_entry_terms([faq.question, *loaded.source.keywords], [faq.answer], tokenizer))
    entries = [
        SearchEntry(id=entry_id, title=title, description=description, api_url=api_url,
                    keywords=keywords)
        for (entry_id, title, description, api_url), keywords in zip(
            heads, _keywords(terms), strict=True
        )
    ]  # fmt: skip
    return SearchIndex(version=site.config.api_version, entries=entries)
