"""The catalog: every document and FAQ entry rendered once, as the pieces the site is made of.

An entry's own files (its JSON and its Markdown mirror) and its piece of every aggregate
(its content-index entry, its search entry around the keywords, its llms.txt link, its
llms-full.txt block, its change-feed entry, its sitemap URL) depend only on its source
file, its lock entry and the build settings. So they are rendered once per entry, kept
by the build cache between builds, and the aggregates are joined from them: an edit
renders one entry again, not ten thousand.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import compress
from typing import TYPE_CHECKING, Any, NamedTuple

import pydantic_core
from pydantic import BaseModel

from agent_contract.artifacts import Artifact
from agent_contract.routes import rule_for
from content_builder.cache import Blob, BlobFile, BlobRef, EntryCache
from content_builder.lock import History, Lock

if TYPE_CHECKING:
    from content_builder.loaded import Site


class EntryLinks(NamedTuple):
    """An entry's links into the API: (URL, path) of each in its JSON file, in its Markdown
    mirror and in each of its aggregate pieces (by EntryRender field, JOINED), and the
    ones its author wrote, (dotted location in the source file, URL, path).

    Kept packed (`pack`: one bytes object, `EntryRender.links`), unpacked when read: a
    cached build checks only the links of entries that changed since the last build that
    passed (cache.py `Proven`), and the ~1 M tuples of a 10,000-entry site's links were
    a third of the time it took to read the build cache."""

    json: tuple[tuple[str, str], ...]
    markdown: tuple[tuple[str, str], ...]
    authored: tuple[tuple[str, str, str], ...]
    pieces: dict[str, tuple[tuple[str, str], ...]]

    @classmethod
    def found(
        cls,
        json: Sequence[tuple[str, str]],
        markdown: Sequence[tuple[str, str]],
        authored: Sequence[tuple[str, str, str]],
        pieces: dict[str, list[tuple[str, str]]],
    ) -> EntryLinks:
        # Tuples, not lists: the garbage collector stops walking a tuple of strings once
        # it has seen it.
        return cls(
            tuple(json),
            tuple(markdown),
            tuple(authored),
            {name: tuple(links) for name, links in pieces.items()},
        )

    def pack(self) -> bytes:
        return pickle.dumps(tuple(self), pickle.HIGHEST_PROTOCOL)

    @classmethod
    def unpack(cls, packed: bytes) -> EntryLinks:
        return cls._make(pickle.loads(packed))


class EntryTerms(NamedTuple):
    """An entry's candidate keywords, in groups that share no term (render/indexes.py).
    Tuples of strings, which unpickle without rebuilding a hash table, one string object
    per distinct term (`Tokenizer.canonical`), which a pickle of many entries stores once."""

    title: tuple[str, ...]  # the title's words: always published
    salient: tuple[str, ...]  # description, authored keywords, headings
    stems: tuple[str, ...]  # stems of the salient words, acronyms both ways
    body: tuple[str, ...]  # body words and stems
    body_counts: tuple[int, ...]  # occurrences in the entry of each of `body`
    inflections: tuple[str, ...]  # regular forms of the salient words' stems
    # Words found only in code (fences, spans, code_example), most used first: taken
    # last, and counted in no site-wide frequency, so code can neither crowd out prose
    # nor make a prose word look common.
    code: tuple[str, ...] = ()
    # The sharded index's weight of each of `body` (search_shards.body_weight, 1 to 8, one
    # byte each): worked out once when the entry is rendered and kept with it, not for
    # every posting of every build (3.3 M calls at 10,000 entries).
    body_weights: bytes = b""


class EntryRender(NamedTuple):
    """One entry's published pieces: plain bytes and strings (cheap to keep and reload)."""

    id: str
    # Its own files: bytes when rendered by this build, a BlobRef when taken from the
    # build cache (read from its file only if the file must be written or served).
    # (A Blob in a record this process put and kept in memory: `serve --watch`'s series.)
    json: bytes | Blob | BlobRef  # /api/v1/content/{id}.json or /api/v1/faq/{id}.json
    json_sha256: str
    markdown: bytes | Blob | BlobRef  # the Markdown mirror beside it
    markdown_sha256: str
    index_entry: bytes  # its entry of index.json (compact JSON)
    search_head: tuple[bytes, bytes]  # its entry of search-index.json, before and after
    # the keywords, which depend on the whole site and are chosen at every build
    terms: EntryTerms  # its candidate keywords (render/indexes.py)
    change_entry: bytes  # its entry of changes.json (compact JSON)
    sitemap_url: str  # its <url> element of sitemap.xml
    llms_link: str  # its line of llms.txt (or of an llms.txt part)
    llms_full_block: bytes  # its block of llms-full.txt, UTF-8
    links: bytes  # its links into the API (`EntryLinks.pack`), checked against the files

    def to_keep(self) -> tuple[Any, ...]:
        """The record the build cache keeps: a plain tuple of strings, bytes and tuples of
        them, which the garbage collector walks once and then never again (a record of
        objects was walked at every full collection of every build: ~1 s of a
        10,000-entry edit), its own files as blobs (cache.py), which a cached build does
        not read (178 of the ~360 MB of a 10,000-entry site's cache)."""
        return (
            self.id,
            _blob(self.json),
            self.json_sha256,
            _blob(self.markdown),
            *self[4:TERMS_AT],
            tuple(self.terms),
            *self[TERMS_AT + 1 :],
        )

    @classmethod
    def kept(cls, record: tuple[Any, ...]) -> EntryRender:
        """The pieces of a record `to_keep` made, read back from the build cache."""
        return cls._make(
            (*record[:TERMS_AT], EntryTerms._make(record[TERMS_AT]), *record[TERMS_AT + 1 :])
        )

    def entry_links(self) -> EntryLinks:
        return EntryLinks.unpack(self.links)


#: Where an EntryRender (and its cache record) holds its terms.
TERMS_AT = EntryRender._fields.index("terms")


def _blob(body: bytes | Blob | BlobRef) -> Blob | BlobRef:
    return Blob(body) if isinstance(body, bytes) else body


def entry_file(
    path: str,
    body: bytes | Blob | BlobRef,
    sha256: str,
    source: str | None,
    cache: EntryCache | None = None,  # what a BlobRef is read from
) -> Artifact:
    """An entry's own file: its body read from the build cache only when asked for."""
    if type(body) is Blob:  # a record this process put (`serve --watch`'s series)
        body = body.data
    if isinstance(body, bytes):
        return Artifact.hashed(path, body, sha256, source)
    assert cache is not None and cache.blobs is not None, "a BlobRef needs its cache file"
    return _KeptArtifact(path, cache.blobs, body, sha256, source)


class _KeptArtifact(Artifact):
    """An Artifact whose body stays in the build cache until read (then kept, so that it
    is the same object at each read); its size and sha256 are known without it, which is
    all a build asks of a file that did not change (the writer's manifest and
    comparisons, the budgets of small files)."""

    # `body` is a property here, read from `_blobs` at `_ref` into `_kept`.
    __slots__ = ("_blobs", "_kept", "_ref")

    def __init__(
        self, path: str, blobs: BlobFile, ref: BlobRef, sha256: str, source: str | None
    ) -> None:
        # Not the dataclass' __init__, which would set `body`; each slot set as a frozen
        # dataclass' fields are.
        for name, value in (
            ("path", path), ("source", source), ("rule", rule_for(path)), ("_sha256", sha256),
            ("_blobs", blobs), ("_ref", ref), ("_kept", None),
        ):  # fmt: skip
            object.__setattr__(self, name, value)

    @property  # type: ignore[override]
    def body(self) -> bytes:
        body: bytes | None = self._kept
        if body is None:
            body = self._blobs.read(self._ref)
            object.__setattr__(self, "_kept", body)
        return body

    @property
    def size(self) -> int:
        return self._ref[3]  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        # The dataclass' __eq__ compares instances of one class only.
        if not isinstance(other, Artifact):
            return NotImplemented
        return (self.path, self.body, self.source, self.rule) == (
            other.path,
            other.body,
            other.source,
            other.rule,
        )

    __hash__ = Artifact.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        # Copied or pickled as the file it is: the dataclass' slot state would set `body`.
        return Artifact.hashed, (self.path, self.body, self._sha256, self.source)


#: The aggregates joined from one piece of every entry (the renderer's key in the endpoint
#: table -> the EntryRender field): each is the pieces and text that is the same whatever
#: the entries (the aggregate of a site with none), so its links are theirs.
JOINED = {
    "content_index": "index_entry",
    "search_index": "search_head",
    "changes": "change_entry",
    "sitemap": "sitemap_url",
    "llms_full_txt": "llms_full_block",
}


@dataclass(frozen=True)
class Catalog:
    """The rendered entries, in publication order, and the lock that dated them."""

    documents: tuple[EntryRender, ...]
    faqs: tuple[EntryRender, ...]
    lock: Lock
    history: History = field(default_factory=History)  # the change feed's generation
    rendered_now: int = 0  # how many entries this build rendered (the rest: the build cache)
    #: What renderers derive from the catalog once per build (llms.txt's parts), by name.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def entries(self) -> tuple[EntryRender, ...]:
        return self.documents + self.faqs

    def links(self, settled: Sequence[bool] | None = None) -> list[EntryLinks | None]:
        """Each entry's links, unpacked once; None where `settled` says the last passing
        build proved them (cache.py `Proven`)."""
        if settled is None:
            return [entry.entry_links() for entry in self.entries]
        return [
            None if done else entry.entry_links()
            for entry, done in zip(self.entries, settled, strict=True)
        ]


def searchable(site: Site, catalog: Catalog) -> tuple[Site, Catalog]:
    """The site and catalog the search indexes are made of: without the documents whose
    front matter keeps them out of search (LoadedDocument.searchable). The catalog's
    `derived` is shared: what is derived from the searchable catalog is named apart."""
    keep = [loaded.searchable for loaded in site.documents]
    if all(keep):
        return site, catalog
    documents = tuple(compress(catalog.documents, keep))
    return (
        replace(site, documents=tuple(compress(site.documents, keep))),
        Catalog(
            documents, catalog.faqs, catalog.lock, catalog.history, catalog.rendered_now,
            catalog.derived,
        ),
    )  # fmt: skip


class SpliceMarkerInText(ValueError):
    """An authored string holds the splice marker (it has NUL characters)."""


# NUL characters: no published string holds this, and `_split_at` checks it is unique.
_MARKER = "\x00agent-access splice\x00"
_MARKER_JSON = pydantic_core.to_json(_MARKER)


def around(model: BaseModel, list_field: str) -> tuple[bytes, bytes]:
    """The compact JSON of `model` (as `model_dump_json(exclude_none=True)` writes it)
    before and after the items of its list `list_field`: items serialized on their own and
    joined with "," between the two give the same bytes as serializing the whole."""
    return _split_at(model, list_field, [_MARKER])


def around_value(model: BaseModel, field: str) -> tuple[bytes, bytes]:
    """The compact JSON of `model` before and after the value of `field`."""
    return _split_at(model, field, _MARKER)


def _split_at(model: BaseModel, field: str, marked: Any) -> tuple[bytes, bytes]:
    data = model.model_dump(mode="json", exclude_none=True)
    data[field] = marked
    text = pydantic_core.to_json(data)
    if text.count(_MARKER_JSON) != 1:
        raise SpliceMarkerInText(f"a string of {type(model).__name__} holds the splice marker")
    head, tail = text.split(_MARKER_JSON)
    return head, tail


def compact_item(model: BaseModel) -> bytes:
    """One item of a compact JSON list, as `model_dump_json(exclude_none=True)` writes it."""
    return model.model_dump_json(exclude_none=True).encode("utf-8")
