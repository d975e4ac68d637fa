"""The catalog: every document and FAQ entry rendered once, as the pieces the site is made of.

An entry's own files (its JSON and its Markdown mirror) and its piece of every aggregate
(its content-index entry, its search entry around the keywords, its llms.txt link, its
llms-full.txt block, its change-feed entry, its sitemap URL) depend only on its source
file, its lock entry and the build settings. So they are rendered once per entry, kept
by the build cache between builds, and the aggregates are joined from them: an edit
renders one entry again, not ten thousand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pydantic_core
from pydantic import BaseModel

from content_builder.lock import History, Lock


class EntryRender(NamedTuple):
    """One entry's published pieces: plain bytes and strings (cheap to keep and reload)."""

    id: str
    json: bytes  # /api/v1/content/{id}.json or /api/v1/faq/{id}.json
    json_sha256: str
    json_links: list[tuple[str, str]]  # (URL, path) of its links into the API
    markdown: bytes  # the Markdown mirror beside it
    markdown_sha256: str
    markdown_links: list[tuple[str, str]]
    index_entry: bytes  # its entry of index.json (compact JSON)
    search_head: tuple[bytes, bytes]  # its entry of search-index.json, before and after
    # the keywords, which depend on the whole site and are chosen at every build
    terms: Any  # its candidate keywords (render/indexes.py)
    change_entry: bytes  # its entry of changes.json (compact JSON)
    sitemap_url: str  # its <url> element of sitemap.xml
    llms_link: str  # its line of llms.txt (or of an llms.txt part)
    llms_full_block: str  # its block of llms-full.txt
    authored_links: list[tuple[str, str, str]]  # links into the API its author wrote:
    # (dotted location in the source file, URL, path), checked against the published files
    piece_links: dict[str, list[tuple[str, str]]]  # (URL, path) of the links in each of
    # its aggregate pieces, by field name (JOINED)


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
