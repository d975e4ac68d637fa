"""The sharded search index (agent_contract/search_shards.py): term map, shards, entry files.

Joined from the entries' pieces: each entry's candidate terms (render/indexes.py, kept
by the build cache with its other pieces) and its content-index entry. Every term of
every entry is posted, with a weight by where the entry has it; nothing is chosen
against a budget, so nothing depends on the other entries but the shard boundaries.

Stable across builds, so that a one-entry edit publishes a few files:
- an entry's key is a hash of its id, so it never moves;
- shards are cut where the terms' hashes say (content-defined chunking,
  render/shard_layout.py): adding or removing a term moves no boundary but near it;
- a shard is named by its bytes, so an unchanged shard keeps its name (and, cached
  immutably, is never invalidated); only the term map, which names them, changes;
- an entry file holds the entries whose key starts with its prefix.

Made again only where it changed. The build cache keeps what the last build laid out
(`ShardState`, beside the records) and each shard's and entry file's body (a record by
sha256), and each entry's terms by its identity (its cache key and lock stamp). A build
posts again only the terms of the entries whose identity changed (their old terms and
their new), and makes anew only the shards holding those terms: the rest are the last
build's files, byte for byte. A series of builds (`serve --watch`, which hands each build
the last one's cache) finds all this in memory. Anything global changing (the key length,
the prefix length, the heads' spread, the code or settings, which key the cache), or
anything missing from the cache, makes the index whole again, as the first build did.
"""

from __future__ import annotations

import hashlib
import json
from bisect import insort
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent_contract import paths, search_shards
from agent_contract.artifacts import Artifact
from agent_contract.models import SearchTermMap
from content_builder.cache import Blob, BlobRef, EntryCache, entry_identity, is_blob_ref
from content_builder.loaded import Site
from content_builder.render.catalog import (
    Catalog,
    EntryRender,
    EntryTerms,
    entry_file,
    searchable,
)
from content_builder.render.entries import lock_stamp
from content_builder.render.shard_layout import (
    Change,
    Group,
    Laid,
    Layout,
    compact_json,
    lay_out,
    spread_for,
)

#: Groups of an entry's candidate terms (render/indexes.py `_EntryTerms`) and their weight.
_GROUP_WEIGHTS = (
    ("title", search_shards.TITLE_WEIGHT),
    ("salient", search_shards.SALIENT_WEIGHT),
    ("stems", search_shards.STEM_WEIGHT),
    ("inflections", search_shards.INFLECTION_WEIGHT),
)

#: What the build cache keeps (cache.py: one value beside the records, two record kinds).
_STATE = "search_shards"
_STATE_VERSION = 2  # of ShardState's shape
_FILE = "search-file\0"  # + sha256: {"body": Blob}, a shard's or entry file's body
_TERMS = "search-terms\0"  # + identity: {"terms": the entry's candidate terms}


@dataclass(frozen=True)
class ShardState:
    """What a build of the sharded index leaves for the next (no bodies: those are records)."""

    version: int
    key_length: int
    prefix_length: int
    identities: dict[str, str]  # entry key -> digest of its identity (`_identities`)
    layout: Layout
    entry_files: dict[str, str]  # prefix -> sha256 of its body


@dataclass(frozen=True)
class ShardedIndex:
    term_map: bytes
    files: list[Artifact]  # shards, then entry files


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


class _Whole(Exception):
    """The last build's index cannot be built on: lay it out whole."""


def _make(site: Site, catalog: Catalog) -> ShardedIndex:
    site, catalog = searchable(site, catalog)  # what front matter keeps out of search
    entries = catalog.entries
    keys = search_shards.entry_keys(entry.id for entry in entries)
    length = len(keys[0]) if keys else search_shards.SHORTEST_KEY
    prefix = search_shards.prefix_length(len(entries))
    identities = _identities(site, catalog)
    cache = site.cache
    last = cache.get_latest(_STATE) if identities is not None else None
    store = _Store(cache)
    try:
        if not (
            isinstance(last, ShardState)
            and last.version == _STATE_VERSION
            and (last.key_length, last.prefix_length) == (length, prefix)
        ):
            raise _Whole
        assert identities is not None
        laid, entry_files = _from_last(last, keys, identities, entries, store)
        files = _files(laid, entry_files, store)  # every body kept: or start over
    except (_Whole, LookupError):  # a record missing (KeyError included): start over
        laid, entry_files = _from_nothing(keys, entries, prefix, store)
        files = _files(laid, entry_files, store)
    if identities is not None and cache.enabled:
        state = ShardState(
            _STATE_VERSION, length, prefix, dict(zip(keys, identities, strict=True)),
            laid.layout, entry_files,
        )  # fmt: skip
        store.keep(state, entries, identities)
    term_map = SearchTermMap(
        version=search_shards.FORMAT_VERSION,
        entries=len(entries),
        prefix_length=prefix,
        shard_url=site.base_url + paths.SEARCH_SHARD_TEMPLATE,
        entries_url=site.base_url + paths.SEARCH_ENTRIES_TEMPLATE,
        procedure=search_shards.PROCEDURE,
        shards=[[chunk.items[0], chunk.name] for chunk in laid.layout.heads],
        synonyms=[list(group) for group in site.config.search.synonyms],
    )
    body = term_map.model_dump_json().encode("utf-8") + b"\n"
    return ShardedIndex(body, files)


def _files(laid: Laid, entry_files: dict[str, str], store: _Store) -> list[Artifact]:
    named = [(paths.search_shard(chunk.name), chunk.sha256) for chunk in laid.layout.chunks]
    named += [(paths.search_entries(name), entry_files[name]) for name in sorted(entry_files)]
    return [store.artifact(path, sha256) for path, sha256 in named]


def _identities(site: Site, catalog: Catalog) -> list[str] | None:
    """A digest of each entry's identity (its bytes, under the cache's settings and code,
    and its lock stamp), in catalog order; None when one has no cache key. A digest: the
    identities themselves were 3.3 MB of the state at 10,000 entries, read every build."""
    found = []
    for loaded in (*site.documents, *site.faqs):
        if not loaded.cache_key:
            return None
        identity = entry_identity(loaded.cache_key, lock_stamp(catalog.lock[loaded.id]))
        found.append(hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24])
    return found


class _Store:
    """The bodies of this build's files: made now, or the last build's from the cache."""

    def __init__(self, cache: EntryCache) -> None:
        self.cache = cache
        self.made: dict[str, bytes] = {}  # sha256 -> body
        self._parsed: dict[str, dict[str, Any]] = {}

    def add(self, body: bytes) -> str:
        sha256 = hashlib.sha256(body).hexdigest()
        self.made[sha256] = body
        return sha256

    def old(self, sha256: str) -> Blob | BlobRef:
        found = self.cache.get(_FILE + sha256, "body")
        if type(found) is not Blob and not is_blob_ref(found):
            raise LookupError(f"the build cache does not keep search file {sha256}")
        return found  # type: ignore[no-any-return]

    def parsed(self, sha256: str) -> dict[str, Any]:
        if sha256 not in self._parsed:
            self._parsed[sha256] = json.loads(self.cache.blob(self.old(sha256)))
        return self._parsed[sha256]

    def artifact(self, path: str, sha256: str) -> Artifact:
        body = self.made.get(sha256)
        found = body if body is not None else self.old(sha256)
        return entry_file(path, found, sha256, None, self.cache)

    def keep(
        self, state: ShardState, entries: Iterable[EntryRender], identities: list[str]
    ) -> None:
        """Everything the next build starts from: the state, the bodies, each entry's terms
        (looked up for all, which also keeps them when the cache file is rewritten)."""
        for sha256, body in self.made.items():
            self.cache.put(_FILE + sha256, "body", Blob(body))
        for entry, identity in zip(entries, identities, strict=True):
            if self.cache.get(_TERMS + identity, "terms") is None:
                self.cache.put(_TERMS + identity, "terms", tuple(entry.terms))  # plain
        if self.cache.get_latest(_STATE) != state:  # the same again: nothing to write
            self.cache.put_latest(_STATE, state)


# --- the whole index ---------------------------------------------------------------


def _from_nothing(
    keys: list[str], entries: tuple[EntryRender, ...], prefix: int, store: _Store
) -> tuple[Laid, dict[str, str]]:
    keyed = sorted(zip(keys, (entry.terms for entry in entries), strict=True))
    postings = _postings(keyed)
    # (): one empty tuple for every term, not a list each (fewer objects for the
    # collector to count and walk, issue 22).
    changes = {term: Change((), groups) for term, groups in postings.items()}
    laid = lay_out(Layout(spread_for(len(postings))), changes, _nothing)
    store.made.update(laid.bodies)
    by_prefix: dict[str, list[tuple[str, EntryRender]]] = defaultdict(list)
    for key, entry in zip(keys, entries, strict=True):
        by_prefix[key[:prefix]].append((key, entry))
    entry_files = {name: store.add(_entry_file(held)) for name, held in by_prefix.items()}
    return laid, entry_files


def _nothing(name: str) -> dict[str, Any]:
    raise LookupError(name)  # a layout from nothing reads no old shard


def _postings(keyed: list[tuple[str, Any]]) -> dict[str, list[Group]]:
    """Per term, its groups [weight, key, ...], highest weight first, keys sorted."""
    by_weight: dict[int, defaultdict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    groups = [(group, by_weight[weight]) for group, weight in _GROUP_WEIGHTS]
    body = [by_weight[weight] for weight in range(search_shards.BODY_TOP + 1)]
    for key, terms in keyed:  # in key order: every list comes out sorted
        for group, posted in groups:
            for term in getattr(terms, group, ()):
                posted[term].append(key)
        for term, weight in zip(terms.body, _body_weights(terms), strict=True):
            body[weight][term].append(key)
    merged: dict[str, list[Group]] = {}
    for weight in sorted(by_weight, reverse=True):
        for term, keys in by_weight[weight].items():
            keys.insert(0, weight)  # the list made a group in place, not copied into one
            merged.setdefault(term, []).append(keys)
    return merged


def _body_weights(terms: Any) -> bytes:
    """Each body term's weight: as rendered with the entry, or worked out (terms made by
    hand, as tests do)."""
    weights: bytes = getattr(terms, "body_weights", b"")
    if len(weights) == len(terms.body):
        return weights
    return search_shards.body_weights(terms.body_counts, sum(terms.body_counts))


def _entry_postings(terms: Any) -> dict[str, int]:
    """An entry's terms and their weights (its groups share no term)."""
    found = {term: weight for group, weight in _GROUP_WEIGHTS for term in getattr(terms, group, ())}
    found.update(zip(terms.body, _body_weights(terms), strict=True))
    return found


def _entry_file(held: list[tuple[str, EntryRender]]) -> bytes:
    found = {}
    for key, entry in sorted(held, key=lambda pair: pair[0]):
        indexed = json.loads(entry.index_entry)
        found[key] = {
            "id": indexed["id"],
            "title": indexed["title"],
            "url": indexed["canonical_url"],
            "api_url": indexed["api_url"],
            "description": indexed["description"],
        }
    return compact_json({"entries": found}) + b"\n"


# --- from the last build -------------------------------------------------------------


def _from_last(
    last: ShardState,
    keys: list[str],
    identities: list[str],
    entries: tuple[EntryRender, ...],
    store: _Store,
) -> tuple[Laid, dict[str, str]]:
    """The index laid out from the last build's: the changed entries' terms posted again."""
    now = dict(zip(keys, identities, strict=True))
    by_key = dict(zip(keys, entries, strict=True))
    before = last.identities
    touched = [key for key, identity in now.items() if before.get(key) != identity]
    touched += [key for key in before if key not in now]
    moves: dict[str, list[tuple[str, int | None, int | None]]] = defaultdict(list)
    for key in touched:
        old = _entry_postings(_old_terms(store, before[key])) if key in before else {}
        new = _entry_postings(by_key[key].terms) if key in now else {}
        for term in old.keys() | new.keys():
            if old.get(term) != new.get(term):
                moves[term].append((key, old.get(term), new.get(term)))
    layout = last.layout
    sha_of = {chunk.name: chunk.sha256 for chunk in layout.chunks}
    head_of = {term: chunk.name for chunk in layout.heads for term in chunk.items}

    def old_shard(name: str) -> dict[str, Any]:
        return store.parsed(sha_of[name])

    changes = {}
    for term, moved in moves.items():
        old_groups = _old_groups(term, head_of, old_shard)
        changes[term] = Change(old_groups, _moved(old_groups, moved))
    count = len(layout.terms) + sum(bool(c.new) - bool(c.old) for c in changes.values())
    if spread_for(count) != layout.spread:
        raise _Whole  # the term map would list too many shards: every boundary moves
    laid = lay_out(layout, changes, old_shard)
    store.made.update(laid.bodies)
    entry_files = dict(last.entry_files)
    prefix = last.prefix_length
    dirty = {key[:prefix] for key in touched}
    held: dict[str, list[tuple[str, EntryRender]]] = {name: [] for name in dirty}
    for key, entry in by_key.items():
        if key[:prefix] in held:
            held[key[:prefix]].append((key, entry))
    for name, found in held.items():
        if found:
            entry_files[name] = store.add(_entry_file(found))
        else:
            entry_files.pop(name, None)
    return laid, entry_files


def _old_terms(store: _Store, identity: str) -> Any:
    terms = store.cache.get(_TERMS + identity, "terms")
    if type(terms) is not tuple:
        raise LookupError("the build cache does not keep an entry's last terms")
    return EntryTerms._make(terms)


def _old_groups(term: str, head_of: dict[str, str], old_shard: Any) -> list[Group]:
    """A term's postings as the last build published them (none when it had none)."""
    if term not in head_of:
        return []
    entry = old_shard(head_of[term])["terms"][term]
    groups: list[Group] = [list(group) for group in entry["postings"]]
    for _, name, _ in entry.get("more", ()):
        groups += old_shard(name)["terms"][term]["postings"]
    merged: list[Group] = []
    for group in groups:  # the head's last weight goes on in the first tail
        if merged and merged[-1][0] == group[0]:
            merged[-1].extend(group[1:])
        else:
            merged.append(list(group))
    return merged


def _moved(groups: list[Group], moved: list[tuple[str, int | None, int | None]]) -> list[Group]:
    """The groups with each key moved from its old weight (None: none) to its new."""
    by_weight = {group[0]: group[1:] for group in groups}
    for key, old, new in moved:
        if old is not None:
            by_weight[old].remove(key)
        if new is not None:
            insort(by_weight.setdefault(new, []), key)
    return [
        [weight, *by_weight[weight]]
        for weight in sorted(by_weight, reverse=True)
        if by_weight[weight]
    ]
