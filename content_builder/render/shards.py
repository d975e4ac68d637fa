"""The sharded search index (agent_contract/search_shards.py): term map, shards, entry files.

Joined from the entries' pieces: each entry's candidate terms (render/indexes.py, kept
by the build cache with its other pieces) and its content-index entry. Every term of
every entry is posted, with a weight by where the entry has it; nothing is chosen
against a budget, so nothing depends on the other entries but the shard boundaries.

Stable across builds, so that a one-entry edit publishes a few files:
- an entry's key is a hash of its id, so it never moves;
- a shard starts at a term whose hash is 0 modulo K (content-defined chunking, as
  rsync and restic cut files): adding or removing a term moves no other boundary;
- a shard is named by its bytes, so an unchanged shard keeps its name (and, cached
  immutably, is never invalidated); only the term map, which names them, changes;
- a word's postings past the first HEAD_POSTINGS are in one shard per weight, so an edit
  that moves an entry from one weight to another rewrites those two and the head;
- an entry file holds the entries whose key starts with its prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from agent_contract import paths, search_shards
from agent_contract.models import SearchTermMap
from content_builder.loader import Site
from content_builder.render.catalog import Catalog, EntryRender

#: The term map lists at most this many shards: K doubles past it (each doubling keeps
#: half the boundaries, so half the shards keep their bytes). At 2,048 shards the map is
#: about 60 KB (20 KB gzipped).
MAX_SHARDS = 2048
#: Terms per shard on average, at least (K): a query reads one or two words of each shard
#: it fetches, so small shards keep its bytes down (a generated 20,011-entry site: ~330).
TERMS_PER_SHARD = 8
#: A shard is cut before this size whatever the hashes say (a run of long posting heads).
MAX_SHARD_BYTES = 16_000

#: Groups of an entry's candidate terms (render/indexes.py `_EntryTerms`) and their weight.
_GROUP_WEIGHTS = (
    ("title", search_shards.TITLE_WEIGHT),
    ("salient", search_shards.SALIENT_WEIGHT),
    ("stems", search_shards.STEM_WEIGHT),
    ("inflections", search_shards.INFLECTION_WEIGHT),
)


@dataclass(frozen=True)
class ShardedIndex:
    term_map: bytes
    files: list[tuple[str, bytes]]  # shards, then entry files: (path, body)


_DERIVED = "search_shards"


def sharded_index(site: Site, catalog: Catalog) -> ShardedIndex:
    """The sharded index of the catalog, made once per build (the term map's renderer and
    the build's file list both ask)."""
    known = catalog.derived.get(_DERIVED)
    if isinstance(known, ShardedIndex):
        return known
    made = _make(site, catalog)
    catalog.derived[_DERIVED] = made
    return made


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _make(site: Site, catalog: Catalog) -> ShardedIndex:
    entries = catalog.entries
    length = search_shards.key_length(entry.id for entry in entries)
    keyed = sorted(
        (search_shards.entry_key(entry.id, length), entry) for entry in entries
    )  # keys are unique: the entries are never compared
    postings = _postings(keyed)
    shards, firsts = _shards(postings)
    prefix = search_shards.prefix_length(len(entries))
    files = [(paths.search_shard(name), body) for name, body in shards]
    files += _entry_files(keyed, prefix)
    term_map = SearchTermMap(
        version=search_shards.FORMAT_VERSION,
        entries=len(entries),
        prefix_length=prefix,
        shard_url=site.base_url + paths.SEARCH_SHARD_TEMPLATE,
        entries_url=site.base_url + paths.SEARCH_ENTRIES_TEMPLATE,
        procedure=search_shards.PROCEDURE,
        shards=[list(pair) for pair in firsts],
        synonyms=[list(group) for group in site.config.search.synonyms],
    )
    return ShardedIndex(term_map.model_dump_json().encode("utf-8") + b"\n", files)


def _postings(keyed: list[tuple[str, EntryRender]]) -> dict[str, list[list[Any]]]:
    """Per term, its groups [weight, key, ...], highest weight first, keys sorted."""
    by_weight: dict[int, defaultdict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    groups = [(group, by_weight[weight]) for group, weight in _GROUP_WEIGHTS]
    for key, entry in keyed:  # in key order: every list comes out sorted
        terms = entry.terms
        for group, posted in groups:
            for term in getattr(terms, group, ()):
                posted[term].append(key)
        length = sum(terms.body_counts)
        for term, count in zip(terms.body, terms.body_counts, strict=True):
            by_weight[search_shards.body_weight(count, length)][term].append(key)
    merged: dict[str, list[list[Any]]] = {}
    for weight in sorted(by_weight, reverse=True):
        for term, keys in by_weight[weight].items():
            merged.setdefault(term, []).append([weight, *keys])
    return merged


def _term_hash(term: str) -> int:
    return int.from_bytes(hashlib.sha256(term.encode("utf-8")).digest()[:4], "big")


def _name(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:16]


def _shards(
    postings: dict[str, list[list[Any]]],
) -> tuple[list[tuple[str, bytes]], list[tuple[str, str]]]:
    """The shard files (name, body), heads and `more` tails, and the term map's list."""
    every = sorted(postings)
    spread = TERMS_PER_SHARD
    while len(every) > MAX_SHARDS * spread:
        spread *= 2
    files: list[tuple[str, bytes]] = []
    firsts: list[tuple[str, str]] = []
    current: dict[str, Any] = {}
    size = 0

    def close() -> None:
        body = _dumps({"terms": current})
        name = _name(body)
        files.append((name, body))
        firsts.append((next(iter(current)), name))

    for term in every:
        groups = postings[term]
        df = sum(len(group) - 1 for group in groups)
        entry: dict[str, Any] = {"df": df, "postings": _head(groups)}
        if df > search_shards.HEAD_POSTINGS:
            # One shard per weight of the rest: an edit rewrites the weights it touched.
            more = []
            for group in _tail(groups):
                tail = _dumps({"terms": {term: {"df": df, "postings": [group]}}})
                name = _name(tail)
                files.append((name, tail))
                more.append([group[0], name, len(group) - 1])
            entry["more"] = more
        cost = len(term) + len(_dumps(entry))
        if current and (_term_hash(term) % spread == 0 or size + cost > MAX_SHARD_BYTES):
            close()
            current, size = {}, 0
        current[term] = entry
        size += cost
    if current:
        close()
    return files, firsts


def _head(groups: list[list[Any]]) -> list[list[Any]]:
    """The first HEAD_POSTINGS postings, in their groups."""
    head: list[list[Any]] = []
    room = search_shards.HEAD_POSTINGS
    for group in groups:
        if room <= 0:
            break
        head.append(group[: room + 1])
        room -= len(group) - 1
    return head


def _tail(groups: list[list[Any]]) -> list[list[Any]]:
    """The postings after the head, in their groups."""
    tail: list[list[Any]] = []
    skip = search_shards.HEAD_POSTINGS
    for group in groups:
        keys = group[1:]
        if skip >= len(keys):
            skip -= len(keys)
            continue
        tail.append([group[0], *keys[skip:]])
        skip = 0
    return tail


def _entry_files(keyed: list[tuple[str, EntryRender]], prefix: int) -> list[tuple[str, bytes]]:
    files: dict[str, dict[str, Any]] = {}
    for key, entry in keyed:
        indexed = json.loads(entry.index_entry)
        files.setdefault(key[:prefix], {})[key] = {
            "id": indexed["id"],
            "title": indexed["title"],
            "url": indexed["canonical_url"],
            "api_url": indexed["api_url"],
            "description": indexed["description"],
        }
    return [(paths.search_entries(name), _dumps({"entries": held})) for name, held in files.items()]
