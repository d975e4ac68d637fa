"""The content index and the client-side search index: one entry per document and FAQ."""

from __future__ import annotations

import re

from content_builder import paths, search_terms
from content_builder.loader import Site
from content_builder.models import ContentIndex, ContentIndexEntry, SearchEntry, SearchIndex
from content_builder.render.documents import Catalog, document_text, summarize

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


def _keywords(texts: list[str]) -> list[str]:
    # URLs are links, not words: "https", "json" and the host would match every entry.
    return search_terms.keywords(_URL.sub(" ", text) for text in texts)


def search_index(site: Site, catalog: Catalog) -> SearchIndex:
    entries = [
        SearchEntry(
            id=document.id,
            title=document.title,
            description=loaded.source.description,
            api_url=site.base_url + paths.document(document.id),
            keywords=_keywords(
                [
                    document.title,
                    loaded.source.description,
                    *loaded.source.keywords,
                    *document_text(document),
                ]
            ),
        )
        for loaded, document in catalog.documents
    ]
    entries += [
        SearchEntry(
            id=faq.id,
            title=faq.question,
            description=summarize(faq.answer),
            api_url=site.base_url + paths.faq(faq.id),
            keywords=_keywords([faq.question, *loaded.source.keywords, faq.answer]),
        )
        for loaded, faq in catalog.faqs
    ]
    return SearchIndex(version=site.config.api_version, entries=entries)
