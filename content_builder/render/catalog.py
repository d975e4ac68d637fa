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
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import pydantic_core
from pydantic import BaseModel

from agent_contract.artifacts import Artifact
from agent_contract.routes import rule_for
from content_builder.cache import Blob
from content_builder.lock import History, Lock


class EntryLinks:
    """An entry's links into the API: (URL, path) of each in its JSON file, in its Markdown
    mirror and in each of its aggregate pieces (by EntryRender field, JOINED), and the
    ones its author wrote, (dotted location in the source file, URL, path).

    Pickled as one bytes object of their own, unpickled when first read: a cached build
    checks only the links of entries that changed since the last build that passed
    (cache.py `Proven`), and the ~1 M tuples of a 10,000-entry site's links were
    a third of the time it took to read the build cache (0.25 of 0.77 s). In the build
    cache that object is a blob (cache.py), not even read (15 MB at 10,000 entries, each
    URL stored once: validate.py interns them)."""

    __slots__ = ("_packed", "_value")

    def __init__(
        self,
        json: list[tuple[str, str]],
        markdown: list[tuple[str, str]],
        authored: list[tuple[str, str, str]],
        pieces: dict[str, list[tuple[str, str]]],
    ) -> None:
        self._value: _Links | None = (json, markdown, authored, pieces)
        self._packed: Blob | None = None

    def __reduce__(self) -> tuple[Any, tuple[Blob]]:
        # Packed again each time, never kept beside the value: one copy of the links held.
        packed = self._packed if self._value is None else Blob(pickle.dumps(self._value, 5))
        return (_packed_links, (packed,))

    def _links(self) -> _Links:
        if self._value is None:
            self._value = pickle.loads(self._packed.value())  # type: ignore[union-attr]
            self._packed = None
        return self._value

    @property
    def json(self) -> list[tuple[str, str]]:
        return self._links()[0]

    @property
    def markdown(self) -> list[tuple[str, str]]:
        return self._links()[1]

    @property
    def authored(self) -> list[tuple[str, str, str]]:
        return self._links()[2]

    @property
    def pieces(self) -> dict[str, list[tuple[str, str]]]:
        return self._links()[3]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntryLinks) and self._links() == other._links()

    __hash__ = None  # type: ignore[assignment]


def _packed_links(packed: Blob | bytes) -> EntryLinks:
    links = EntryLinks.__new__(EntryLinks)
    links._value, links._packed = None, packed if isinstance(packed, Blob) else Blob(packed)
    return links


_Links = tuple[
    list[tuple[str, str]],
    list[tuple[str, str]],
    list[tuple[str, str, str]],
    dict[str, list[tuple[str, str]]],
]


class EntryRender(NamedTuple):
    """One entry's published pieces: plain bytes and strings (cheap to keep and reload)."""

    id: str
    # Its own files: bytes when rendered by this build, a `Blob` when taken from the
    # build cache (read from its file only if the file must be written or served).
    json: bytes | Blob  # /api/v1/content/{id}.json or /api/v1/faq/{id}.json
    json_sha256: str
    markdown: bytes | Blob  # the Markdown mirror beside it
    markdown_sha256: str
    index_entry: bytes  # its entry of index.json (compact JSON)
    search_head: tuple[bytes, bytes]  # its entry of search-index.json, before and after
    # the keywords, which depend on the whole site and are chosen at every build
    terms: Any  # its candidate keywords (render/indexes.py)
    change_entry: bytes  # its entry of changes.json (compact JSON)
    sitemap_url: str  # its <url> element of sitemap.xml
    llms_link: str  # its line of llms.txt (or of an llms.txt part)
    llms_full_block: bytes  # its block of llms-full.txt, UTF-8
    links: EntryLinks  # its links into the API, checked against the published files

    def to_keep(self) -> EntryRender:
        """The copy the build cache keeps: its own files as blobs (cache.py), which a
        cached build does not unpickle (178 of the 375 MB of a 10,000-entry site's cache,
        0.5 s of reading it)."""
        return self._replace(json=_blob(self.json), markdown=_blob(self.markdown))


def _blob(body: bytes | Blob) -> Blob:
    return body if isinstance(body, Blob) else Blob(body)


def entry_file(path: str, body: bytes | Blob, sha256: str, source: str | None) -> Artifact:
    """An entry's own file: its body read from the build cache only when asked for."""
    if isinstance(body, Blob):
        return _KeptArtifact(path, body, sha256, source)
    return Artifact.hashed(path, body, sha256, source)


class _KeptArtifact(Artifact):
    """An Artifact whose body stays in the build cache until read (then kept, so that it
    is the same object at each read); its
    size and sha256 are known without it, which is all a build asks of a file that did not
    change (the writer's manifest and comparisons, the budgets of small files)."""

    def __init__(self, path: str, blob: Blob, sha256: str, source: str | None) -> None:
        # Not the dataclass' __init__: `body` is a property here, not a field to set.
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "rule", rule_for(path))
        # Set as attributes, not through `__dict__`, which would make a dict object per
        # artifact (40,000 at 10,000 entries) for the garbage collector to walk.
        object.__setattr__(self, "sha256", sha256)
        object.__setattr__(self, "size", blob.size)  # read from here: not a property below
        object.__setattr__(self, "_blob", blob)

    @property  # type: ignore[override]
    def body(self) -> bytes:
        body: bytes | None = getattr(self, "_body", None)
        if body is None:
            body = self._blob.value()
            object.__setattr__(self, "_body", body)
        return body

    @cached_property
    def size(self) -> int:  # type: ignore[override]
        return self._blob.size  # type: ignore[no-any-return]

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
