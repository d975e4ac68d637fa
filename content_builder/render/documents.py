"""Content documents and FAQ entries: the leaves every aggregate is made of."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from agent_contract import paths
from agent_contract.hashing import canonical_json, content_hash, unhashed_fields
from agent_contract.models import (
    Capability,
    ContentDocument,
    DocumentMetadata,
    FAQEntry,
    FeatureContent,
    PageContent,
    Section,
)
from content_builder.loaded import LoadedDocument, LoadedFaq, Site
from content_builder.lock import LockEntry, Tracked
from content_builder.source import FeatureContentSource
from content_builder.tokens import BASE_URL_TOKEN


def _content(site: Site, document: LoadedDocument) -> PageContent | FeatureContent:
    body = document.content
    if isinstance(body, FeatureContentSource):
        return FeatureContent(
            headline=body.headline,
            summary=body.summary,
            capabilities={
                name: Capability(
                    title=capability.title,
                    description=capability.description,
                    endpoints=list(capability.endpoints),
                )
                for name, capability in body.capabilities.items()
            },
            for_agent_developers=body.for_agent_developers,
        )
    return PageContent(
        headline=body.headline,
        sections=[
            Section(title=s.title, body=s.body, code_example=getattr(s, "code_example", None))
            for s in body.sections
        ],
        contact=site.config.contact,
        api_base=site.base_url + paths.API_PREFIX,
    )


def _unversioned(site: Site, document: LoadedDocument) -> dict[str, Any]:
    """The document as a client reads it, minus updated_at and metadata."""
    source = document.source
    return {
        "id": source.id,
        "title": source.title,
        "content_type": source.content_type,
        "canonical_url": source.canonical_url,
        "language": source.language or site.config.language,
        "content": _content(site, document).model_dump(mode="json", exclude_none=True),
    }


def faq_entry(faq: LoadedFaq) -> FAQEntry:
    return FAQEntry(id=faq.source.id, question=faq.source.question, answer=faq.source.answer)


class _Unversioned(dict[str, Any]):
    """A document's data with its content hash when already known: the lock's source
    hash and metadata.content_hash are both hashes of its canonical JSON, made once."""

    content_hash: str | None = None


class DocumentData:
    """Each document as a client reads it, minus updated_at and metadata: rendered at most
    once per build, for the lock's source hash and the document itself, and only for the
    entries the build cache does not already answer for."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self._rendered: dict[str, _Unversioned] = {}
        # Content hashes made with the source hashes: a document's data, made again from
        # the same file and settings, has the same bytes.
        self._content_hashes: dict[str, str] = {}

    def __call__(self, document: LoadedDocument) -> dict[str, Any]:
        found = self._rendered.get(document.id)
        if found is None:
            found = _Unversioned(_unversioned(self.site, document))
            found.content_hash = self._content_hashes.get(document.id)
            self._rendered[document.id] = found
        return found

    def content_hash_known(self, document: LoadedDocument, content_hash: str) -> None:
        self._content_hashes[document.id] = content_hash
        if document.id in self._rendered:
            self._rendered[document.id].content_hash = content_hash

    def forget(self, document: LoadedDocument | LoadedFaq) -> None:
        self._rendered.pop(document.id, None)


def tracked(site: Site, data: DocumentData | None = None) -> Tracked:
    """Everything the lock records, documents first, in publication order.

    The source hashes the build cache does not hold are made here, in order, so the
    first failure in publication order raises."""
    data = data or DocumentData(site)
    entries: list[LoadedDocument | LoadedFaq] = [*site.documents, *site.faqs]
    hashes = [site.cache.get(e.cache_key, "source_hash") if e.cache_key else None for e in entries]
    missing = [index for index, found in enumerate(hashes) if found is None]
    for index in missing:
        loaded = entries[index]
        source, content = _source_hash(site, data, loaded)
        hashes[index] = source
        if content is not None and isinstance(loaded, LoadedDocument):
            data.content_hash_known(loaded, content)
        if loaded.cache_key:
            site.cache.put(loaded.cache_key, "source_hash", source)
    return Tracked(
        tuple(e.id for e in entries),
        tuple(hashes),  # type: ignore[arg-type]
        tuple(e.version if isinstance(e, LoadedDocument) else None for e in entries),
        tuple(e.file for e in entries),
    )


def _source_hash(
    site: Site, data: DocumentData, loaded: LoadedDocument | LoadedFaq
) -> tuple[str, str | None]:
    """The entry's source hash, and a document's content hash when the same bytes give it.
    Both depend on the entry's bytes and the settings its cache key includes."""
    if isinstance(loaded, LoadedFaq):
        return source_hash(site, faq_entry(loaded).model_dump(mode="json")), None
    unversioned = data(loaded)
    canonical = canonical_json(unversioned)
    same = len(unhashed_fields(unversioned)) == len(unversioned)
    # content_hash() of the same data hashes these very bytes (agent_contract/hashing.py).
    content = "sha256:" + hashlib.sha256(canonical).hexdigest() if same else None
    return _token_hash(site, canonical), content


def source_hash(site: Site, data: dict[str, Any]) -> str:
    """content_hash with the deployment's base URL factored out (see lock.py)."""
    return _token_hash(site, canonical_json(data))


def _token_hash(site: Site, canonical: bytes) -> str:
    # Replaced in the UTF-8 bytes, not decoded and encoded again: UTF-8 is
    # self-synchronizing, so the encoded base URL occurs in the bytes exactly where it
    # occurs in the text, and the result is the same bytes.
    token = canonical.replace(site.base_url.encode("utf-8"), _TOKEN)
    return "sha256:" + hashlib.sha256(token).hexdigest()


_TOKEN = BASE_URL_TOKEN.encode("utf-8")


def cached_content_hash(
    site: Site, key: str, data: Callable[[], dict[str, Any]], known: str | None = None
) -> str:
    """metadata.content_hash of an entry. Like the source hash, it depends only on the
    entry's bytes and the settings, both in the entry's cache key. `known`: the hash
    already made from the same data (with the source hash)."""
    found = site.cache.get(key, "content_hash") if key else None
    if found is None:
        found = known or content_hash(data())
        if key:
            site.cache.put(key, "content_hash", found)
    return found


def content_document(
    site: Site, document: LoadedDocument, entry: LockEntry, data: dict[str, Any]
) -> ContentDocument:
    return ContentDocument.model_validate(
        {
            **data,
            "updated_at": entry.updated_at,
            "metadata": DocumentMetadata(
                content_version=entry.content_version,
                content_hash=cached_content_hash(
                    site, document.cache_key, lambda: data, getattr(data, "content_hash", None)
                ),
            ),
        }
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@lru_cache(maxsize=1 << 15)
def summarize(text: str, limit: int = 200) -> str:
    """First sentence of `text`, cut at a word boundary past `limit` characters.
    Memoized (a pure function): the content index, the search index and llms.txt each
    summarize every FAQ answer."""
    first = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def document_headings(document: ContentDocument) -> list[str]:
    """The headline and section or capability titles: what a document is about."""
    body = document.content
    if isinstance(body, FeatureContent):
        names = [name.replace("_", " ") for name in body.capabilities]
        return [body.headline, *names, *(c.title for c in body.capabilities.values())]
    return [body.headline, *(section.title for section in body.sections)]


def document_code(document: ContentDocument) -> list[str]:
    """The sections' code examples: code, which the search index takes last."""
    body = document.content
    if isinstance(body, FeatureContent):
        return []
    return [section.code_example for section in body.sections if section.code_example]


def document_text(document: ContentDocument) -> list[str]:
    """The prose of a document, for the search index and llms-full.txt (no code)."""
    body = document.content
    if isinstance(body, FeatureContent):
        texts = [body.headline, body.summary]
        for name, capability in body.capabilities.items():
            texts += [name.replace("_", " "), capability.title, capability.description]
        return [*texts, body.for_agent_developers]
    texts = [body.headline]
    for section in body.sections:
        texts += [section.title, section.body]
    return texts
